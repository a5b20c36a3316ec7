import { marketplace } from '../support/marketplace';
import { eventually } from '../support/marketplace';
import { startTestSystem, type TestSystem } from '../support/system';

/**
 * `GET /api/v1/admin/projections` (the admin page's projection panel). Every answer the test systems get
 * is checked against /openapi.json (test/support/system.ts).
 */
let t: TestSystem;
let m: ReturnType<typeof marketplace>;
beforeAll(async () => {
  t = await startTestSystem();
  m = marketplace(t);
});
afterAll(() => t.close());

const itPg = process.env.DATABASE_URL ? it : it.skip;

itPg('shows the process managers another instance runs as standby (PostgreSQL: shared leases)', async () => {
  // A second instance on the same database: the first holds the leases, so its process managers wait.
  const second = await startTestSystem({ database: t.database });
  try {
    const res = await eventually(
      () => second.request('GET', '/api/v1/admin/projections', { token: m.admin() }),
      (r) => r.status !== 200 || r.body.some((p: { state: string }) => p.state === 'standby'),
      10_000,
    );
    expect(res.status).toBe(200);
    const standby = res.body.filter((p: { state: string }) => p.state === 'standby');
    expect(standby.length).toBeGreaterThan(0);
    for (const p of standby) expect(p).toMatchObject({ lagEvents: 0, lagSeconds: 0 });
  } finally {
    await second.close();
  }
});

it('answers every projection and its state while the event store does not answer, lag null', async () => {
  const store = t.system.deps.store as { headPosition: () => Promise<unknown> };
  store.headPosition = () => Promise.reject(new Error('connection refused'));
  try {
    const res = await t.request('GET', '/api/v1/admin/projections', { token: m.admin() });
    expect(res.status).toBe(200);
    expect(res.body.length).toBe(t.system.runner.status().length);
    for (const p of res.body) expect(p).toMatchObject({ lagEvents: null, lagSeconds: null });
  } finally {
    delete (store as { headPosition?: unknown }).headPosition;
  }
  const res = await t.request('GET', '/api/v1/admin/projections', { token: m.admin() });
  expect(res.body[0]).toMatchObject({ lagEvents: expect.any(Number), lagSeconds: expect.any(Number) });
});
