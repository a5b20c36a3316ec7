import fs from 'node:fs';
import fsp from 'node:fs/promises';
import http from 'node:http';
import https from 'node:https';
import os from 'node:os';
import path from 'node:path';
import { randomUUID } from 'node:crypto';
import { pipeline } from 'node:stream/promises';
import * as Minio from 'minio';
import type { Readable } from 'node:stream';
import { BlobStoreUnavailableError, assertBlobKey, blobUrl, type BlobStore, type ByteRange } from './types';

export interface S3Options {
  endpoint: string;
  accessKey: string;
  secretKey: string;
  bucket: string;
  /** Longest silence of S3 (connecting, or before it answers a request) before the request fails (503). */
  timeoutMs?: number;
}

const isMissing = (err: unknown) => {
  const code = (err as { code?: string })?.code;
  return code === 'NoSuchKey' || code === 'NotFound' || code === 'NoSuchObject';
};

/** S3 answered that it cannot serve now (5xx, throttling), as opposed to "this request is wrong". */
const BUSY_CODES = new Set([
  'InternalError',
  'ServiceUnavailable',
  'SlowDown',
  'RequestTimeout',
  'XMinioServerNotInitialized',
  'XMinioStorageFull',
]);

/**
 * S3 away for a moment: unreachable, silent past the timeout, or answering 5xx (the client gives up on those
 * after its retry with a plain `Request failed after 1 retries: ... Retryable HTTP status: 503`). They were
 * a 500 `internal_error`; the request is as good as before, so 503 `service_unavailable` (retry shortly).
 * Connection errors (ECONNREFUSED, ...) are read as such by the error renderer already.
 */
function asUnavailable(err: unknown): unknown {
  const e = err as { code?: unknown; message?: unknown } | null;
  const message = typeof e?.message === 'string' ? e.message : '';
  if (
    (typeof e?.code === 'string' && BUSY_CODES.has(e.code)) ||
    /^Request failed after \d+ retries|Retryable HTTP status/.test(message)
  )
    return new BlobStoreUnavailableError(err);
  return err;
}

/**
 * http(s).request for the client, failing a request S3 leaves silent for `timeoutMs` (connecting, sending,
 * waiting for the answer's head) with ETIMEDOUT. Without it a stalled S3 held an upload or a file download
 * for minutes. Once the answer's head is in, the body may pause as long as our own client reads slowly.
 */
function transportWithTimeout(useSSL: boolean, timeoutMs: number) {
  const base = useSSL ? https : http;
  return {
    request(options: http.RequestOptions, callback?: (res: http.IncomingMessage) => void) {
      const req = base.request(options, (res) => {
        req.setTimeout(0);
        callback?.(res);
      });
      req.setTimeout(timeoutMs, () =>
        req.destroy(
          Object.assign(new Error(`S3 did not answer within ${timeoutMs} ms`), { code: 'ETIMEDOUT' }),
        ),
      );
      return req;
    },
  };
}

/**
 * Blobs in an S3 bucket (MinIO or any S3) through the `minio` client, path-style. The bucket is created
 * when missing. The app streams the objects to clients itself (see `url`), so the bucket stays private.
 */
export async function createS3BlobStore(opts: S3Options): Promise<BlobStore> {
  const u = new URL(opts.endpoint);
  const useSSL = u.protocol === 'https:';
  const client = new Minio.Client({
    endPoint: u.hostname,
    port: u.port ? Number(u.port) : useSSL ? 443 : 80,
    useSSL,
    accessKey: opts.accessKey,
    secretKey: opts.secretKey,
    pathStyle: true,
    transport: transportWithTimeout(useSSL, opts.timeoutMs ?? 30_000) as unknown as typeof http,
  });
  const { bucket } = opts;
  let exists: boolean;
  try {
    exists = await client.bucketExists(bucket);
  } catch (err) {
    // At start: S3 unreachable (a system error: ECONNREFUSED, ENOTFOUND, ETIMEDOUT…) or busy is named as the
    // file storage; it was logged as "cannot reach the database" (src/main.ts read the bare ECONNREFUSED).
    const code = (err as { code?: unknown } | null)?.code;
    throw typeof code === 'string' && /^E[A-Z]+$/.test(code)
      ? new BlobStoreUnavailableError(err)
      : asUnavailable(err);
  }
  if (!exists) {
    try {
      await client.makeBucket(bucket);
    } catch (err) {
      // Another instance may have created it in between.
      const code = (err as { code?: string }).code;
      if (code !== 'BucketAlreadyOwnedByYou' && code !== 'BucketAlreadyExists') throw err;
    }
  }

  return {
    kind: 's3',
    async put(key, body, contentType, size) {
      assertBlobKey(key);
      try {
        return await put(key, body, contentType, size);
      } catch (err) {
        throw asUnavailable(err);
      }
    },
    async get(key, rangeOf) {
      assertBlobKey(key);
      try {
        return await get(key, rangeOf);
      } catch (err) {
        throw asUnavailable(err);
      }
    },
    async delete(key) {
      assertBlobKey(key);
      try {
        await client.removeObject(bucket, key);
      } catch (err) {
        if (!isMissing(err)) throw asUnavailable(err);
      }
    },
    url: blobUrl,
  };

  async function put(key: string, body: Readable | Buffer, contentType: string, size?: number) {
    const meta = { 'Content-Type': contentType };
    if (Buffer.isBuffer(body)) await client.putObject(bucket, key, body, body.length, meta);
    else if (size !== undefined) await client.putObject(bucket, key, body, size, meta);
    else {
      // A stream of unknown length would make the client start a multipart upload; spooling it to a
      // temporary file first gives a plain PUT of known size (and works with every S3 flavour).
      const tmp = path.join(os.tmpdir(), `blob-${randomUUID()}`);
      try {
        await pipeline(body, fs.createWriteStream(tmp));
        const { size } = await fsp.stat(tmp);
        await client.putObject(bucket, key, fs.createReadStream(tmp), size, meta);
      } finally {
        await fsp.rm(tmp, { force: true });
      }
    }
    const stat = await client.statObject(bucket, key);
    return { contentType, size: stat.size };
  }

  async function get(key: string, rangeOf?: (size: number) => ByteRange | null) {
    try {
      const stat = await client.statObject(bucket, key);
      const contentType =
        (stat.metaData as Record<string, string | undefined>)['content-type'] ?? 'application/octet-stream';
      const range = rangeOf?.(stat.size) ?? null;
      const stream = range
        ? await client.getPartialObject(bucket, key, range.start, range.end - range.start + 1)
        : await client.getObject(bucket, key);
      return { contentType, size: stat.size, stream, range };
    } catch (err) {
      if (isMissing(err)) return null;
      throw err;
    }
  }
}
