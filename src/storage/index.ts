import path from 'node:path';
import type { Config } from '../config';
import { createFilesystemBlobStore } from './filesystem';
import { createS3BlobStore } from './s3';
import type { BlobStore } from './types';

export type { BlobStore, BlobInfo } from './types';

/** S3 when S3_ENDPOINT is set, else files under DATA_DIR/blobs. */
export function openBlobStore(config: Pick<Config, 's3' | 'dataDir'>): Promise<BlobStore> {
  return config.s3
    ? createS3BlobStore(config.s3)
    : createFilesystemBlobStore(path.join(config.dataDir, 'blobs'));
}
