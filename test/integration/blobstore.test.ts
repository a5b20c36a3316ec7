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
