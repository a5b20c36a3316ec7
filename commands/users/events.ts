import type { DomainEvent } from '../../src/decider';

export type UserType = 'client' | 'coach';

/** A user's profile as the write side keeps it: the editable fields of User / UserProfileOut. */
export interface UserProfile {
  username: string;
  firstName: string;
  lastName: string;
  email: string;
  phone: string;
  whatsapp: string;
  /** IANA zone name; coaches' schedules are read in it. */
  timezone: string;
  languages: string[];
  gender: string;
  /** YYYY-MM-DD, or null while unknown. */
  birthDate: string | null;
  description: string;
  type: UserType;
  experience: number;
  avatarUrl: string;
  mediaType: string;
  mediaUrl: string;
  mediaPreviewUrl: string;
  verified: boolean;
  verifiedEmail: boolean;
  verifiedPhone: boolean;
  available: boolean;
  requiresParking: boolean;
}

/**
 * The profile was created or changed. It carries the whole profile after the change (so a read model
 * never needs the history) and the names of the fields that changed (so an auditor sees what moved).
 */
export type UserProfileUpserted = DomainEvent<
  'UserProfileUpserted',
  {
    userId: string;
    profile: UserProfile;
    changed: (keyof UserProfile)[];
    created: boolean;
    upsertedAt: string;
  }
>;

/**
 * The user uploaded profile media (endpoint 14): blob keys, the URLs the app serves them at, and the keys
 * of the previous upload that are now unreferenced (`replacedKeys`, deleted after the event is stored).
 */
export type ProfileMediaChanged = DomainEvent<
  'ProfileMediaChanged',
  {
    userId: string;
    /** `image` or `video`. */
    mediaType: string;
    mediaKey: string;
    previewKey: string | null;
    mediaUrl: string;
    mediaPreviewUrl: string;
    replacedKeys: string[];
    at: string;
  }
>;

/** What a profile image or certificate is (endpoint 14 with `kind` `image` or `certificate`). */
export type GalleryKind = 'image' | 'certificate';

/** One picture or certificate shown on the user's profile (the public coach profile's images/certificates). */
export interface GalleryItem {
  mediaId: string;
  kind: GalleryKind;
  key: string;
  previewKey: string | null;
  title: string;
  description: string;
  contentType: string;
  originFilename: string;
  filesize: number;
  addedAt: string;
}

/** The user added a picture or a certificate to the profile (kept beside the single profile media). */
export type ProfileMediaAdded = DomainEvent<'ProfileMediaAdded', { userId: string; item: GalleryItem }>;

/** The user removed one; `removedKeys` are its blobs, deleted after the event is stored. */
export type ProfileMediaRemoved = DomainEvent<
  'ProfileMediaRemoved',
  { userId: string; mediaId: string; kind: GalleryKind; removedKeys: string[]; at: string }
>;

/**
 * The user asked for a calendar feed (a private `.ics` address for a calendar app): its token's SHA-256,
 * never the token (the log is read by auditors; the token alone opens the feed). A new one replaces the last.
 */
export type CalendarFeedIssued = DomainEvent<
  'CalendarFeedIssued',
  { userId: string; tokenSha256: string; issuedAt: string }
>;

/** The user closed the calendar feed: its address answers 404 from now on. */
export type CalendarFeedRevoked = DomainEvent<'CalendarFeedRevoked', { userId: string; revokedAt: string }>;

export type UserEvent =
  | UserProfileUpserted
  | ProfileMediaChanged
  | ProfileMediaAdded
  | ProfileMediaRemoved
  | CalendarFeedIssued
  | CalendarFeedRevoked;

export const profileStream = (userId: string) => `profile-${userId}`;
