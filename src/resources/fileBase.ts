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
