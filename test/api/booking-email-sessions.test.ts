import type { EmailRequested } from '../../commands/email/events';
import { type TestSystem } from '../support/system';
import { apiSuite, type Marketplace } from '../support/apiSuite';

let t: TestSystem;
let m: Marketplace;
apiSuite('2026-12-01T08:00:00Z', (system, market) => {
  t = system;
  m = market;
});

/** The slots the e-mail asked for names (its EmailRequested, as the sender renders it). */
const slotsOfEmail = async (emailId: string) => {
  const { events } = await t.system.deps.store.readStream(`email-${emailId}`);
  return (events[0]!.data as EmailRequested['data']).facts.slots;
};

/**
 * The booking e-mail (19) of a booking tells its party the sessions "received and waiting for the coach".
 * It named every session the booking ever had, those declined or canceled since included, so a client who
 * had moved a package's session was told the old time was still booked.
 */
describe('the booking e-mail (19) names the sessions still booked', () => {
  it('leaves out declined and canceled sessions; a booking with none left names them all, as booked', async () => {
    const coach = await m.coach();
    const serviceId = await m.offering(coach, { numberOfSessions: 3, price: 90 });
    const client = await m.client();
    const booked = await t.request('POST', `/api/v1/service/${serviceId}`, {
      token: client.token,
      body: { slots: ['2026-12-02T10:00:00', '2026-12-03T10:00:00'] },
    });
    expect(booked.status).toBe(200);
    const [first, second] = booked.body as { id: string; groupId: string }[];
    const later = await t.request('POST', `/api/v1/service/${serviceId}`, {
      token: client.token,
      body: { slots: ['2026-12-04T10:00:00'], packageId: first!.groupId },
    });
    expect(later.status).toBe(200);
    const canceled = await t.request('POST', `/api/v1/session/${first!.id}/cancel`, { token: client.token });
    expect(canceled.body.state).toBe('canceled');

    const mail = (userId: string) =>
      t.request('POST', `/api/v1/notification/private/email/${userId}/session/${first!.groupId}/booking`, {
        token: m.service(),
        headers: { 'content-type': 'application/json' },
      });
    for (const party of [client, coach]) {
      const res = await mail(party.id);
      expect(res.status).toBe(200);
      expect(await slotsOfEmail(res.body.id)).toEqual(['2026-12-03T10:00:00', '2026-12-04T10:00:00']);
    }

    const declined = await t.request('POST', `/api/v1/session/${second!.id}/decline`, { token: coach.token });
    expect(declined.body.state).toBe('declined');
    const third = (later.body as { id: string }[])[0]!;
    const gone = await t.request('POST', `/api/v1/session/${third.id}/cancel`, { token: coach.token });
    expect(gone.body.state).toBe('canceled');
    const none = await mail(client.id);
    expect(none.status).toBe(200);
    expect(await slotsOfEmail(none.body.id)).toEqual([
      '2026-12-02T10:00:00',
      '2026-12-03T10:00:00',
      '2026-12-04T10:00:00',
    ]);
  });
});
