import fs from 'node:fs';
import { sendForm, type FormPart } from '../support/multipart';
import path from 'node:path';
import { randomBytes, randomUUID } from 'node:crypto';
import { createSqlEventStore } from '../../src/eventstore/sql';
import { EventStoreUnavailableError, type EventStore } from '../../src/eventstore/types';
import { testDatabase, type TestDatabase } from '../support/services';
import { startTestSystem, type TestSystem } from '../support/system';

/**
 * An append the store wrote but whose answer never came back: an EventStoreDB deadline that passed while
 * the server went on, or PostgreSQL gone around a commit for longer than the SQL store's own look-up
 * waits. The route cannot tell whether its event is stored, so it must not delete the new blobs that
 * event may name: a video listed with a URL that answers 404 is worse than a file nobody names.
 */
let database: TestDatabase;
let inner: EventStore;
let t: TestSystem;
/** Appends to a user's videos or profile stream that are written and then answered as failed. */
let loseAnswers = 0;

beforeAll(async () => {
  database = await testDatabase();
  inner = await createSqlEventStore(database.db);
  const store: EventStore = {
    ...inner,
    kind: inner.kind,
    async append(streamName, events, opts) {
      const written = await inner.append(streamName, events, opts);
      if (loseAnswers > 0 && /^(videos|profile)-/.test(streamName)) {
        loseAnswers--;
        throw new EventStoreUnavailableError(new Error('deadline exceeded'));
      }
      return written;
    },
  };
  t = await startTestSystem({ database, store });
});
afterAll(async () => {
  await t?.close();
  await inner?.close();
  await database?.drop();
});

type Part = FormPart;
const send = (method: string, url: string, token: string, parts: Part[]) =>
  sendForm(t.baseUrl, method, url, token, parts);
/** What a file URL serves: its status and whether the bytes are `expected`. */
const served = async (url: string, expected: Buffer) => {
  const res = await fetch(t.baseUrl + url);
  return { status: res.status, same: Buffer.from(await res.arrayBuffer()).equals(expected) };
};
/** The read model's list once it shows `n` items (the event was stored; its answer was lost). */
async function listOnce<T>(path: string, token: string, ready: (items: T[]) => boolean): Promise<T[]> {
  for (let i = 0; ; i++) {
    const res = await t.request('GET', path, { token });
    if (ready(res.body as T[]) || i === 100) return res.body as T[];
    await new Promise((r) => setTimeout(r, 50));
  }
}

it('an upload answered 503 whose event was stored keeps its file and preview: the listed URLs serve them', async () => {
  const token = t.token(randomUUID(), ['coach']);
  const file = randomBytes(2000);
  const preview = randomBytes(300);
  loseAnswers = 1;
  const res = await send('POST', '/api/v1/storage/video', token, [
    { name: 'file', bytes: file, type: 'video/mp4', filename: 'clip.mp4' },
    { name: 'preview', bytes: preview, type: 'image/png', filename: 'p.png' },
  ]);
  expect(res.status).toBe(503);
  const [video] = await listOnce<{ url: string; thumb: string }>(
    '/api/v1/storage/videos',
    token,
    (l) => l.length === 1,
  );
  expect(await served(video!.url, file)).toEqual({ status: 200, same: true });
  expect(await served(video!.thumb, preview)).toEqual({ status: 200, same: true });
});

it('a replace answered 503 whose event was stored keeps the new file: the listed URL serves it', async () => {
  const token = t.token(randomUUID(), ['coach']);
  const first = await send('POST', '/api/v1/storage/video', token, [
    { name: 'file', bytes: randomBytes(500), type: 'video/mp4', filename: 'a.mp4' },
  ]);
  expect(first.status).toBe(200);
  const next = randomBytes(700);
  loseAnswers = 1;
  const res = await send('PUT', `/api/v1/storage/video/${first.body.id}`, token, [
    { name: 'file', bytes: next, type: 'video/mp4', filename: 'b.mp4' },
  ]);
  expect(res.status).toBe(503);
  const [video] = await listOnce<{ url: string }>(
    '/api/v1/storage/videos',
    token,
    (l) => l[0]?.url !== first.body.url,
  );
  expect(video!.url).not.toBe(first.body.url);
  expect(await served(video!.url, next)).toEqual({ status: 200, same: true });
  // The file it replaced was left (the answer was lost before it was removed); deleting the video takes it.
  const del = await t.request('DELETE', `/api/v1/storage/video/${first.body.id}`, { token });
  expect(del.status).toBe(200);
  expect((await fetch(t.baseUrl + first.body.url)).status).toBe(404);
  expect((await fetch(t.baseUrl + video!.url)).status).toBe(404);
});

