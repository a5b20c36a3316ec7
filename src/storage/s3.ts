import fs from 'node:fs';
import fsp from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { randomUUID } from 'node:crypto';
import { pipeline } from 'node:stream/promises';
import * as Minio from 'minio';
import { assertBlobKey, blobUrl, type BlobStore } from './types';

export interface S3Options {
  endpoint: string;
  accessKey: string;
  secretKey: string;
  bucket: string;
}

const isMissing = (err: unknown) => {
  const code = (err as { code?: string })?.code;
  return code === 'NoSuchKey' || code === 'NotFound' || code === 'NoSuchObject';
};

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
  });
  const { bucket } = opts;
  if (!(await client.bucketExists(bucket))) {
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
    },
    async get(key, rangeOf) {
      assertBlobKey(key);
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
    },
    async delete(key) {
      assertBlobKey(key);
      try {
        await client.removeObject(bucket, key);
      } catch (err) {
        if (!isMissing(err)) throw err;
      }
    },
    url: blobUrl,
  };
}
