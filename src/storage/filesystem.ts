import fs from 'node:fs';
import fsp from 'node:fs/promises';
import path from 'node:path';
import { randomUUID } from 'node:crypto';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { assertBlobKey, blobUrl, type BlobInfo, type BlobStore } from './types';

/** Flushes a file's bytes to disk (a rename of an unflushed file can leave an empty file after a crash). */
export async function fsyncFile(file: string): Promise<void> {
  const fh = await fsp.open(file, 'r+');
  try {
    await fh.sync();
  } finally {
    await fh.close();
  }
}

/** Flushes a directory's entries (a rename or a new name) to disk. */
export async function fsyncDir(dir: string): Promise<void> {
  const fh = await fsp.open(dir, 'r');
  try {
    await fh.sync();
  } finally {
    await fh.close();
  }
}

/** How old (since last written) a temporary file must be for a start to take it for a dead process's. */
export const STALE_TEMPORARY_MS = 6 * 60 * 60 * 1000;

/**
 * Removes the files directly in `dir` not written to for `maxAgeMs` (none when `dir` is missing): what an
 * upload or a blob put left when its process died mid-way (a crash, a kill, a restart cutting a long
 * upload), which nothing else ever removes. Run at start; a file another process sharing the directory
 * is still writing or reading is far younger. Answers how many were removed.
 */
export async function sweepStaleFiles(dir: string, maxAgeMs = STALE_TEMPORARY_MS, now = Date.now()) {
  let names: string[];
  try {
    names = await fsp.readdir(dir);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return 0;
    throw err;
  }
  let removed = 0;
  for (const name of names) {
    const file = path.join(dir, name);
    try {
      const stat = await fsp.lstat(file);
      if (!stat.isFile() || now - stat.mtimeMs < maxAgeMs) continue;
      await fsp.rm(file, { force: true });
      removed++;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
    }
  }
  return removed;
}

/** Writes `file` through a flushed temporary file and a rename, then flushes its directory. */
async function writeDurably(file: string, content: string, tmpDir: string): Promise<void> {
  const tmp = path.join(tmpDir, `${randomUUID()}.meta`);
  try {
    await fsp.writeFile(tmp, content);
    await fsyncFile(tmp);
    await fsp.rename(tmp, file);
  } catch (err) {
    await fsp.rm(tmp, { force: true });
    throw err;
  }
  await fsyncDir(path.dirname(file));
}

/**
 * Blobs as files under `dir` (DATA_DIR/blobs): `data/<key>` holds the bytes, `meta/<key>.json` the
 * content type and size. A put writes a temporary file, flushes it, renames it and flushes the directory, so a
 * reader never sees half a blob and a blob a put returned survives a power cut.
 */
export async function createFilesystemBlobStore(dir: string): Promise<BlobStore> {
  const dataDir = path.join(dir, 'data');
  const metaDir = path.join(dir, 'meta');
  const tmpDir = path.join(dir, 'tmp');
  await Promise.all([dataDir, metaDir, tmpDir].map((d) => fsp.mkdir(d, { recursive: true })));
  // Half-written blobs of a process that died during a put.
  await sweepStaleFiles(tmpDir);
  const dataOf = (key: string) => path.join(dataDir, key);
  const metaOf = (key: string) => path.join(metaDir, `${key}.json`);

  return {
    kind: 'filesystem',
    async put(key, body, contentType) {
      assertBlobKey(key);
      const tmp = path.join(tmpDir, randomUUID());
      try {
        await pipeline(Buffer.isBuffer(body) ? Readable.from([body]) : body, fs.createWriteStream(tmp));
        await fsyncFile(tmp);
        const { size } = await fsp.stat(tmp);
        const info: BlobInfo = { contentType, size };
        await writeDurably(metaOf(key), JSON.stringify(info), tmpDir);
        await fsp.rename(tmp, dataOf(key));
        // The rename is durable only once the directory holding the new name is on disk; the route appends
        // the event naming the blob right after this returns.
        await fsyncDir(dataDir);
        return info;
      } catch (err) {
        await fsp.rm(tmp, { force: true });
        throw err;
      }
    },
    async get(key, rangeOf) {
      assertBlobKey(key);
      let info: BlobInfo;
      let file: fsp.FileHandle;
      try {
        info = JSON.parse(await fsp.readFile(metaOf(key), 'utf8')) as BlobInfo;
        // Opened now, not when the stream is first read: a delete in between then failed the stream with
        // ENOENT after the answer's head was sent (a download racing a delete had its connection cut). An
        // open file reads whole after its name is removed.
        file = await fsp.open(dataOf(key), 'r');
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code === 'ENOENT') return null;
        throw err;
      }
      const range = rangeOf?.(info.size) ?? null;
      return { ...info, range, stream: file.createReadStream(range ?? {}) };
    },
    async delete(key) {
      assertBlobKey(key);
      await fsp.rm(dataOf(key), { force: true });
      await fsp.rm(metaOf(key), { force: true });
    },
    url: blobUrl,
  };
}
