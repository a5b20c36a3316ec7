import fsp from 'node:fs/promises';
import path from 'node:path';
import { Readable } from 'node:stream';
import { randomBytes, randomUUID } from 'node:crypto';
import { text } from 'node:stream/consumers';
import { loadConfig } from '../../src/config';
import { openBlobStore, type BlobStore } from '../../src/storage';
import { isBlobKey, keyOfUrl, newBlobKey } from '../../src/storage/types';
import { tempDataDir, testS3 } from '../support/s3';

const bytes = async (s: Readable): Promise<Buffer> => {
  const chunks: Buffer[] = [];
  for await (const c of s) chunks.push(Buffer.from(c as Buffer));
  return Buffer.concat(chunks);
};

/** One contract, every adapter. */
function blobStoreContract(name: string, open: () => Promise<{ store: BlobStore; close(): Promise<void> }>) {
  describe(`blob store contract: ${name}`, () => {
    let store: BlobStore;
    let close: () => Promise<void>;
    beforeAll(async () => {
      ({ store, close } = await open());
    });
    afterAll(() => close());

    it('stores a buffer and reads back the same bytes, type and size', async () => {
      const key = newBlobKey('t', randomUUID(), 'clip.MP4');
      const body = randomBytes(70_000);
      const info = await store.put(key, body, 'video/mp4');
      expect(info).toEqual({ contentType: 'video/mp4', size: body.length });
      const got = await store.get(key);
      expect(got).not.toBeNull();
      expect(got!.contentType).toBe('video/mp4');
      expect(got!.size).toBe(body.length);
      expect((await bytes(got!.stream)).equals(body)).toBe(true);
    });

    it('streams one byte range when asked, given the size first; the whole blob when not', async () => {
      const key = newBlobKey('t', randomUUID(), 'clip.mp4');
      const body = randomBytes(50_000);
      await store.put(key, body, 'video/mp4');
      const sizes: number[] = [];
      const part = await store.get(key, (size) => {
        sizes.push(size);
        return { start: 1000, end: 1999 };
      });
      expect(sizes).toEqual([body.length]);
      expect(part!.range).toEqual({ start: 1000, end: 1999 });
      expect(part!.size).toBe(body.length);
      expect((await bytes(part!.stream)).equals(body.subarray(1000, 2000))).toBe(true);
      const whole = await store.get(key, () => null);
      expect(whole!.range).toBeNull();
      expect((await bytes(whole!.stream)).equals(body)).toBe(true);
    });

    it('stores a stream of unknown length', async () => {
      const key = newBlobKey('t', randomUUID());
      const parts = [Buffer.from('hello '), Buffer.from('stream '), randomBytes(10_000)];
      await store.put(key, Readable.from(parts), 'image/png');
      const got = await store.get(key);
      expect((await bytes(got!.stream)).equals(Buffer.concat(parts))).toBe(true);
      expect(got!.size).toBe(Buffer.concat(parts).length);
    });

    it('overwrites a key, and answers null for a key that was never stored', async () => {
      const key = newBlobKey('t', randomUUID());
      await store.put(key, Buffer.from('first'), 'text/plain');
      await store.put(key, Buffer.from('second'), 'text/plain');
      expect(await text((await store.get(key))!.stream)).toBe('second');
      expect(await store.get(newBlobKey('t', randomUUID()))).toBeNull();
    });

    it('gets a blob racing its delete either whole or as none, never as a stream that then fails', async () => {
      // A download racing a delete: the filesystem store opened the file only once read, after the delete
      // had removed it (ENOENT mid-answer, the connection cut). Timing varies, so many rounds.
      const outcomes = new Set<string>();
      for (let i = 0; i < 150; i++) {
        const key = newBlobKey('t', randomUUID(), 'clip.mp4');
        const body = randomBytes(1000);
        await store.put(key, body, 'video/mp4');
        const got = store.get(key);
        const deleted = new Promise((r) => setTimeout(r, Math.random() * 2)).then(() => store.delete(key));
        const blob = await got;
        outcomes.add(
          blob
            ? await bytes(blob.stream).then(
                (b) => (b.equals(body) ? 'whole' : 'other bytes'),
                (err: unknown) => `failed: ${String(err)}`,
              )
            : 'none',
        );
        await deleted;
      }
      expect([...outcomes].filter((o) => o !== 'whole' && o !== 'none')).toEqual([]);
    });

    it('deletes, and deleting again is not an error', async () => {
      const key = newBlobKey('t', randomUUID());
      await store.put(key, Buffer.from('x'), 'text/plain');
      await store.delete(key);
      expect(await store.get(key)).toBeNull();
      await expect(store.delete(key)).resolves.toBeUndefined();
    });

    it('serves every blob at the app files path, and refuses keys that could escape it', async () => {
      const key = newBlobKey('video', randomUUID(), 'a.webm');
      expect(store.url(key)).toBe(`/api/v1/storage/files/${key}`);
      expect(keyOfUrl(store.url(key))).toBe(key);
      for (const bad of ['../etc/passwd', 'a/b', '', '.hidden', 'a..b'])
        await expect(store.put(bad, Buffer.from('x'), 'text/plain')).rejects.toThrow(/invalid blob key/);
      expect(isBlobKey(key)).toBe(true);
    });
  });
}

