import { isLeft, isRight } from 'fp-ts/Either';
import { fold } from '../../src/decider';
import { DEFAULT_PROFILE, userProfile, type UserCommand } from '../../commands/users/decider';
import type { UserEvent, UserProfile } from '../../commands/users/events';
import { isCalendarDate, isIanaZone } from '../../commands/users/codecs';

const userId = '11111111-1111-4111-8111-111111111111';
const now = '2030-01-01T10:00:00.000Z';
const upsert = (fields: Partial<UserProfile>): UserCommand => ({
  type: 'UpsertUserProfile',
  userId,
  fields,
  now,
});
const given = (events: UserEvent[]) => fold(userProfile, events);
const basics = { firstName: 'Ana', lastName: 'Lima', email: 'ana@example.com', type: 'coach' as const };
const created: UserEvent = {
  type: 'UserProfileUpserted',
  data: {
    userId,
    profile: { ...DEFAULT_PROFILE, ...basics },
    changed: [],
    created: true,
    upsertedAt: now,
  },
};

const upserted = (e: UserEvent | undefined) => {
  if (e?.type !== 'UserProfileUpserted') throw new Error(`expected UserProfileUpserted, got ${e?.type}`);
  return e;
};

describe('user profile decider', () => {
  it('creates a profile with defaults for the fields not given', () => {
    const out = userProfile.decide(upsert({ ...basics, timezone: 'Europe/Lisbon' }), given([]));
    if (!isRight(out)) throw new Error('expected events');
    expect(out.right).toHaveLength(1);
    const e = upserted(out.right[0]);
    expect(e.data.created).toBe(true);
    expect(e.data.profile).toEqual({ ...DEFAULT_PROFILE, ...basics, timezone: 'Europe/Lisbon' });
  });

  it('refuses to create a profile without names, e-mail and type', () => {
    const out = userProfile.decide(upsert({ firstName: 'Ana' }), given([]));
    expect(isLeft(out) && out.left).toEqual({
      code: 'validation',
      message: 'a new profile needs lastName, email, type',
      locs: [
        ['body', 'lastName'],
        ['body', 'email'],
        ['body', 'type'],
      ],
      type: 'missing',
    });
  });

  it('changes only the fields sent and names them', () => {
    const out = userProfile.decide(upsert({ phone: '+351 910 000 000', firstName: 'Ana' }), given([created]));
    if (!isRight(out)) throw new Error('expected events');
    const e = upserted(out.right[0]);
    expect(e.data.changed).toEqual(['phone']);
    expect(e.data.created).toBe(false);
    expect(e.data.profile.email).toBe('ana@example.com');
  });

  it('records nothing when the same values are sent again', () => {
    const out = userProfile.decide(upsert({ ...basics }), given([created]));
    expect(isRight(out) && out.right).toEqual([]);
  });

  it('evolves to the latest profile', () => {
    const later: UserEvent = {
      ...created,
      data: { ...created.data, profile: { ...created.data.profile, type: 'client' } },
    };
    expect(given([created, later]).profile?.type).toBe('client');
  });

  it('refuses a birthDate later than today anywhere on Earth (UTC+14), kept when it is sent unchanged', () => {
    // now is 2030-01-01T10:00Z: already 2030-01-02 from 10:00Z in UTC+14 (Kiribati).
    for (const birthDate of ['2030-01-03', '2031-06-01', '2200-01-01']) {
      const out = userProfile.decide(upsert({ ...basics, birthDate }), given([]));
      expect(isLeft(out) && out.left).toEqual({
        code: 'validation',
        message: expect.stringMatching(/birthDate/),
        locs: [['body', 'birthDate']],
      });
    }
    for (const birthDate of ['2030-01-02', '2030-01-01', '1990-05-01', '1900-01-01', null])
      expect(isRight(userProfile.decide(upsert({ ...basics, birthDate }), given([])))).toBe(true);
    // A profile stored before the rule can still be sent again as it is.
    const stored: UserEvent = {
      ...created,
      data: { ...created.data, profile: { ...created.data.profile, birthDate: '2040-01-01' } },
    };
    expect(
      isRight(userProfile.decide(upsert({ birthDate: '2040-01-01', phone: '123456' }), given([stored]))),
    ).toBe(true);
  });

  it('opens a calendar feed each time it is asked, and closes an open one once', () => {
    const issue = (tokenSha256: string): UserCommand => ({
      type: 'IssueCalendarFeed',
      userId,
      tokenSha256,
      now,
    });
    const revoke: UserCommand = { type: 'RevokeCalendarFeed', userId, now };
    const issued = (tokenSha256: string): UserEvent => ({
      type: 'CalendarFeedIssued',
      data: { userId, tokenSha256, issuedAt: now },
    });
    // Given no profile yet, when a feed is asked for, then it is opened (a user's sessions need no profile).
    expect(userProfile.decide(issue('a'.repeat(64)), given([]))).toEqual({
      _tag: 'Right',
      right: [issued('a'.repeat(64))],
    });
    // Given an open feed, when asked again, then a new one replaces it.
    expect(userProfile.decide(issue('b'.repeat(64)), given([created, issued('a'.repeat(64))]))).toEqual({
      _tag: 'Right',
      right: [issued('b'.repeat(64))],
    });
    expect(given([issued('a'.repeat(64)), issued('b'.repeat(64))]).calendarFeed).toBe('b'.repeat(64));
    // Given an open feed, when closed, then it is recorded; closed again, nothing more is.
    const closed: UserEvent = { type: 'CalendarFeedRevoked', data: { userId, revokedAt: now } };
    expect(userProfile.decide(revoke, given([issued('a'.repeat(64))]))).toEqual({
      _tag: 'Right',
      right: [closed],
    });
    expect(userProfile.decide(revoke, given([issued('a'.repeat(64)), closed]))).toEqual({
      _tag: 'Right',
      right: [],
    });
    expect(userProfile.decide(revoke, given([]))).toEqual({ _tag: 'Right', right: [] });
  });

  it('knows IANA zones and calendar dates', () => {
    expect(isIanaZone('America/Sao_Paulo')).toBe(true);
    expect(isIanaZone('Mars/Olympus')).toBe(false);
    expect(isCalendarDate('2000-02-29')).toBe(true);
    expect(isCalendarDate('2001-02-29')).toBe(false);
  });
});
