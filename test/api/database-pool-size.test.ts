import jwt from 'jsonwebtoken';
import { startServiceProcess } from '../support/serviceProcess';
import { testDatabase } from '../support/services';
import { eventually } from '../support/marketplace';

/**
 * `DATABASE_POOL_SIZE=1`, a value the service takes: with the events in the database, one connection
 * listens for appends all the time, so before the pool had none left for anything else (every projection
 * `retrying`, `/healthz` 503 with the database `down`, every request 503 after the connect timeout).
 */
const SECRET = 'a-test-secret-that-is-long-enough-for-production-rules';
const itPg = process.env.DATABASE_URL ? it : it.skip;

itPg(
  'runs with DATABASE_POOL_SIZE=1: healthy, commands answered, read models applied',
  async () => {
    const database = await testDatabase();
    const service = await startServiceProcess(
      {
        DATABASE_URL: database.url!,
        DATABASE_POOL_SIZE: '1',
        DATABASE_CONNECT_TIMEOUT_MS: '2000',
        JWT_SECRET: SECRET,
        WEBHOOK_SIGNING_KEY: SECRET,
      },
      'pool-size-1',
    ).catch(async (err: unknown) => {
      await database.drop();
      throw err;
    });
    try {
      const token = jwt.sign({ sub: '11111111-1111-4111-8111-111111111111', roles: ['client'] }, SECRET, {
        expiresIn: 3600,
      });
      const headers = { Authorization: `Bearer ${token}`, 'Content-Type': 'application/json' };
      const created = await fetch(`${service.base}/api/v1/nav/addreses`, {
        method: 'POST',
        headers,
        body: JSON.stringify({ lat: 52.52, lng: 13.405, name: 'Home', address: 'Alexanderplatz 1' }),
      });
      expect(created.status).toBe(200);
      // The addresses read model applied it (the list is read from it).
      const list = await eventually(
        () => fetch(`${service.base}/api/v1/nav/addreses`, { headers }).then((r) => r.json()),
        (body) => Array.isArray(body) && body.length === 1,
        10_000,
      );
      expect(list).toEqual([expect.objectContaining({ name: 'Home', address: 'Alexanderplatz 1' })]);
      const health = await fetch(`${service.base}/healthz`);
      const body = (await health.json()) as {
        database: { status: string };
        projections: { state: string }[];
      };
      expect(health.status).toBe(200);
      expect(body.database.status).toBe('ok');
      expect(body.projections.filter((p) => p.state !== 'running' && p.state !== 'standby')).toEqual([]);
    } finally {
      await service.cleanUp();
      await database.drop();
    }
  },
  120_000,
);
