import type { EventStore } from '../../src/eventstore/types';
import { eventually, type marketplace } from '../support/marketplace';
import { systemOnSteppedStore } from '../support/storeRaces';
import { testEventStoreOnEsdb, type TestSystem } from '../support/system';

type Marketplace = ReturnType<typeof marketplace>;

/**
 * A package's later session is booked against the package's payment as read: if the payment is canceled
 * between that read and the hold's write (endpoint 16, the expiry sweeper, the provider), the write is
 * refused by its condition on the payment stream and the booking decided again: 409 `package_canceled`,
 * and no session is left held on a payment nobody will pay or release. SQL stores only (the condition rides
 * on the hold's multi-stream write); found by review.
 */
const describeSql = testEventStoreOnEsdb() ? describe.skip : describe;
const NOW = new Date('2026-12-01T08:00:00Z');

describeSql('a package session booked while its payment is canceled', () => {
  let t: TestSystem;
  let m: Marketplace;
  let inner: EventStore;
  let close: () => Promise<void>;
  /** When `stream` is read next, `during` runs before the read is answered (once). */
  const race: { stream: string | null; during: (() => Promise<void>) | null } = {
    stream: null,
    during: null,
  };

  beforeAll(async () => {
    ({ t, m, inner, close } = await systemOnSteppedStore(NOW, (real) => ({
      readStream: async (name, opts) => {
        const read = await real.readStream(name, opts);
        if (race.stream === name && race.during) {
          const during = race.during;
          race.during = null;
          await during();
        }
        return read;
      },
    })));
  });
  afterAll(() => close?.());

  it('answers 409 package_canceled and holds no new session', async () => {
    const coach = await m.coach();
    const serviceId = await m.offering(coach, { numberOfSessions: 3, price: 90, expiresInDays: 30 });
    const client = await m.client();
    const first = await t.request('POST', `/api/v1/service/${serviceId}`, {
      token: client.token,
      body: { slots: ['2026-12-02T10:00:00'] },
    });
    expect(first.status).toBe(200);
    const { groupId, paymentId } = first.body[0];

    race.stream = `payment-${paymentId}`;
    race.during = async () => {
      const cancel = await t.request('POST', `/api/v1/payment/private/payment/${paymentId}/cancel`, {
        token: m.service(),
      });
      expect(cancel.status).toBe(200);
      // The booking process cancels the package's sessions, those it has at that moment.
      await eventually(
        async () => (await inner.readStream(`booking-${groupId}`)).events.map((e) => e.type),
        (types) => types.includes('SessionCanceled') || types.includes('GroupCanceled'),
      );
    };
    const topUp = await t.request('POST', `/api/v1/service/${serviceId}`, {
      token: client.token,
      body: { slots: ['2026-12-03T10:00:00'], packageId: groupId },
    });
    expect(race.during).toBeNull(); // the cancel did run between the read and the write
    expect(topUp.status).toBe(409);
    expect(topUp.body.error).toBe('package_canceled');
    const held = (await inner.readStream(`calendar-${coach.id}`)).events.filter(
      (e) => e.type === 'SlotsReserved' && JSON.stringify(e.data).includes('2026-12-03'),
    );
    expect(held).toEqual([]);
  });
});
