import { left, right } from 'fp-ts/Either';
import { assertNever, type Decider, type DomainError } from '../../src/decider';
import type { VideoEvent, VideoRecord } from './events';

/** The user's videos in the user's order. */
export interface VideoLibrary {
  videos: VideoRecord[];
}

/** What a replace may change; the fields not given keep their value. */
export interface VideoChanges {
  title?: string;
  description?: string;
  file?: Pick<VideoRecord, 'contentType' | 'originFilename' | 'key' | 'filesize'>;
  previewKey?: string;
}

export type VideoCommand =
  | {
      type: 'UploadVideo';
      userId: string;
      video: Omit<VideoRecord, 'status'>;
      now: string;
    }
  | { type: 'ReplaceVideo'; userId: string; videoId: string; changes: VideoChanges; now: string }
  | { type: 'DeleteVideo'; userId: string; videoId: string; now: string }
  | { type: 'ReorderVideos'; userId: string; order: string[]; now: string };

/** A user keeps at most this many videos. */
export const MAX_VIDEOS = 50;

const notFound = (videoId: string): DomainError => ({
  code: 'video_not_found',
  message: `you have no video ${videoId}`,
});

/** Why `order` is not a permutation of `ids`, or null when it is. */
export function permutationProblem(ids: string[], order: string[]): string | null {
  const known = new Set(ids);
  const seen = new Set<string>();
  const duplicated = new Set<string>();
  for (const id of order) (seen.has(id) ? duplicated : seen).add(id);
  const unknown = [...seen].filter((id) => !known.has(id));
  const missing = ids.filter((id) => !seen.has(id));
  if (!unknown.length && !missing.length && !duplicated.size) return null;
  const parts = [
    missing.length ? `missing: ${missing.join(', ')}` : '',
    unknown.length ? `unknown: ${unknown.join(', ')}` : '',
    duplicated.size ? `duplicated: ${[...duplicated].join(', ')}` : '',
  ].filter(Boolean);
  return `order must list each of your ${ids.length} videos exactly once (${parts.join('; ')})`;
}

export const videoLibrary: Decider<VideoCommand, VideoEvent, VideoLibrary> = {
  initialState: () => ({ videos: [] }),

  evolve(state, event) {
    switch (event.type) {
      case 'VideoUploaded': {
        const { userId: _u, at: _a, ...video } = event.data;
        return { videos: [...state.videos, video] };
      }
      case 'VideoReplaced': {
        const { userId: _u, at: _a, replacedKeys: _r, ...video } = event.data;
        return { videos: state.videos.map((v) => (v.videoId === video.videoId ? video : v)) };
      }
      case 'VideoDeleted':
        return { videos: state.videos.filter((v) => v.videoId !== event.data.videoId) };
      case 'VideosReordered': {
        const byId = new Map(state.videos.map((v) => [v.videoId, v]));
        return { videos: event.data.order.flatMap((id) => byId.get(id) ?? []) };
      }
      default:
        return assertNever(event);
    }
  },

  decide(command, state) {
    switch (command.type) {
      case 'UploadVideo': {
        const { video } = command;
        if (state.videos.some((v) => v.videoId === video.videoId))
          return left({ code: 'conflict', message: 'a video with this id already exists' });
        if (state.videos.length >= MAX_VIDEOS)
          return left({ code: 'video_limit_reached', message: `a user keeps at most ${MAX_VIDEOS} videos` });
        return right([
          {
            type: 'VideoUploaded',
            data: { ...video, status: 'approved', userId: command.userId, at: command.now },
          },
        ]);
      }
      case 'ReplaceVideo': {
        const current = state.videos.find((v) => v.videoId === command.videoId);
        if (!current) return left(notFound(command.videoId));
        const { file, previewKey, title, description } = command.changes;
        const next: VideoRecord = {
          ...current,
          ...(title !== undefined ? { title } : {}),
          ...(description !== undefined ? { description } : {}),
          ...(file ?? {}),
          ...(previewKey !== undefined ? { previewKey } : {}),
        };
        const replacedKeys = [current.key, current.previewKey].filter(
          (k): k is string => k !== null && k !== next.key && k !== next.previewKey,
        );
        if (JSON.stringify(next) === JSON.stringify(current)) return right([]);
        return right([
          {
            type: 'VideoReplaced',
            data: { ...next, userId: command.userId, replacedKeys, at: command.now },
          },
        ]);
      }
      case 'DeleteVideo': {
        const current = state.videos.find((v) => v.videoId === command.videoId);
        if (!current) return left(notFound(command.videoId));
        return right([
          {
            type: 'VideoDeleted',
            data: {
              videoId: current.videoId,
              userId: command.userId,
              key: current.key,
              previewKey: current.previewKey,
              at: command.now,
            },
          },
        ]);
      }
      case 'ReorderVideos': {
        const ids = state.videos.map((v) => v.videoId);
        const problem = permutationProblem(ids, command.order);
        if (problem) return left({ code: 'validation', message: problem, locs: [['body', 'order']] });
        if (ids.every((id, i) => command.order[i] === id)) return right([]);
        return right([
          {
            type: 'VideosReordered',
            data: { userId: command.userId, order: command.order, at: command.now },
          },
        ]);
      }
      default:
        return assertNever(command);
    }
  },
};
