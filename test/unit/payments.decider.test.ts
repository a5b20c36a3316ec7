import fs from 'node:fs';
import path from 'node:path';
import { isLeft, isRight } from 'fp-ts/Either';
import { paymentDecider, type PaymentCommand } from '../../commands/payments/decider';
import { PAYMENT_STATUSES, type PaymentEvent, type PaymentStatus } from '../../commands/payments/events';
import { PAYMENT_TRANSITIONS } from '../../commands/payments/transitions';

const paymentId = '5d7c1f0e-8a41-4c63-9a8e-1b2c3d4e5f60';
const groupId = '6e8d2a1f-9b52-4d74-8b9f-2c3d4e5f6071';
const now = '2026-03-03T14:00:00.000Z';

const created: PaymentEvent = {
  type: 'PaymentCreated',
  data: {
    paymentId,
    groupId,
    status: 'awaiting',
    price: 50,
    currency: 'EUR',
    methodId: 1,
    method: 'card',
    coachId: '7f9e3b2a-0c63-4e85-9ca0-3d4e5f607182',
    clientId: '8a0f4c3b-1d74-4f96-8db1-4e5f60718293',
    serviceId: '9b105d4c-2e85-4a07-9ec2-5f60718293a4',
    expiresAt: '2026-03-03T15:00:00.000Z',
    createdAt: '2026-03-03T13:00:00.000Z',
  },
};
const changed = (from: PaymentStatus, to: PaymentStatus, providerEventId?: string): PaymentEvent => ({
  type: 'PaymentStatusChanged',
  data: {
    paymentId,
    groupId,
    from,
    to,
    at: now,
    reason: 'provider',
    ...(providerEventId ? { providerEventId } : {}),
  },
});
/** The shortest history that leaves the payment in `status`. */
const pathTo: Record<PaymentStatus, PaymentStatus[]> = {
  awaiting: [],
  checkout: ['checkout'],
  review: ['checkout', 'review'],
  failed: ['checkout', 'failed'],
  received: ['checkout', 'received'],
  refund: ['checkout', 'received', 'refund'],
  delivered: ['checkout', 'received', 'delivered'],
  canceled: ['canceled'],
  deleted: ['deleted'],
};
const historyIn = (status: PaymentStatus): PaymentEvent[] => {
  const events: PaymentEvent[] = [created];
  let from: PaymentStatus = 'awaiting';
  for (const to of pathTo[status]) {
    events.push(changed(from, to));
    from = to;
  }
  return events;
};

const given = (events: PaymentEvent[]) => ({
  when: (command: PaymentCommand) =>
    paymentDecider.decide(command, events.reduce(paymentDecider.evolve, paymentDecider.initialState())),
});
const update = (to: PaymentStatus, extra: Partial<PaymentCommand> = {}): PaymentCommand =>
  ({ type: 'UpdatePayment', paymentId, to, now, ...extra }) as PaymentCommand;

