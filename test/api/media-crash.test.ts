import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { randomUUID } from 'node:crypto';
import { Client } from 'pg';
import { loadConfig } from '../../src/config';
import { createEsdbEventStore } from '../../src/eventstore/esdb';
import type { EventStore } from '../../src/eventstore/types';
import { signToken } from '../../src/http/auth';
import { eventually } from '../support/marketplace';
import { eventStoreDbPlan, startEventStoreDb, type RunningEventStoreDb } from '../support/eventstoredb';
import { freshPostgres, type TestDatabase } from '../support/services';
import { startServiceProcess, type ServiceProcess } from '../support/serviceProcess';
import { testEventStoreOnEsdb } from '../support/system';

type Projection = { name: string; lease?: { held: boolean } };

/**
 * The service killed with SIGKILL after a replace or a delete of a file was stored and before the files it
 * made unreferenced were removed: once the service is back, their URLs answer 404 (a process manager
 * removes them, from the log, after a restart too), whether or not the client repeats anything. Before, a
 * replaced profile picture or video file stayed served at its old URL for good.
 */
const config = loadConfig({ JWT_SECRET: 'test-secret' });

const describePg = process.env.DATABASE_URL ? describe : describe.skip;
describePg(
  'files made unreferenced by a request killed before removing them (skipped without DATABASE_URL: the test holds read-model tables from a second connection)',
  () => {
    jest.setTimeout(180_000);
    let database: TestDatabase;
    let dataDir: string;
    let esdb: RunningEventStoreDb | undefined;
    let log: EventStore | undefined;
    let svc: ServiceProcess | undefined;
    let env: Record<string, string>;

    beforeAll(async () => {
      database = await freshPostgres(process.env.DATABASE_URL!);
      dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'coaching-media-crash-'));
      // A server named by EVENTSTORE_URL is shared with other tests; a fresh one holds only this test's.
      if (testEventStoreOnEsdb() && eventStoreDbPlan().kind !== 'url') {
        esdb = await startEventStoreDb();
        log = createEsdbEventStore(esdb.url);
      }
      env = {
        DATABASE_URL: database.url!,
        JWT_SECRET: 'test-secret',
        // Shared by both runs: the blobs under DATA_DIR/blobs outlive the killed process.
        DATA_DIR: dataDir,
        // The request waits for its read model this long after its event is stored, before it removes the
        // old files: the test holds the read model, so the kill lands in that window.
        CONSISTENCY_WAIT_MS: '60000',
        ...(esdb ? { EVENTSTORE_URL: esdb.url } : {}),
      };
    });
    afterAll(async () => {
      await svc?.cleanUp();
      await log?.close();
      await esdb?.stop();
      await database.drop();
      fs.rmSync(dataDir, { recursive: true, force: true });
    });

    const form = (parts: Record<string, Buffer | string>) => {
      const f = new FormData();
      for (const [name, v] of Object.entries(parts))
        if (typeof v === 'string') f.append(name, v);
        else
          f.append(name, new Blob([v], { type: name === 'file' ? 'video/mp4' : 'image/png' }), `${name}.bin`);
      return f;
    };
    const send = async (method: string, p: string, token: string, body?: FormData) => {
      const res = await fetch(svc!.base + p, { method, body, headers: { authorization: `Bearer ${token}` } });
      const text = await res.text();
      return { status: res.status, body: text ? JSON.parse(text) : undefined };
    };
    const fileStatus = async (url: string) => (await fetch(svc!.base + url)).status;
    /** A stream's events, from the log (PostgreSQL's es_events, or EventStoreDB). */
    const eventsOf = async (stream: string): Promise<{ type: string; data: any }[]> => {
      if (log) return (await log.readStream(stream)).events;
      const { rows } = await database.db.query<{ type: string; data: unknown }>(
        'SELECT type, data FROM es_events WHERE stream_name = $1 ORDER BY revision',
        [stream],
      );
      return rows;
    };

    it('removes the replaced and deleted files once the service is back, without any repeat', async () => {
      svc = await startServiceProcess(env, 'media-crash');
      const userId = randomUUID();
      const token = signToken(config, userId, ['coach']);
      const first = await send(
        'POST',
        '/api/v1/storage/video',
        token,
        form({ file: Buffer.from('old video'), preview: Buffer.from('old preview') }),
      );
      const doomed = await send(
        'POST',
        '/api/v1/storage/video',
        token,
        form({ file: Buffer.from('doomed') }),
      );
      const media = await send(
        'POST',
        '/api/v1/storage/profile/media',
        token,
        form({ file: Buffer.from('old media') }),
      );
      expect([first.status, doomed.status, media.status]).toEqual([200, 200, 200]);
      const stale = [first.body.url, first.body.thumb, doomed.body.url];
      const [changed] = await eventsOf(`profile-${userId}`);
      expect(changed?.type).toBe('ProfileMediaChanged');
      stale.push(`/api/v1/storage/files/${changed!.data.mediaKey}`);
      for (const url of stale) expect(await fileStatus(url)).toBe(200);

      // Another instance holds the clean-up's lease: this one stops removing (within the lease's 5 s),
      // so only what the requests themselves remove is removed before the kill.
      await database.db.query(
        `UPDATE process_leases SET owner = 'elsewhere', expires_at = now() + interval '1 hour'
         WHERE name = 'blob-cleanup'`,
      );
      await eventually(
        async () => (await (await fetch(`${svc!.base}/healthz`)).json()) as { projections: Projection[] },
        (h) => h.projections.some((p) => p.name === 'blob-cleanup-process' && p.lease?.held === false),
        20_000,
      );
      // Hold the read models the three requests wait for, so each waits after its event is stored.
      const holder = new Client({ connectionString: database.url });
      await holder.connect();
      await holder.query('BEGIN');
      await holder.query('LOCK TABLE videos, user_profiles IN ACCESS EXCLUSIVE MODE');
      const pending = [
        send(
          'PUT',
          `/api/v1/storage/video/${first.body.id}`,
          token,
          form({ file: Buffer.from('new video'), preview: Buffer.from('new preview') }),
        ),
        send('DELETE', `/api/v1/storage/video/${doomed.body.id}`, token),
        send('POST', '/api/v1/storage/profile/media', token, form({ file: Buffer.from('new media') })),
      ].map((p) => p.catch((err: unknown) => err));
      await eventually(
        async () =>
          [...(await eventsOf(`videos-${userId}`)), ...(await eventsOf(`profile-${userId}`))].map(
            (e) => e.type,
          ),
        (types) =>
          types.includes('VideoReplaced') &&
          types.includes('VideoDeleted') &&
          types.filter((t) => t === 'ProfileMediaChanged').length === 2,
        30_000,
      );
      svc.child.kill('SIGKILL');
      await svc.exited;
      await Promise.all(pending);
      await holder.query('ROLLBACK');
      await holder.end();
      // What the killed requests left: every old file still there.
      for (const url of stale) {
        const key = url.split('/').pop()!;
        expect(fs.existsSync(path.join(dataDir, 'blobs', 'data', key))).toBe(true);
      }

      // The other instance is gone too: the restarted service takes the lease over.
      await database.db.query("UPDATE process_leases SET expires_at = now() WHERE name = 'blob-cleanup'");
      await svc.cleanUp();
      svc = await startServiceProcess(env, 'media-crash');
      const statuses = await eventually(
        () => Promise.all(stale.map(fileStatus)),
        (s) => s.every((x) => x === 404),
        20_000,
      );
      expect(statuses).toEqual(stale.map(() => 404));
      // The replace itself stands, with its new files.
      const videos = await send('GET', '/api/v1/storage/videos', token);
      expect(videos.body).toHaveLength(1);
      expect(await fileStatus(videos.body[0].url)).toBe(200);
      expect(await fileStatus(videos.body[0].thumb)).toBe(200);
    });
  },
);
