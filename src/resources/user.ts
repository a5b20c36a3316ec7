import { DEFAULT_PROFILE } from '../../commands/users/decider';
import type { UserProfile } from '../../commands/users/events';

/** The interface document's `User`. */
export interface UserOut {
  id: string;
  username: string;
  name: string;
  surname: string;
  firstName: string;
  lastName: string;
  fullName: string;
  email: string;
  phone: string;
  timezone: string;
  rating: number | null;
  mediaFilename: string;
  mediaPreviewFilename: string;
  mediaType: string;
  roleList: string;
  birthDate: string | null;
  gender: string;
  available: boolean;
  verified: boolean;
  type: string;
  languages: string;
  description: string;
  avatar: string;
  avatarUrl: string;
  mediaUrl: string;
  mediaPreviewUrl: string;
}

const fileName = (url: string) => (url ? (url.split('?')[0]!.split('/').pop() ?? '') : '');

/** User has no room for arrays: `languages` is comma-joined, `roleList` is the user type. */
export const toUserOut = (id: string, p: UserProfile, rating: number | null): UserOut => ({
  id,
  username: p.username,
  name: p.firstName,
  surname: p.lastName,
  firstName: p.firstName,
  lastName: p.lastName,
  fullName: `${p.firstName} ${p.lastName}`.trim(),
  email: p.email,
  phone: p.phone,
  timezone: p.timezone,
  rating,
  mediaFilename: fileName(p.mediaUrl),
  mediaPreviewFilename: fileName(p.mediaPreviewUrl),
  mediaType: p.mediaType,
  roleList: p.type,
  birthDate: p.birthDate,
  gender: p.gender,
  available: p.available,
  verified: p.verified,
  type: p.type,
  languages: p.languages.join(','),
  description: p.description,
  avatar: p.avatarUrl,
  avatarUrl: p.avatarUrl,
  mediaUrl: p.mediaUrl,
  mediaPreviewUrl: p.mediaPreviewUrl,
});

/**
 * The User of someone with no profile yet (a signed-in id the profile upsert never named, who may book all
 * the same): empty defaults, `type` and `roleList` `guest`, as UserProfileOut (14) shows such a user.
 */
export const guestUserOut = (id: string): UserOut => ({
  ...toUserOut(id, { ...DEFAULT_PROFILE, firstName: '', lastName: '', email: '', type: 'client' }, null),
  roleList: 'guest',
  type: 'guest',
});
