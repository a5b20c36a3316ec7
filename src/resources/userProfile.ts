import type { UserState } from '../../commands/users/decider';
import { DEFAULT_PROFILE } from '../../commands/users/decider';
import type { UserProfile } from '../../commands/users/events';

/** The interface document's UserProfileOut (answer of endpoint 14). */
export interface UserProfileOut {
  id: string;
  gender: string;
  birthDate: string | null;
  timezone: string;
  firstName: string;
  lastName: string;
  description: string;
  languages: string[];
  experience: number;
  requiresParking: boolean;
  type: string;
  username: string;
  phone: string;
  email: string;
  verifiedPhone: boolean;
  verifiedEmail: boolean;
  available: boolean;
  verified: boolean;
  avatarUrl: string;
  mediaType: string;
  mediaUrl: string;
  mediaPreviewUrl: string;
  sessionCount: number;
  totalPayment: number;
  totalPaymentCurrency: string;
  profileCompletion: number;
}

/** The fields that count towards `profileCompletion`, each worth the same. */
export const COMPLETION_FIELDS: ((p: UserProfile) => boolean)[] = [
  (p) => p.firstName !== '',
  (p) => p.lastName !== '',
  (p) => p.username !== '',
  (p) => p.email !== '',
  (p) => p.phone !== '',
  (p) => p.gender !== '',
  (p) => p.birthDate !== null,
  (p) => p.description !== '',
  (p) => p.languages.length > 0,
  (p) => p.avatarUrl !== '',
  (p) => p.mediaUrl !== '',
];

/** Whole percent (0 to 100) of COMPLETION_FIELDS that are filled in. */
export const profileCompletion = (p: UserProfile): number =>
  Math.round((100 * COMPLETION_FIELDS.filter((f) => f(p)).length) / COMPLETION_FIELDS.length);

/** The figures of UserProfileOut that come from read models (completed sessions, payments). */
export interface UserTotals {
  sessionCount: number;
  totalPayment: number;
  totalPaymentCurrency: string;
}

/**
 * UserProfileOut from the write model. A user with no profile yet is a `guest` with empty defaults and
 * the media just uploaded. Session count and payment total come from read models (`totals`).
 */
export function toUserProfileOut(id: string, state: UserState, totals: UserTotals): UserProfileOut {
  const media = state.media
    ? {
        mediaType: state.media.mediaType,
        mediaUrl: state.media.mediaUrl,
        mediaPreviewUrl: state.media.mediaPreviewUrl,
      }
    : {};
  const p: UserProfile = state.profile ?? {
    ...DEFAULT_PROFILE,
    ...media,
    firstName: '',
    lastName: '',
    email: '',
    type: 'client',
  };
  return {
    id,
    gender: p.gender,
    birthDate: p.birthDate,
    timezone: p.timezone,
    firstName: p.firstName,
    lastName: p.lastName,
    description: p.description,
    languages: p.languages,
    experience: p.experience,
    requiresParking: p.requiresParking,
    type: state.profile ? p.type : 'guest',
    username: p.username,
    phone: p.phone,
    email: p.email,
    verifiedPhone: p.verifiedPhone,
    verifiedEmail: p.verifiedEmail,
    available: p.available,
    verified: p.verified,
    avatarUrl: p.avatarUrl,
    mediaType: p.mediaType,
    mediaUrl: p.mediaUrl,
    mediaPreviewUrl: p.mediaPreviewUrl,
    sessionCount: totals.sessionCount,
    totalPayment: totals.totalPayment,
    totalPaymentCurrency: totals.totalPaymentCurrency,
    profileCompletion: profileCompletion(p),
  };
}