blobStoreContract('filesystem (DATA_DIR/blobs)', async () => {
  const data = await tempDataDir();
  const store = await openBlobStore(loadConfig({ DATA_DIR: data.dir }));
  expect(store.kind).toBe('filesystem');
  return { store, close: data.close };
});

blobStoreContract('S3 (S3_ENDPOINT, else s3rver over HTTP)', async () => {
  const s3 = await testS3();
  const store = await openBlobStore(loadConfig(s3.env));
  expect(store.kind).toBe('s3');
  return { store, close: s3.close };
});

describe('filesystem blob store durability', () => {
  it('flushes the file before its rename and the directory after it', async () => {
    const data = await tempDataDir();
    const store = await openBlobStore(loadConfig({ DATA_DIR: data.dir }));
    // Records, in order, every flush and rename the store asks the operating system for.
    const calls: string[] = [];
    const open = fsp.open.bind(fsp);
    const rename = fsp.rename.bind(fsp);
    const openSpy = jest.spyOn(fsp, 'open').mockImplementation(async (file, flags) => {
      const fh = await open(file, flags);
      const sync = fh.sync.bind(fh);
      fh.sync = async () => {
        calls.push(`sync ${path.relative(data.dir, String(file))}`);
        return sync();
      };
      return fh;
    });
    const renameSpy = jest.spyOn(fsp, 'rename').mockImplementation(async (from, to) => {
      calls.push(`rename ${path.relative(data.dir, String(from))} -> ${path.relative(data.dir, String(to))}`);
      return rename(from, to);
    });
    try {
      const key = newBlobKey('t', randomUUID());
      await store.put(key, Buffer.from('durable'), 'text/plain');
      const dataRename = calls.findIndex((c) => c.startsWith('rename') && c.endsWith(`blobs/data/${key}`));
      expect(dataRename).toBeGreaterThan(0);
      const tmp = calls[dataRename]!.split(' ')[1]!;
      // The bytes were flushed before the rename, the directory after it.
      expect(calls.slice(0, dataRename)).toContain(`sync ${tmp}`);
      expect(calls.slice(dataRename + 1)).toContain('sync blobs/data');
      // The metadata file likewise: flushed, renamed into meta/, its directory flushed.
      const metaRename = calls.findIndex(
        (c) => c.startsWith('rename') && c.endsWith(`blobs/meta/${key}.json`),
      );
      expect(metaRename).toBeGreaterThan(0);
      expect(calls.slice(0, metaRename)).toContain(`sync ${calls[metaRename]!.split(' ')[1]!}`);
      expect(calls.slice(metaRename + 1)).toContain('sync blobs/meta');
      expect(await text((await store.get(key))!.stream)).toBe('durable');
    } finally {
      openSpy.mockRestore();
      renameSpy.mockRestore();
      await data.close();
    }
  });
});
