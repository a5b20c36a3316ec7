import { isLeft, isRight, type Either } from 'fp-ts/Either';
import { fold, type DomainError } from '../../src/decider';
import {
  MAX_VIDEOS,
  permutationProblem,
  videoLibrary,
  type VideoCommand,
} from '../../commands/videos/decider';
import type { VideoEvent, VideoRecord } from '../../commands/videos/events';

const user = '7d1f0c2e-3a4b-4c5d-8e9f-0a1b2c3d4e5f';
const now = '2026-11-22T10:00:00.000Z';
const record = (videoId: string): VideoRecord => ({
  videoId,
  title: `title ${videoId}`,
  description: '',
  contentType: 'video/mp4',
  originFilename: `${videoId}.mp4`,
  key: `video_${videoId}.mp4`,
  previewKey: `preview_${videoId}.png`,
  filesize: 1000,
  status: 'approved',
});
const uploaded = (videoId: string): VideoEvent => ({
  type: 'VideoUploaded',
  data: { ...record(videoId), userId: user, at: now },
});
const deleted = (videoId: string): VideoEvent => ({
  type: 'VideoDeleted',
  data: { videoId, userId: user, key: `video_${videoId}.mp4`, previewKey: `preview_${videoId}.png`, at: now },
});
const reordered = (order: string[]): VideoEvent => ({
  type: 'VideosReordered',
  data: { userId: user, order, at: now },
});

/** given past events, when a command, then new events or a refusal. */
const given = (events: VideoEvent[]) => ({
  when: (command: VideoCommand): Either<DomainError, VideoEvent[]> =>
    videoLibrary.decide(command, fold(videoLibrary, events)),
});
const thenEvents = (out: Either<DomainError, VideoEvent[]>) => {
  if (!isRight(out)) throw new Error(`refused: ${out.left.message}`);
  return out.right;
};
const thenError = (out: Either<DomainError, VideoEvent[]>) => {
  if (!isLeft(out)) throw new Error('expected a refusal');
  return out.left;
};
const order = (events: VideoEvent[]) => fold(videoLibrary, events).videos.map((v) => v.videoId);