describe('payment decider', () => {
  const allowed = PAYMENT_STATUSES.flatMap((from) => PAYMENT_TRANSITIONS[from].map((to) => [from, to]));
  it.each(allowed)('moves %s -> %s', (from, to) => {
    expect(given(historyIn(from)).when(update(to))).toEqual({
      _tag: 'Right',
      right: [changed(from, to)],
    });
  });

  it('covers the whole table of DESIGN section 7', () => {
    expect(allowed).toHaveLength(20);
  });

  // DESIGN section 7, copied as written (not derived from the code's table, which it checks).
  const DESIGN_TABLE: Record<PaymentStatus, PaymentStatus[]> = {
    awaiting: ['checkout', 'canceled', 'deleted'],
    checkout: ['received', 'review', 'failed', 'canceled'],
    review: ['received', 'failed', 'canceled'],
    failed: ['checkout', 'canceled', 'deleted'],
    received: ['delivered', 'refund'],
    refund: ['canceled', 'received'],
    delivered: ['refund', 'deleted'],
    canceled: ['deleted'],
    deleted: [],
  };
  it('decides every one of the 81 moves as DESIGN section 7 says: the move, or 409 invalid_transition', () => {
    for (const from of PAYMENT_STATUSES)
      for (const to of PAYMENT_STATUSES) {
        const result = given(historyIn(from)).when(update(to));
        const verdict = isRight(result) ? result.right.map((e) => e.data) : result.left.code;
        expect([from, to, verdict]).toEqual([
          from,
          to,
          DESIGN_TABLE[from].includes(to) ? [expect.objectContaining({ from, to })] : 'invalid_transition',
        ]);
      }
  });

  it('is the table docs/api.md states ("Payment transitions"), not only a design note outside the repository', () => {
    const doc = fs.readFileSync(path.join(__dirname, '../../docs/api.md'), 'utf8');
    const section = doc.split('### Payment transitions\n')[1]?.split('\n#')[0] ?? '';
    const stated = Object.fromEntries(
      [...section.matchAll(/^\| `(\w+)` +\| (.*?) *\|$/gm)].map(([, from, to]) => [
        from,
        to === '(none)' ? [] : [...to!.matchAll(/`(\w+)`/g)].map((m) => m[1]),
      ]),
    );
    expect(stated).toEqual(DESIGN_TABLE);
  });

  const refused: [PaymentStatus, PaymentStatus][] = [
    ['awaiting', 'received'],
    ['awaiting', 'delivered'],
    ['awaiting', 'awaiting'],
    ['checkout', 'delivered'],
    ['received', 'canceled'],
    ['received', 'awaiting'],
    ['delivered', 'received'],
    ['canceled', 'checkout'],
    ['deleted', 'awaiting'],
    ['deleted', 'canceled'],
  ];
  it.each(refused)('refuses %s -> %s with invalid_transition', (from, to) => {
    const result = given(historyIn(from)).when(update(to));
    expect(isLeft(result) && result.left.code).toBe('invalid_transition');
  });

  it('answers payment_not_found for a stream with no PaymentCreated', () => {
    const result = given([]).when(update('checkout'));
    expect(isLeft(result) && result.left.code).toBe('payment_not_found');
  });

  it('keeps clientSecret and checkout data of the provider update in the event and the state', () => {
    const cmd = update('checkout', { clientSecret: 'cs_1', checkout: { url: 'https://pay' } });
    const result = given([created]).when(cmd);
    expect(result).toEqual({
      _tag: 'Right',
      right: [
        {
          type: 'PaymentStatusChanged',
          data: expect.objectContaining({ clientSecret: 'cs_1', checkout: { url: 'https://pay' } }),
        },
      ],
    });
  });

  it("takes an update sent with the payment's own record fields, and refuses one naming another", () => {
    const own = { price: 50, currency: 'eur', methodId: 1, coachId: created.data.coachId.toUpperCase() };
    expect(given([created]).when(update('checkout', { expected: own }))).toEqual({
      _tag: 'Right',
      right: [changed('awaiting', 'checkout')],
    });
    expect(given([created]).when(update('checkout', { expected: { ...own, price: 50.01 } }))).toEqual({
      _tag: 'Left',
      left: {
        code: 'validation',
        message: 'price does not match the payment (50): an update moves the status only',
        locs: [['body', 'price']],
      },
    });
  });

  it('applies a provider event id once: a redelivery decides nothing', () => {
    const history = [created, changed('awaiting', 'checkout', 'evt_1')];
    expect(given(history).when(update('checkout', { providerEventId: 'evt_1' }))).toEqual({
      _tag: 'Right',
      right: [],
    });
    // Even where the same id would be a legal move now, it is not applied twice.
    const later = [...history, changed('checkout', 'failed', 'evt_2')];
    expect(given(later).when(update('checkout', { providerEventId: 'evt_1' }))).toEqual({
      _tag: 'Right',
      right: [],
    });
  });

  it('ignores a late provider update to a status the payment has already left', () => {
    const history = [
      created,
      changed('awaiting', 'checkout', 'evt_1'),
      changed('checkout', 'received', 'evt_3'),
    ];
    expect(given(history).when(update('checkout', { providerEventId: 'evt_2' }))).toEqual({
      _tag: 'Right',
      right: [],
    });
  });

  it('still refuses a provider update to a status the payment has never been in', () => {
    const result = given([created]).when(update('delivered', { providerEventId: 'evt_9' }));
    expect(isLeft(result) && result.left.code).toBe('invalid_transition');
  });

  it('refuses a late-looking update without a provider event id', () => {
    const result = given(historyIn('received')).when(update('checkout'));
    expect(isLeft(result) && result.left.code).toBe('invalid_transition');
  });

  it('cancels for the service with reason canceled_by_service, and refuses once received', () => {
    const cancel: PaymentCommand = { type: 'CancelPayment', paymentId, now };
    expect(given(historyIn('checkout')).when(cancel)).toEqual({
      _tag: 'Right',
      right: [
        {
          type: 'PaymentStatusChanged',
          data: {
            paymentId,
            groupId,
            from: 'checkout',
            to: 'canceled',
            at: now,
            reason: 'canceled_by_service',
          },
        },
      ],
    });
    const refused = given(historyIn('received')).when(cancel);
    expect(isLeft(refused) && refused.left.code).toBe('invalid_transition');
  });

  describe('expiry', () => {
    const expire = (at: string): PaymentCommand => ({ type: 'ExpirePayment', paymentId, now: at });
    it.each(['awaiting', 'failed'] as PaymentStatus[])(
      'cancels an unpaid (%s) payment at its expiresAt with reason expired',
      (status) => {
        expect(given(historyIn(status)).when(expire('2026-03-03T15:00:00.000Z'))).toEqual({
          _tag: 'Right',
          right: [
            {
              type: 'PaymentStatusChanged',
              data: {
                paymentId,
                groupId,
                from: status,
                to: 'canceled',
                at: '2026-03-03T15:00:00.000Z',
                reason: 'expired',
              },
            },
          ],
        });
      },
    );
    it('never cancels a cash payment (paid to the coach at the session) as unpaid', () => {
      const cash = { ...created, data: { ...created.data, method: 'cash', methodId: 2 } } as PaymentEvent;
      expect(given([cash]).when(expire('2026-04-03T15:00:00.000Z'))).toEqual({ _tag: 'Right', right: [] });
    });
    it('does nothing before expiresAt', () => {
      expect(given([created]).when(expire('2026-03-03T14:59:59.999Z'))).toEqual({ _tag: 'Right', right: [] });
    });
    it.each([
      'checkout',
      'review',
      'received',
      'refund',
      'delivered',
      'canceled',
      'deleted',
    ] as PaymentStatus[])('does nothing to a %s payment (money in flight, paid or closed)', (status) => {
      expect(given(historyIn(status)).when(expire('2026-03-04T00:00:00.000Z'))).toEqual({
        _tag: 'Right',
        right: [],
      });
    });
  });

  describe('settling a booking whose sessions are all gone', () => {
    const settle: PaymentCommand = {
      type: 'SettleCanceledBooking',
      paymentId,
      now: '2026-03-03T12:00:00.000Z',
    };
    it.each([
      ['awaiting', 'canceled'],
      ['failed', 'canceled'],
      ['received', 'refund'],
    ] as [PaymentStatus, PaymentStatus][])('moves a %s payment to %s', (from, to) => {
      const r = given(historyIn(from)).when(settle);
      expect(isRight(r) && r.right.map((e) => e.data)).toEqual([
        expect.objectContaining({ from, to, reason: 'booking_canceled' }),
      ]);
    });
    it.each(['checkout', 'review', 'refund', 'delivered', 'canceled', 'deleted'] as PaymentStatus[])(
      'leaves a %s payment as it is',
      (status) => {
        expect(given(historyIn(status)).when(settle)).toEqual({ _tag: 'Right', right: [] });
      },
    );
  });

  it('refuses (409) a provider update to a status seen before once the payment is closed, rather than ignoring it', () => {
    const closed = [
      ...historyIn('failed'),
      {
        type: 'PaymentStatusChanged' as const,
        data: {
          paymentId,
          groupId,
          from: 'failed' as const,
          to: 'canceled' as const,
          at: '2026-03-03T15:00:00.000Z',
          reason: 'expired',
        },
      },
    ];
    // failed was reached through checkout, so checkout counts as seen before.
    expect(closed.some((e) => e.type === 'PaymentStatusChanged' && e.data.to === 'checkout')).toBe(true);
    const r = given(closed).when({
      type: 'UpdatePayment',
      paymentId,
      to: 'checkout',
      providerEventId: 'evt_new_attempt',
      now: '2026-03-03T16:00:00.000Z',
    });
    expect(isLeft(r) && r.left.code).toBe('invalid_transition');
  });

  it('settles a canceled booking once: a replayed cause does not refund again', () => {
    const refunded = [
      ...historyIn('received'),
      {
        type: 'PaymentStatusChanged' as const,
        data: {
          paymentId,
          groupId,
          from: 'received' as const,
          to: 'refund' as const,
          at: '2026-03-03T12:00:00.000Z',
          reason: 'booking_canceled',
        },
      },
      {
        type: 'PaymentStatusChanged' as const,
        data: {
          paymentId,
          groupId,
          from: 'refund' as const,
          to: 'received' as const,
          at: '2026-03-03T13:00:00.000Z',
          reason: 'provider',
        },
      },
    ];
    expect(
      given(refunded).when({ type: 'SettleCanceledBooking', paymentId, now: '2026-03-03T14:00:00.000Z' }),
    ).toEqual({ _tag: 'Right', right: [] });
  });
});
