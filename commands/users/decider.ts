import { left, right } from 'fp-ts/Either';
import { assertNever, type Decider } from '../../src/decider';
import type { UserEvent, UserProfile } from './events';

export interface UserState {
  profile: UserProfile | null;
}

export type UserCommand = {
  type: 'UpsertUserProfile';
  userId: string;
  /** Only the fields the caller sent; the others keep their value (or their default on creation). */
  fields: Partial<UserProfile>;
  now: string;
};

/** A new profile must at least say who it is and how to reach them. */
export const REQUIRED_ON_CREATE = ['firstName', 'lastName', 'email', 'type'] as const;

export const DEFAULT_PROFILE: Omit<UserProfile, (typeof REQUIRED_ON_CREATE)[number]> = {
  username: '',
  phone: '',
  whatsapp: '',
  timezone: 'UTC',
  languages: [],
  gender: '',
  birthDate: null,
  description: '',
  experience: 0,
  avatarUrl: '',
  mediaType: '',
  mediaUrl: '',
  mediaPreviewUrl: '',
  verified: false,
  verifiedEmail: false,
  verifiedPhone: false,
  available: true,
  requiresParking: false,
};

const same = (a: unknown, b: unknown) => JSON.stringify(a) === JSON.stringify(b);

export const userProfile: Decider<UserCommand, UserEvent, UserState> = {
  initialState: () => ({ profile: null }),

  evolve(_state, event) {
    switch (event.type) {
      case 'UserProfileUpserted':
        return { profile: event.data.profile };
      default:
        return assertNever(event.type);
    }
  },

  decide(command, state) {
    switch (command.type) {
      case 'UpsertUserProfile': {
        const given = Object.fromEntries(
          Object.entries(command.fields).filter(([, v]) => v !== undefined),
        ) as Partial<UserProfile>;
        if (!state.profile) {
          const missing = REQUIRED_ON_CREATE.filter((k) => given[k] === undefined);
          if (missing.length)
            return left({ code: 'validation', message: `a new profile needs ${missing.join(', ')}` });
        }
        const before = state.profile;
        const profile = { ...DEFAULT_PROFILE, ...before, ...given } as UserProfile;
        const changed = (Object.keys(profile) as (keyof UserProfile)[]).filter(
          (k) => !before || !same(before[k], profile[k]),
        );
        // Sending the same profile again changes nothing and records nothing: upserts can be retried.
        if (before && changed.length === 0) return right([]);
        return right([
          {
            type: 'UserProfileUpserted',
            data: { userId: command.userId, profile, changed, created: !before, upsertedAt: command.now },
          },
        ]);
      }
      default:
        return assertNever(command.type);
    }
  },
};
