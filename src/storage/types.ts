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
  /**
   * The blob's bytes and info, or null when there is no such blob. `rangeOf`, given the blob's size, may
   * pick one byte range to stream instead of all of it (an HTTP Range request).
   */
  get(
    key: string,
    rangeOf?: (size: number) => ByteRange | null,
  ): Promise<(BlobInfo & { stream: Readable; range: ByteRange | null }) | null>;
  /** Removes the blob; removing a blob that is not there is not an error. */
  delete(key: string): Promise<void>;
  url(key: string): string;
}

/** The blob store did not answer, or answered that it cannot serve now: 503, retry shortly. */
export class BlobStoreUnavailableError extends Error {
  constructor(override readonly cause: unknown) {
    super(`the file storage is not answering (${String((cause as Error)?.message ?? cause)})`);
    this.name = 'BlobStoreUnavailableError';
  }
}

/** Bytes `start` to `end`, both included. */
export interface ByteRange {
  start: number;
  end: number;
}

/**
 * What a `Range` header asks of a blob of `size` bytes: one range (`bytes=a-b`, `a-`, `-n`), `unsatisfiable`
 * (416: it starts at or past the end), or `whole` (no header, or one this server answers with the whole file:
 * another unit, several ranges, a malformed one; RFC 9110 lets a server ignore those).
 */
export function byteRange(header: string | undefined, size: number): ByteRange | 'unsatisfiable' | 'whole' {
  const m = header ? /^bytes=(\d*)-(\d*)$/.exec(header.trim()) : null;
  if (!m || (m[1] === '' && m[2] === '')) return 'whole';
  if (m[1] === '') {
    const suffix = Number(m[2]);
    if (suffix === 0) return 'unsatisfiable';
    return { start: Math.max(0, size - suffix), end: size - 1 };
  }
  const start = Number(m[1]);
  const end = m[2] === '' ? size - 1 : Math.min(Number(m[2]), size - 1);
  if (m[2] !== '' && Number(m[2]) < start) return 'whole';
  if (start >= size) return 'unsatisfiable';
  return { start, end };
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
