import { eventually, marketplace } from '../support/marketplace';
import { startTestSystem, type TestSystem } from '../support/system';

/**
 * Commands decide from the log, not from read models: with a read model stopped for good (its projection
 * fails on a real database error), bookings, payment updates and session lifecycle still decide on the
 * current truth.
 */

// Tuesday 1 December 2026, 08:00 UTC (09:00 in Berlin).
const NOW = new Date('2026-12-01T08:00:00Z');
const SLOT = '2026-12-02T10:00:00';

/** Makes every write to `table` fail from now on, so the projection that keeps it stops as failed. */
async function breakReadModel(t: TestSystem, table: string) {
  await t.database.db.query(
    `CREATE OR REPLACE FUNCTION refuse_write() RETURNS trigger AS $$
     BEGIN RAISE EXCEPTION 'read model % is broken for this test', TG_TABLE_NAME; END $$ LANGUAGE plpgsql`,
  );
  await t.database.db.query(
    `CREATE TRIGGER refuse_write BEFORE INSERT OR UPDATE ON ${table} FOR EACH ROW EXECUTE FUNCTION refuse_write()`,
  );
}

const failed = async (t: TestSystem, projection: string) =>
  eventually(
    async () => (await t.request('GET', '/healthz')).body,
    (h) =>
      h.projections.some(
        (p: { name: string; state: string }) => p.name === projection && p.state === 'failed',
      ),
  );

describe('booking decides on the service stream, not the services read model', () => {
  let t: TestSystem;
  let m: ReturnType<typeof marketplace>;
  beforeAll(async () => {
    t = await startTestSystem({ clock: () => NOW });
    m = marketplace(t);
  });
  afterAll(() => t.close());

  it('refuses a service rejected while the services projection is failed, and books at the current price', async () => {
    const coach = await m.coach();
    const rejected = await m.offering(coach);
    const repriced = await m.offering(coach);
    const client = await m.client();
    await breakReadModel(t, 'services');

    const reject = await t.request('POST', `/api/v1/admin/services/${rejected}/reject`, {
      token: m.admin(),
      body: { reason: 'complaint' },
    });
    expect(reject.status).toBe(200);
    expect(reject.body.status).toBe('rejected');
    await failed(t, 'services');
    const edit = await t.request('PUT', `/api/v1/coach/services/${repriced}`, {
      token: coach.token,
      body: { price: 65 },
    });
    expect(edit.status).toBe(200);

    // The read model still shows both services as they were...
    const stale = await t.request('GET', `/api/v1/service/${rejected}`);
    expect(stale.body).toMatchObject({ status: 'approved' });
    expect((await t.request('GET', `/api/v1/service/${repriced}`)).body).toMatchObject({ price: 40 });

    // ...but booking reads the services' own streams.
    const refused = await t.request('POST', `/api/v1/service/${rejected}`, {
      token: client.token,
      body: { slots: [SLOT] },
    });
    expect(refused.status).toBe(404);
    expect(refused.body).toMatchObject({ error: 'service_not_found', code: 404 });

    const booked = await t.request('POST', `/api/v1/service/${repriced}`, {
      token: client.token,
      body: { slots: [SLOT] },
    });
    expect(booked.status).toBe(200);
    expect(booked.body[0]).toMatchObject({ price: 65, serviceId: repriced });
    const payment = await t.system.deps.store.readStream(`payment-${booked.body[0].paymentId}`);
    expect(payment.events[0]!.data).toMatchObject({ price: 65 });
  });
});
