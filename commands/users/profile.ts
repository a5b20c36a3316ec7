import type { EventStore } from '../../src/eventstore/types';
import { profileStream, type UserProfile, type UserProfileUpserted } from './events';

/** A user's current profile, from the write side (the users read model may lag or have stopped). */
export async function loadProfile(store: EventStore, userId: string): Promise<UserProfile | null> {
  const { events } = await store.readStream(profileStream(userId));
  const last = events.filter((e) => e.type === 'UserProfileUpserted').pop();
  return last ? (last.data as UserProfileUpserted['data']).profile : null;
}

/** Whether the user has a coach profile: the gate for a coach's own writes (services, schedule). */
export const hasCoachProfile = async (store: EventStore, userId: string) =>
  (await loadProfile(store, userId))?.type === 'coach';
