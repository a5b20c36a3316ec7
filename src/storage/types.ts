import type { Readable } from 'node:stream';

/** What a stored blob is, as the store knows it. */
export interface BlobInfo {
  contentType: string;
  size: number;
}

/**
 * Blob storage port: opaque keys to bytes. Keys are flat (no `/`), made by the service (see `newBlobKey`).
 * `url(key)` is the path the app serves the blob at (`GET /api/v1/storage/files/{key}`), for every adapter.
 */
export interface BlobStore {
  readonly kind: 'filesystem' | 's3';
  /** `size`, when the caller knows it, lets the S3 adapter stream without spooling to a temporary file. */
  put(key: string, body: Readable | Buffer, contentType: string, size?: number): Promise<BlobInfo>;
  /** The blob's bytes and info, or null when there is no such blob. */
  get(key: string): Promise<(BlobInfo & { stream: Readable }) | null>;
  /** Removes the blob; removing a blob that is not there is not an error. */
  delete(key: string): Promise<void>;
  url(key: string): string;
}

export const FILES_PATH = '/api/v1/storage/files';

const KEY_RE = /^[A-Za-z0-9][A-Za-z0-9._-]{0,199}$/;
/** A key the service could have made: letters, digits, `.`, `_`, `-`; no path separators, no `..`. */
export const isBlobKey = (key: string): boolean => KEY_RE.test(key) && !key.includes('..');

export function assertBlobKey(key: string): void {
  if (!isBlobKey(key)) throw new Error(`invalid blob key: ${JSON.stringify(key)}`);
}

export const blobUrl = (key: string): string => `${FILES_PATH}/${encodeURIComponent(key)}`;

/** The key a served URL names, or null when the URL is not one of ours. */
export function keyOfUrl(url: string): string | null {
  if (!url.startsWith(`${FILES_PATH}/`)) return null;
  const key = decodeURIComponent(url.slice(FILES_PATH.length + 1));
  return isBlobKey(key) ? key : null;
}

/** `<prefix>_<id>.<ext>`, the extension taken (sanitised) from the original filename when it has one. */
export function newBlobKey(prefix: string, id: string, originalName = ''): string {
  const ext = /\.([A-Za-z0-9]{1,10})$/.exec(originalName)?.[1]?.toLowerCase();
  return `${prefix}_${id}${ext ? `.${ext}` : ''}`;
}
