import { eventually, marketplace } from '../support/marketplace';
import { startTestSystem, type TestSystem } from '../support/system';

let t: TestSystem;
beforeAll(async () => {
  t = await startTestSystem();
});
afterAll(async () => {
  await t?.close();
});

const inboxOf = (coach: { token: string }, n: number) =>
  eventually(
    async () => (await t.request('GET', '/api/v1/notifications', { token: coach.token })).body,
    (l: { message: string }[]) => l.length === n,
  );

describe('the coach notice of a rejected service', () => {
  it('says an approved service was withdrawn, not "not approved"', async () => {
    const m = marketplace(t);
    const coach = await m.coach();
    const id = await m.offering(coach, { name: 'Padel nights' });
    const withdrawn = await t.request('POST', `/api/v1/admin/services/${id}/reject`, {
      token: m.admin(),
      body: { reason: 'venue closed' },
    });
    expect(withdrawn.status).toBe(200);
    const [notice] = await inboxOf(coach, 1);
    expect(notice).toMatchObject({ type: 'service_rejected', contentType: 'service', contentId: id });
    expect(notice?.message).toBe(
      'Your service "Padel nights" was withdrawn: it is no longer offered to new clients. Reason: venue closed',
    );
  });

  it('names the service as it was when rejected, and a service in review as not approved', async () => {
    const m = marketplace(t);
    const coach = await m.coach();
    const created = await t.request('POST', '/api/v1/coach/services', {
      token: coach.token,
      body: { name: 'Old name', price: 10, priceCurrency: 'EUR', sessionMinutesDuration: 60 },
    });
    const id = created.body.id as string;
    // The rejection and the coach's rename that follows it are both in the log before the notice is made.
    const stream = `service-${id}`;
    const { position } = await t.system.deps.store.append(
      stream,
      [
        {
          type: 'ServiceRejected',
          data: { serviceId: id, coachId: coach.id, reason: 'vague', at: new Date().toISOString() },
        },
        {
          type: 'ServiceUpdated',
          data: {
            serviceId: id,
            coachId: coach.id,
            changes: { name: 'New name' },
            updatedAt: new Date().toISOString(),
          },
        },
        {
          type: 'ServiceResubmitted',
          data: { serviceId: id, coachId: coach.id, at: new Date().toISOString() },
        },
      ],
      { expectedRevision: 'any' },
    );
    expect(await t.system.runner.waitFor(position, 5000)).toBe(true);
    const [notice] = await inboxOf(coach, 1);
    expect(notice?.message).toBe('Your service "Old name" was not approved. Reason: vague');
  });
});
