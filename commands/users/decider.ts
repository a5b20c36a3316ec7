import { left, right } from 'fp-ts/Either';
import { assertNever, type Decider, type DomainError } from '../../src/decider';
import { isDeliverable } from '../../src/mail/compose';
import { blobUrl } from '../../src/storage/types';
import type { GalleryItem, ProfileMediaChanged, UserEvent, UserProfile } from './events';

/** Pictures and certificates a user keeps on the profile, each kind. */
export const GALLERY_LIMIT = 20;

export interface UserState {
  profile: UserProfile | null;
  /** The last profile media upload (kept apart too, as a profile may not exist yet when it happens). */
  media?: Omit<ProfileMediaChanged['data'], 'userId' | 'replacedKeys' | 'at'>;
  /** Pictures and certificates, in upload order. */
  gallery: GalleryItem[];
  /** The SHA-256 of the calendar feed's token while the user has one open. */
  calendarFeed?: string | null;
}

export type UserCommand =
  | {
      type: 'UpsertUserProfile';
      userId: string;
      /** Only the fields the caller sent; the others keep their value (or their default on creation). */
      fields: Partial<UserProfile>;
      now: string;
    }
  | {
      type: 'SetProfileMedia';
      userId: string;
      mediaType: 'image' | 'video';
      mediaKey: string;
      previewKey: string | null;
      now: string;
    }
  | { type: 'AddProfileMedia'; userId: string; item: GalleryItem }
  | { type: 'RemoveProfileMedia'; userId: string; mediaId: string; now: string }
  /** `tokenSha256`: the hash of a token the caller drew (randomness is the route's, as ids are). */
  | { type: 'IssueCalendarFeed'; userId: string; tokenSha256: string; now: string }
  | { type: 'RevokeCalendarFeed'; userId: string; now: string };

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

/** The earliest zone there is (Kiribati, UTC+14): its date is the latest one anyone on Earth has now. */
const LATEST_ZONE_OFFSET_MS = 14 * 3600_000;

/**
 * A birth date is not in the future: at most today's date where the day started first (UTC+14), so someone
 * born today in any zone can be entered. The earliest date (1900) is the codec's, as for every date.
 */
function birthDateRule(birthDate: string | null, now: string): DomainError | null {
  if (birthDate === null) return null;
  const latest = new Date(Date.parse(now) + LATEST_ZONE_OFFSET_MS).toISOString().slice(0, 10);
  return birthDate <= latest
    ? null
    : {
        code: 'validation',
        message: `birthDate ${birthDate} is in the future`,
        locs: [['body', 'birthDate']],
      };
}

/**
 * An address a mail server takes and reads as shown (`isDeliverable`; the codec has checked it is one
 * mailbox). An address stored before this rule can be sent again unchanged.
 */
function emailRule(email: string | undefined, before: string | undefined): DomainError | null {
  if (email === undefined || email === before) return null;
  return isDeliverable(email)
    ? null
    : {
        code: 'validation',
        message: 'Input should be a valid e-mail address',
        locs: [['body', 'email']],
        type: 'invalid_email',
      };
}

export const userProfile: Decider<UserCommand, UserEvent, UserState> = {
  initialState: () => ({ profile: null, gallery: [] }),

  evolve(state, event) {
    switch (event.type) {
      case 'UserProfileUpserted':
        return { ...state, profile: event.data.profile };
      case 'ProfileMediaChanged': {
        const { userId: _u, replacedKeys: _r, at: _a, ...media } = event.data;
        const { mediaType, mediaUrl, mediaPreviewUrl } = media;
        return {
          ...state,
          media,
          profile: state.profile && { ...state.profile, mediaType, mediaUrl, mediaPreviewUrl },
        };
      }
      case 'ProfileMediaAdded':
        return { ...state, gallery: [...state.gallery, event.data.item] };
      case 'ProfileMediaRemoved':
        return { ...state, gallery: state.gallery.filter((i) => i.mediaId !== event.data.mediaId) };
      case 'CalendarFeedIssued':
        return { ...state, calendarFeed: event.data.tokenSha256 };
      case 'CalendarFeedRevoked':
        return { ...state, calendarFeed: null };
      default:
        return assertNever(event);
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
            return left({
              code: 'validation',
              message: `a new profile needs ${missing.join(', ')}`,
              locs: missing.map((k) => ['body', k]),
              type: 'missing',
            });
        }
        const before = state.profile;
        const bornErr =
          given.birthDate === undefined || given.birthDate === before?.birthDate
            ? null
            : birthDateRule(given.birthDate, command.now);
        if (bornErr) return left(bornErr);
        const mailErr = emailRule(given.email, before?.email);
        if (mailErr) return left(mailErr);
        // Media uploaded before the profile existed becomes part of it on creation.
        const media = !before && state.media ? mediaFields(state.media) : {};
        const profile = { ...DEFAULT_PROFILE, ...media, ...before, ...given } as UserProfile;
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
      case 'SetProfileMedia': {
        const old = state.media;
        const keep = new Set([command.mediaKey, command.previewKey]);
        const replacedKeys = old
          ? [old.mediaKey, old.previewKey].filter((k): k is string => !!k && !keep.has(k))
          : [];
        return right([
          {
            type: 'ProfileMediaChanged',
            data: {
              userId: command.userId,
              mediaType: command.mediaType,
              mediaKey: command.mediaKey,
              previewKey: command.previewKey,
              mediaUrl: blobUrl(command.mediaKey),
              mediaPreviewUrl: command.previewKey ? blobUrl(command.previewKey) : '',
              replacedKeys,
              at: command.now,
            },
          },
        ]);
      }
      case 'AddProfileMedia': {
        const { item } = command;
        if (state.gallery.filter((i) => i.kind === item.kind).length >= GALLERY_LIMIT)
          return left({
            code: 'media_limit_reached',
            message: `a profile keeps at most ${GALLERY_LIMIT} items of kind ${item.kind}`,
          });
        return right([{ type: 'ProfileMediaAdded', data: { userId: command.userId, item } }]);
      }
      case 'RemoveProfileMedia': {
        const item = state.gallery.find((i) => i.mediaId === command.mediaId);
        if (!item) return left({ code: 'media_not_found', message: 'no such image or certificate of yours' });
        return right([
          {
            type: 'ProfileMediaRemoved',
            data: {
              userId: command.userId,
              mediaId: item.mediaId,
              kind: item.kind,
              removedKeys: [item.key, ...(item.previewKey ? [item.previewKey] : [])],
              at: command.now,
            },
          },
        ]);
      }
      case 'IssueCalendarFeed':
        // Always a new token: asking again is how a user shuts out whoever saw the old address.
        return right([
          {
            type: 'CalendarFeedIssued',
            data: { userId: command.userId, tokenSha256: command.tokenSha256, issuedAt: command.now },
          },
        ]);
      case 'RevokeCalendarFeed':
        // Closing a feed that is not open records nothing: the request can be repeated.
        return right(
          state.calendarFeed
            ? [{ type: 'CalendarFeedRevoked', data: { userId: command.userId, revokedAt: command.now } }]
            : [],
        );
      default:
        return assertNever(command);
    }
  },
};

const mediaFields = (m: NonNullable<UserState['media']>) => ({
  mediaType: m.mediaType,
  mediaUrl: m.mediaUrl,
  mediaPreviewUrl: m.mediaPreviewUrl,
});
