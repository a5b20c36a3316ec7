import type { DomainEvent } from '../../src/decider';
import type { EventStore } from '../../src/eventstore/types';
import { readState } from '../../src/commandHandler';
import { profileStream, type UserProfile, type UserProfileUpserted } from './events';

/** The profile as last upserted (the stream also holds the gallery's events, which it passes over). */
const lastProfile = {
  initialState: (): UserProfile | null => null,
  evolve: (profile: UserProfile | null, e: DomainEvent): UserProfile | null =>
    e.type === 'UserProfileUpserted' ? (e.data as UserProfileUpserted['data']).profile : profile,
};

/** A user's current profile, from the write side (the users read model may lag or have stopped). */
export async function loadProfile(store: EventStore, userId: string): Promise<UserProfile | null> {
  return readState(store, profileStream(userId), lastProfile);
}

/** Whether the user has a coach profile: the gate for a coach's own writes (services, schedule). */
export const hasCoachProfile = async (store: EventStore, userId: string) =>
  (await loadProfile(store, userId))?.type === 'coach';
