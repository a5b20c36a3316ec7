import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { randomUUID } from 'node:crypto';
import S3rver from 's3rver';

export interface TestS3 {
  /** The env the service reads (S3_ENDPOINT, S3_ACCESS_KEY, S3_SECRET_KEY, S3_BUCKET). */
  env: Record<string, string>;
  kind: 'env' | 's3rver';
  close(): Promise<void>;
}

/**
 * An S3 for a test file (DESIGN section 8): S3_ENDPOINT from the environment (a fresh bucket each time),
 * else `s3rver` speaking real HTTP on an ephemeral port over a temporary directory. (No MinIO container is
 * started: where Docker answers, set S3_ENDPOINT to a MinIO instead.)
 */
export async function testS3(): Promise<TestS3> {
  const bucket = `t-${randomUUID().slice(0, 12)}`;
  if (process.env.S3_ENDPOINT)
    return {
      kind: 'env',
      env: {
        S3_ENDPOINT: process.env.S3_ENDPOINT,
        S3_ACCESS_KEY: process.env.S3_ACCESS_KEY ?? '',
        S3_SECRET_KEY: process.env.S3_SECRET_KEY ?? '',
        S3_BUCKET: bucket,
      },
      close: async () => undefined,
    };
  const directory = await fs.mkdtemp(path.join(os.tmpdir(), 's3rver-'));
  const server = new S3rver({ port: 0, address: '127.0.0.1', silent: true, directory });
  const { port } = await server.run();
  return {
    kind: 's3rver',
    // s3rver's built-in account.
    env: {
      S3_ENDPOINT: `http://127.0.0.1:${port}`,
      S3_ACCESS_KEY: 'S3RVER',
      S3_SECRET_KEY: 'S3RVER',
      S3_BUCKET: bucket,
    },
    async close() {
      await server.close();
      await fs.rm(directory, { recursive: true, force: true });
    },
  };
}

/** A temporary DATA_DIR, removed by `close`. */
export async function tempDataDir(): Promise<{ dir: string; close(): Promise<void> }> {
  const dir = await fs.mkdtemp(path.join(os.tmpdir(), 'coaching-data-'));
  return { dir, close: () => fs.rm(dir, { recursive: true, force: true }) };
}
