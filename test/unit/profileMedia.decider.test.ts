import { isRight, left } from 'fp-ts/Either';
import { fold } from '../../src/decider';
import { DEFAULT_PROFILE, GALLERY_LIMIT, userProfile, type UserCommand } from '../../commands/users/decider';
import type { GalleryItem, UserEvent } from '../../commands/users/events';

const userId = '22222222-2222-4222-8222-222222222222';
const now = '2030-01-01T10:00:00.000Z';
const basics = { firstName: 'Rui', lastName: 'Sá', email: 'rui@example.com', type: 'coach' as const };
const setMedia = (
  mediaKey: string,
  previewKey: string | null,
  mediaType: 'image' | 'video' = 'video',
): UserCommand => ({
  type: 'SetProfileMedia',
  userId,
  mediaType,
  mediaKey,
  previewKey,
  now,
});
const decide = (events: UserEvent[], command: UserCommand) => {
  const out = userProfile.decide(command, fold(userProfile, events));
  if (!isRight(out)) throw new Error(`refused: ${out.left.message}`);
  return out.right;
};

describe('user profile decider: profile media (endpoint 14)', () => {
  it('records the media with the URLs the app serves, and nothing to delete the first time', () => {
    expect(decide([], setMedia('media_a.mp4', 'mpreview_a.png'))).toEqual([
      {
        type: 'ProfileMediaChanged',
        data: {
          userId,
          mediaType: 'video',
          mediaKey: 'media_a.mp4',
          previewKey: 'mpreview_a.png',
          mediaUrl: '/api/v1/storage/files/media_a.mp4',
          mediaPreviewUrl: '/api/v1/storage/files/mpreview_a.png',
          replacedKeys: [],
          at: now,
        },
      },
    ]);
  });

  it('names the previous upload blobs as replaced', () => {
    const first = decide([], setMedia('media_a.mp4', 'mpreview_a.png'));
    const second = decide(first, setMedia('media_b.png', null, 'image'));
    expect(second[0]?.data).toMatchObject({
      mediaType: 'image',
      mediaPreviewUrl: '',
      replacedKeys: ['media_a.mp4', 'mpreview_a.png'],
    });
  });

  it('updates an existing profile, and a later profile edit keeps the media', () => {
    const created = decide([], { type: 'UpsertUserProfile', userId, fields: basics, now });
    const media = decide(created, setMedia('media_a.mp4', null));
    const history = [...created, ...media];
    expect(fold(userProfile, history).profile).toMatchObject({
      mediaType: 'video',
      mediaUrl: '/api/v1/storage/files/media_a.mp4',
    });
    const edit = decide(history, {
      type: 'UpsertUserProfile',
      userId,
      fields: { phone: '+351 910 000 001' },
      now,
    });
    expect(edit[0]?.data).toMatchObject({
      profile: { mediaUrl: '/api/v1/storage/files/media_a.mp4', phone: '+351 910 000 001' },
    });
  });

  it('keeps media uploaded before the profile existed and puts it into the profile on creation', () => {
    const media = decide([], setMedia('media_a.mp4', 'mpreview_a.png'));
    expect(fold(userProfile, media).profile).toBeNull();
    const created = decide(media, { type: 'UpsertUserProfile', userId, fields: basics, now });
    expect(created[0]?.data).toMatchObject({
      profile: {
        ...DEFAULT_PROFILE,
        ...basics,
        mediaType: 'video',
        mediaUrl: '/api/v1/storage/files/media_a.mp4',
        mediaPreviewUrl: '/api/v1/storage/files/mpreview_a.png',
      },
    });
  });
});

describe('user profile decider: images and certificates (endpoint 14 with kind)', () => {
  const item = (mediaId: string, kind: 'image' | 'certificate' = 'image'): GalleryItem => ({
    mediaId,
    kind,
    key: `${kind}_${mediaId}.png`,
    previewKey: kind === 'image' ? `mpreview_${mediaId}.png` : null,
    title: 'Title',
    description: '',
    contentType: 'image/png',
    originFilename: 'x.png',
    filesize: 3,
    addedAt: now,
  });
  const add = (i: GalleryItem): UserCommand => ({ type: 'AddProfileMedia', userId, item: i });
  const added = (i: GalleryItem): UserEvent => ({ type: 'ProfileMediaAdded', data: { userId, item: i } });

  it('adds an item, also before the profile exists, leaving the profile media alone', () => {
    expect(decide([], add(item('a')))).toEqual([added(item('a'))]);
    const state = fold(userProfile, [added(item('a')), added(item('b', 'certificate'))]);
    expect(state.gallery.map((i) => [i.mediaId, i.kind])).toEqual([
      ['a', 'image'],
      ['b', 'certificate'],
    ]);
    expect(state.media).toBeUndefined();
  });

  it(`keeps at most ${GALLERY_LIMIT} items of each kind`, () => {
    const full = Array.from({ length: GALLERY_LIMIT }, (_, n) => added(item(`i${n}`)));
    const refused = userProfile.decide(add(item('one-more')), fold(userProfile, full));
    expect(refused).toEqual(left({ code: 'media_limit_reached', message: expect.any(String) }));
    // The other kind still has room.
    expect(decide(full, add(item('c', 'certificate')))).toEqual([added(item('c', 'certificate'))]);
  });

  it('removes an item with its blobs; an unknown id is media_not_found', () => {
    const given = [added(item('a')), added(item('b'))];
    const remove = (mediaId: string): UserCommand => ({ type: 'RemoveProfileMedia', userId, mediaId, now });
    expect(decide(given, remove('a'))).toEqual([
      {
        type: 'ProfileMediaRemoved',
        data: {
          userId,
          mediaId: 'a',
          kind: 'image',
          removedKeys: ['image_a.png', 'mpreview_a.png'],
          at: now,
        },
      },
    ]);
    const after = fold(userProfile, [...given, ...decide(given, remove('a'))]);
    expect(after.gallery.map((i) => i.mediaId)).toEqual(['b']);
    expect(userProfile.decide(remove('a'), after)).toEqual(
      left({ code: 'media_not_found', message: expect.any(String) }),
    );
  });
});
