import fs from 'node:fs';
import fsp from 'node:fs/promises';
import path from 'node:path';
import { randomUUID } from 'node:crypto';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { assertBlobKey, blobUrl, type BlobInfo, type BlobStore } from './types';

/**
 * Blobs as files under `dir` (DATA_DIR/blobs): `data/<key>` holds the bytes, `meta/<key>.json` the
 * content type and size. A put writes a temporary file and renames it, so a reader never sees half a blob.
 */
export async function createFilesystemBlobStore(dir: string): Promise<BlobStore> {
  const dataDir = path.join(dir, 'data');
  const metaDir = path.join(dir, 'meta');
  const tmpDir = path.join(dir, 'tmp');
  await Promise.all([dataDir, metaDir, tmpDir].map((d) => fsp.mkdir(d, { recursive: true })));
  const dataOf = (key: string) => path.join(dataDir, key);
  const metaOf = (key: string) => path.join(metaDir, `${key}.json`);

  return {
    kind: 'filesystem',
    async put(key, body, contentType) {
      assertBlobKey(key);
      const tmp = path.join(tmpDir, randomUUID());
      try {
        await pipeline(Buffer.isBuffer(body) ? Readable.from([body]) : body, fs.createWriteStream(tmp));
        const { size } = await fsp.stat(tmp);
        const info: BlobInfo = { contentType, size };
        await fsp.writeFile(metaOf(key), JSON.stringify(info));
        await fsp.rename(tmp, dataOf(key));
        return info;
      } catch (err) {
        await fsp.rm(tmp, { force: true });
        throw err;
      }
    },
    async get(key) {
      assertBlobKey(key);
      let info: BlobInfo;
      try {
        info = JSON.parse(await fsp.readFile(metaOf(key), 'utf8')) as BlobInfo;
        await fsp.access(dataOf(key));
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code === 'ENOENT') return null;
        throw err;
      }
      return { ...info, stream: fs.createReadStream(dataOf(key)) };
    },
    async delete(key) {
      assertBlobKey(key);
      await fsp.rm(dataOf(key), { force: true });
      await fsp.rm(metaOf(key), { force: true });
    },
    url: blobUrl,
  };
}
