import type { GalleryItem, GalleryKind } from '../../commands/users/events';
import type { VideoRecord } from '../../commands/videos/events';
import { blobUrl } from '../storage/types';

/** The interface document's FileBase. `url` and `thumb` are paths the app serves (relative to base_url). */
export interface FileBase {
  id: string;
  title: string;
  description: string;
  contentType: string;
  originFilename: string;
  url: string;
  /** The preview image, or '' when none was uploaded. */
  thumb: string;
  filesize: number;
  status: string;
}

export const toFileBase = (v: VideoRecord): FileBase => ({
  id: v.videoId,
  title: v.title,
  description: v.description,
  contentType: v.contentType,
  originFilename: v.originFilename,
  url: blobUrl(v.key),
  thumb: v.previewKey ? blobUrl(v.previewKey) : '',
  filesize: v.filesize,
  status: v.status,
});

/** A profile image or certificate as FileBase (the public coach profile's `images` and `certificates`). */
export const galleryFileBase = (i: GalleryItem): FileBase => ({
  id: i.mediaId,
  title: i.title,
  description: i.description,
  contentType: i.contentType,
  originFilename: i.originFilename,
  url: blobUrl(i.key),
  thumb: i.previewKey ? blobUrl(i.previewKey) : '',
  filesize: i.filesize,
  status: 'approved',
});

/** The owner's list of profile images and certificates (added endpoint): FileBase plus kind and time. */
export type ProfileMediaOut = FileBase & { kind: GalleryKind; createdAt: string };

export const toProfileMediaOut = (i: GalleryItem): ProfileMediaOut => ({
  ...galleryFileBase(i),
  kind: i.kind,
  createdAt: i.addedAt,
});