it('a profile picture answered 503 whose event was stored keeps its file', async () => {
  const token = t.token(randomUUID(), ['coach']);
  const image = randomBytes(900);
  loseAnswers = 1;
  const res = await send('POST', '/api/v1/storage/profile/media', token, [
    { name: 'file', bytes: image, type: 'image/png', filename: 'me.png' },
    { name: 'kind', value: 'image' },
  ]);
  expect(res.status).toBe(503);
  const [item] = await listOnce<{ url: string }>(
    '/api/v1/storage/profile/media',
    token,
    (l) => l.length === 1,
  );
  expect(await served(item!.url, image)).toEqual({ status: 200, same: true });
});

it('a refused replace still keeps nothing of its upload (404: nothing was stored)', async () => {
  const token = t.token(randomUUID(), ['coach']);
  expect(t.system.deps.blobs.kind).toBe('filesystem');
  const stored = () => fs.readdirSync(path.join(t.config.dataDir, 'blobs', 'data')).sort();
  const before = stored();
  const res = await send('PUT', `/api/v1/storage/video/${randomUUID()}`, token, [
    { name: 'file', bytes: randomBytes(100), type: 'video/mp4', filename: 'x.mp4' },
  ]);
  expect(res.status).toBe(404);
  expect(stored()).toEqual(before);
});

it('a delete answered 503 whose event was stored: its repeat answers 404 and the files stop being served', async () => {
  const token = t.token(randomUUID(), ['coach']);
  const file = randomBytes(800);
  const preview = randomBytes(90);
  const up = await send('POST', '/api/v1/storage/video', token, [
    { name: 'file', bytes: file, type: 'video/mp4', filename: 'a.mp4' },
    { name: 'preview', bytes: preview, type: 'image/png', filename: 'p.png' },
  ]);
  expect(up.status).toBe(200);
  loseAnswers = 1;
  const del = await t.request('DELETE', `/api/v1/storage/video/${up.body.id}`, { token });
  expect(del.status).toBe(503);
  await listOnce('/api/v1/storage/videos', token, (l) => l.length === 0);
  // The client repeats the delete it got no answer to: the video is gone, and now so are its files.
  const again = await t.request('DELETE', `/api/v1/storage/video/${up.body.id}`, { token });
  expect(again.status).toBe(404);
  expect(again.body.error).toBe('video_not_found');
  expect((await served(up.body.url, file)).status).toBe(404);
  expect((await served(up.body.thumb, preview)).status).toBe(404);
});

it('a picture removal answered 503 whose event was stored: its repeat answers 404 and the files stop being served', async () => {
  const token = t.token(randomUUID(), ['coach']);
  const image = randomBytes(700);
  const up = await send('POST', '/api/v1/storage/profile/media', token, [
    { name: 'file', bytes: image, type: 'image/png', filename: 'me.png' },
    { name: 'kind', value: 'image' },
  ]);
  expect(up.status).toBe(200);
  const mediaId = up.headers.get('x-media-id');
  const [item] = await listOnce<{ url: string }>(
    '/api/v1/storage/profile/media',
    token,
    (l) => l.length === 1,
  );
  loseAnswers = 1;
  const del = await t.request('DELETE', `/api/v1/storage/profile/media/${mediaId}`, { token });
  expect(del.status).toBe(503);
  await listOnce('/api/v1/storage/profile/media', token, (l) => l.length === 0);
  const again = await t.request('DELETE', `/api/v1/storage/profile/media/${mediaId}`, { token });
  expect(again.status).toBe(404);
  expect(again.body.error).toBe('media_not_found');
  expect((await served(item!.url, image)).status).toBe(404);
});
