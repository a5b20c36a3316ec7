import type { DomainEvent } from '../../src/decider';

/** A stored video as the write side keeps it (FileBase without the URLs, which are derived from keys). */
export interface VideoRecord {
  videoId: string;
  title: string;
  description: string;
  contentType: string;
  originFilename: string;
  /** Blob key of the video file. */
  key: string;
  /** Blob key of the preview image, or null when none was uploaded. */
  previewKey: string | null;
  filesize: number;
  status: 'approved';
}

export type VideoUploaded = DomainEvent<'VideoUploaded', VideoRecord & { userId: string; at: string }>;
/**
 * The video after a replace, whole, and the blob keys the replace made unreferenced (`replacedKeys`:
 * deleted by the route after the event is stored).
 */
export type VideoReplaced = DomainEvent<
  'VideoReplaced',
  VideoRecord & { userId: string; replacedKeys: string[]; at: string }
>;
/** The video is gone; `key` and `previewKey` name the blobs that are then deleted. */
export type VideoDeleted = DomainEvent<
  'VideoDeleted',
  { videoId: string; userId: string; key: string; previewKey: string | null; at: string }
>;
/** The user's whole list, in its new order (always a permutation of the user's videos). */
export type VideosReordered = DomainEvent<'VideosReordered', { userId: string; order: string[]; at: string }>;

export type VideoEvent = VideoUploaded | VideoReplaced | VideoDeleted | VideosReordered;

export const videoStream = (userId: string) => `videos-${userId}`;
