import { isLeft, isRight } from 'fp-ts/Either';
import { MAX_MAIL_ATTEMPTS, deliveryDecider, type DeliveryCommand } from '../../commands/delivery/decider';
import type { DeliveryEvent } from '../../commands/delivery/events';
import { fold } from '../../src/decider';

const T0 = '2026-12-01T08:00:00.000Z';
const plus = (ms: number) => new Date(Date.parse(T0) + ms).toISOString();
const LEASE = 120_000;
const message = { key: 'cause-1/user-1', to: 'a@example.com', subject: 's', text: 't', headers: {} };
const first = {
  causeEventId: 'cause-1',
  recipient: 'user-1',
  message,
  template: 'booking',
  messageId: '<m@x>',
};
const claim = (now: string, withFirst = true): DeliveryCommand => ({
  type: 'Claim',
  ...(withFirst ? { first } : {}),
  now,
  leaseMs: LEASE,
  by: 'host:1',
});

/** given events, when command, then events (or the error code). */
function when(given: DeliveryEvent[], command: DeliveryCommand) {
  const r = deliveryDecider.decide(command, fold(deliveryDecider, given));
  return isRight(r) ? r.right : { error: r.left.code };
}
const claimedEvents = (): DeliveryEvent[] => when([], claim(T0)) as DeliveryEvent[];

describe('delivery ledger decider', () => {
  it('claims a new delivery with the rendered message, its Message-ID and a lease', () => {
    expect(claimedEvents()).toEqual([
      {
        type: 'DeliveryClaimed',
        data: { ...first, attempt: 1, claimedAt: T0, leaseUntil: plus(LEASE), by: 'host:1' },
      },
    ]);
  });

  it('refuses a claim while another sender holds the lease, and takes it over after', () => {
    const given = claimedEvents();
    expect(when(given, claim(plus(LEASE - 1)))).toEqual({ error: 'delivery_not_claimable' });
    const takeover = when(given, claim(plus(LEASE), false)) as DeliveryEvent[];
    expect(takeover).toEqual([
      {
        type: 'DeliveryClaimed',
        data: expect.objectContaining({
          messageId: '<m@x>',
          attempt: 1,
          takeover: true,
          leaseUntil: plus(2 * LEASE),
        }),
      },
    ]);
    // The takeover sends the message of the first claim.
    const state = fold(deliveryDecider, [...given, ...takeover]);
    expect(state.status === 'sending' && state.message).toEqual(message);
  });

  it('never claims a sent or failed delivery again', () => {
    const sent = [
      ...claimedEvents(),
      ...(when(claimedEvents(), { type: 'RecordSent', messageId: '<m@x>', now: T0 }) as DeliveryEvent[]),
    ];
    expect(when(sent, claim(plus(10 * LEASE)))).toEqual({ error: 'delivery_not_claimable' });
    expect(when(sent, { type: 'RecordSent', messageId: '<m@x>', now: T0 })).toEqual([]);
    const failed = [
      ...claimedEvents(),
      ...(when(claimedEvents(), {
        type: 'RecordRefusal',
        error: '550',
        permanent: true,
        now: T0,
      }) as DeliveryEvent[]),
    ];
    expect(failed[1]!.type).toBe('DeliveryFailed');
    expect(when(failed, claim(plus(10 * LEASE)))).toEqual({ error: 'delivery_not_claimable' });
  });

  it('defers a temporary refusal with backoff, claims it again when due, and gives up after the last attempt', () => {
    let history = claimedEvents();
    for (let attempt = 1; attempt < MAX_MAIL_ATTEMPTS; attempt++) {
      const deferred = when(history, {
        type: 'RecordRefusal',
        error: '451',
        permanent: false,
        now: T0,
      }) as DeliveryEvent[];
      expect(deferred[0]!.type).toBe('DeliveryDeferred');
      const due = (deferred[0]!.data as { nextAttemptAt: string }).nextAttemptAt;
      history = [...history, ...deferred];
      expect(when(history, claim(plus(-1), false))).toEqual({ error: 'delivery_not_claimable' });
      const again = when(history, claim(due, false)) as DeliveryEvent[];
      expect((again[0]!.data as { attempt: number }).attempt).toBe(attempt + 1);
      history = [...history, ...again];
    }
    const last = when(history, {
      type: 'RecordRefusal',
      error: '451',
      permanent: false,
      now: T0,
    }) as DeliveryEvent[];
    expect(last[0]!.type).toBe('DeliveryFailed');
  });

  it('requeues only a failed delivery, due at once', () => {
    const given = claimedEvents();
    expect(when(given, { type: 'Requeue', now: T0, by: 'admin' })).toEqual({ error: 'delivery_not_failed' });
    const failed = [
      ...given,
      ...(when(given, { type: 'RecordRefusal', error: 'x', permanent: true, now: T0 }) as DeliveryEvent[]),
    ];
    const requeued = when(failed, { type: 'Requeue', now: plus(1000), by: 'admin' }) as DeliveryEvent[];
    expect(requeued).toEqual([{ type: 'DeliveryRequeued', data: { at: plus(1000), by: 'admin' } }]);
    const again = when([...failed, ...requeued], claim(plus(1000), false)) as DeliveryEvent[];
    expect((again[0]!.data as { attempt: number }).attempt).toBe(1);
  });

  it('cannot claim a delivery nobody ever claimed without the message', () => {
    const r = deliveryDecider.decide(claim(T0, false), deliveryDecider.initialState());
    expect(isLeft(r)).toBe(true);
  });
});