describe('videos decider', () => {
  it('uploads an approved video at the end of the list', () => {
    const { status: _s, ...video } = record('c');
    const events = thenEvents(
      given([uploaded('a'), uploaded('b')]).when({ type: 'UploadVideo', userId: user, video, now }),
    );
    expect(events).toEqual([{ type: 'VideoUploaded', data: { ...record('c'), userId: user, at: now } }]);
    expect(order([uploaded('a'), uploaded('b'), ...events])).toEqual(['a', 'b', 'c']);
  });

  it(`refuses a video beyond ${MAX_VIDEOS} and a repeated id`, () => {
    const many = Array.from({ length: MAX_VIDEOS }, (_, i) => uploaded(`v${i}`));
    const { status: _s, ...video } = record('new');
    expect(thenError(given(many).when({ type: 'UploadVideo', userId: user, video, now })).code).toBe(
      'video_limit_reached',
    );
    const { status: _t, ...again } = record('v1');
    expect(
      thenError(given(many.slice(0, 3)).when({ type: 'UploadVideo', userId: user, video: again, now })).code,
    ).toBe('conflict');
  });

  describe('reorder', () => {
    const history = [uploaded('a'), uploaded('b'), uploaded('c')];

    it('records a permutation of the videos and the list follows it', () => {
      const events = thenEvents(
        given(history).when({ type: 'ReorderVideos', userId: user, order: ['c', 'a', 'b'], now }),
      );
      expect(events).toEqual([reordered(['c', 'a', 'b'])]);
      expect(order([...history, ...events])).toEqual(['c', 'a', 'b']);
    });

    it('records nothing when the order is the current one', () => {
      expect(
        thenEvents(given(history).when({ type: 'ReorderVideos', userId: user, order: ['a', 'b', 'c'], now })),
      ).toEqual([]);
    });

    it.each([
      [['a', 'b'], /missing: c/],
      [['a', 'b', 'c', 'x'], /unknown: x/],
      [['a', 'b', 'b', 'c'], /duplicated: b/],
      [['a', 'a', 'x'], /missing: b, c; unknown: x; duplicated: a/],
    ])('refuses %j: not a permutation', (bad, message) => {
      const err = thenError(given(history).when({ type: 'ReorderVideos', userId: user, order: bad, now }));
      expect(err.code).toBe('validation');
      expect(err.message).toMatch(message);
    });

    it('checks against the videos as they are now: a deleted video may not be listed', () => {
      const err = thenError(
        given([...history, deleted('b')]).when({
          type: 'ReorderVideos',
          userId: user,
          order: ['c', 'b', 'a'],
          now,
        }),
      );
      expect(err.message).toMatch(/unknown: b/);
    });

    it('keeps the order across later uploads and deletes', () => {
      expect(order([...history, reordered(['c', 'b', 'a']), uploaded('d'), deleted('b')])).toEqual([
        'c',
        'a',
        'd',
      ]);
    });

    it('an empty list reorders to an empty list', () => {
      expect(thenEvents(given([]).when({ type: 'ReorderVideos', userId: user, order: [], now }))).toEqual([]);
      expect(permutationProblem([], ['x'])).toMatch(/unknown: x/);
    });
  });

  describe('delete', () => {
    it('deletes a video and names its blobs', () => {
      expect(
        thenEvents(given([uploaded('a')]).when({ type: 'DeleteVideo', userId: user, videoId: 'a', now })),
      ).toEqual([deleted('a')]);
    });

    it('refuses an unknown or already deleted video with video_not_found', () => {
      expect(
        thenError(given([uploaded('a')]).when({ type: 'DeleteVideo', userId: user, videoId: 'zz', now }))
          .code,
      ).toBe('video_not_found');
      expect(
        thenError(
          given([uploaded('a'), deleted('a')]).when({ type: 'DeleteVideo', userId: user, videoId: 'a', now }),
        ).code,
      ).toBe('video_not_found');
    });
  });

  describe('replace', () => {
    it('replaces the file, keeps the preview and title, and names the replaced blob', () => {
      const file = {
        contentType: 'video/webm',
        originFilename: 'new.webm',
        key: 'video_new.webm',
        filesize: 42,
      };
      const events = thenEvents(
        given([uploaded('a')]).when({
          type: 'ReplaceVideo',
          userId: user,
          videoId: 'a',
          changes: { file },
          now,
        }),
      );
      expect(events).toEqual([
        {
          type: 'VideoReplaced',
          data: { ...record('a'), ...file, userId: user, replacedKeys: ['video_a.mp4'], at: now },
        },
      ]);
      expect(fold(videoLibrary, [uploaded('a'), ...events]).videos).toEqual([{ ...record('a'), ...file }]);
    });

    it('changes only the title when only the title is sent, and replaces no blob', () => {
      const events = thenEvents(
        given([uploaded('a')]).when({
          type: 'ReplaceVideo',
          userId: user,
          videoId: 'a',
          changes: { title: 'New' },
          now,
        }),
      );
      expect(events).toEqual([
        {
          type: 'VideoReplaced',
          data: { ...record('a'), title: 'New', userId: user, replacedKeys: [], at: now },
        },
      ]);
    });

    it('replaces the preview and names the old preview blob', () => {
      const events = thenEvents(
        given([uploaded('a')]).when({
          type: 'ReplaceVideo',
          userId: user,
          videoId: 'a',
          changes: { previewKey: 'preview_new.png' },
          now,
        }),
      );
      expect(events[0]?.data).toMatchObject({
        previewKey: 'preview_new.png',
        replacedKeys: ['preview_a.png'],
      });
    });

    it('records nothing when nothing changes', () => {
      expect(
        thenEvents(
          given([uploaded('a')]).when({ type: 'ReplaceVideo', userId: user, videoId: 'a', changes: {}, now }),
        ),
      ).toEqual([]);
    });

    it('refuses an unknown video with video_not_found', () => {
      expect(
        thenError(
          given([uploaded('a'), deleted('a')]).when({
            type: 'ReplaceVideo',
            userId: user,
            videoId: 'a',
            changes: { title: 'x' },
            now,
          }),
        ).code,
      ).toBe('video_not_found');
    });
  });
});
