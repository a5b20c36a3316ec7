import { isLeft, isRight } from 'fp-ts/Either';
import { randomUUID } from 'node:crypto';
import type { BookingEvent } from '../../commands/booking/events';
import { emailRequest } from '../../commands/email/decider';
import type { EmailRequested } from '../../commands/email/events';
import { inbox, type NotificationCommand } from '../../commands/notifications/decider';
import type { NotificationEvent, NotificationFields } from '../../commands/notifications/events';
import {
  cancelToldBySessions,
  paymentNoticeMessage,
  paymentNoticeType,
  reviewNoticeMessage,
} from '../../commands/notifications/inAppNotices';
import { noticeMessage, sessionNotices, uuidFrom } from '../../commands/notifications/sessionNotices';
import type { PaymentStatus } from '../../commands/payments/events';
import { fold } from '../../src/decider';
import { emailProcess } from '../../projections/emailProcess';
import { notificationProcess } from '../../projections/notificationProcess';
import type { Projection } from '../../projections/runner';
import { webhookProcess } from '../../projections/webhookProcess';
import type { Database } from '../../src/db/database';
import type { EventStore } from '../../src/eventstore/types';
import { createLogger } from '../../src/log';
import type { Mailer } from '../../src/mail/mailer';

const userId = randomUUID();
const NOW = '2026-12-01T08:00:00.000Z';
const fields = (over: Partial<NotificationFields> = {}): NotificationFields => ({
  notificationId: randomUUID(),
  userId,
  type: 'session_booked',
  contentType: 'booking',
  contentId: randomUUID(),
  message: 'New booking',
  causationEventId: randomUUID(),
  createdAt: NOW,
  ...over,
});
const created = (f: NotificationFields): NotificationEvent => ({ type: 'NotificationCreated', data: f });

function given(events: NotificationEvent[], command: NotificationCommand) {
  return inbox.decide(command, fold(inbox, events));
}

describe('inbox decider', () => {
  it('creates a notification once: the same id or the same cause again decides nothing', () => {
    const n = fields();
    expect(given([], { type: 'CreateNotification', notification: n })).toEqual({
      _tag: 'Right',
      right: [created(n)],
    });
    expect(given([created(n)], { type: 'CreateNotification', notification: n })).toEqual({
      _tag: 'Right',
      right: [],
    });
    const sameCause = fields({ causationEventId: n.causationEventId });
    expect(given([created(n)], { type: 'CreateNotification', notification: sameCause })).toEqual({
      _tag: 'Right',
      right: [],
    });
  });

  it("marks only unread notifications read, and refuses ids that are not the user's (none marked)", () => {
    const a = fields();
    const b = fields();
    const read: NotificationEvent = {
      type: 'NotificationsRead',
      data: { userId, notificationIds: [a.notificationId], at: NOW },
    };
    expect(
      given([created(a), created(b), read], {
        type: 'MarkRead',
        userId,
        notificationIds: [a.notificationId, b.notificationId.toUpperCase()],
        now: NOW,
      }),
    ).toEqual({
      _tag: 'Right',
      right: [{ type: 'NotificationsRead', data: { userId, notificationIds: [b.notificationId], at: NOW } }],
    });
    const unknown = randomUUID();
    const refused = given([created(a)], {
      type: 'MarkRead',
      userId,
      notificationIds: [a.notificationId, unknown],
      now: NOW,
    });
    expect(refused).toEqual({
      _tag: 'Left',
      left: { code: 'notification_not_found', message: `no such notification of yours: ${unknown}` },
    });
  });

  it('records delivery on the first report only', () => {
    const a = fields();
    const cmd: NotificationCommand = {
      type: 'RecordDelivered',
      userId,
      notificationIds: [a.notificationId],
      now: NOW,
    };
    const first = given([created(a)], cmd);
    expect(isRight(first) && first.right).toEqual([
      { type: 'NotificationsDelivered', data: { userId, notificationIds: [a.notificationId], at: NOW } },
    ]);
    expect(given([created(a), ...(isRight(first) ? first.right : [])], cmd)).toEqual({
      _tag: 'Right',
      right: [],
    });
  });

  it('registers a channel once per type and address', () => {
    const cmd: NotificationCommand = {
      type: 'RegisterChannel',
      userId,
      channelId: 'c1',
      channelType: 'webhook',
      address: 'https://example.com/hook',
      now: NOW,
    };
    const first = given([], cmd);
    expect(isRight(first) && first.right[0]?.type).toBe('NotificationChannelRegistered');
    expect(given(isRight(first) ? first.right : [], { ...cmd, channelId: 'c2' })).toEqual({
      _tag: 'Right',
      right: [],
    });
  });

  it('knows a webhook URL again in another spelling of it (scheme and host case, default port, fragment)', () => {
    const cmd: NotificationCommand = {
      type: 'RegisterChannel',
      userId,
      channelId: 'c1',
      channelType: 'webhook',
      // As an earlier version stored it: the address as the user wrote it.
      address: 'HTTPS://Example.COM:443/hook#top',
      now: NOW,
    };
    const first = given([], cmd);
    const registered = isRight(first) ? first.right : [];
    for (const address of ['https://example.com/hook', 'https://EXAMPLE.com/hook#other'])
      expect(given(registered, { ...cmd, channelId: 'c2', address })).toEqual({ _tag: 'Right', right: [] });
    // Another path is another channel (paths are case-sensitive).
    const other = given(registered, { ...cmd, channelId: 'c3', address: 'https://example.com/Hook' });
    expect(isRight(other) && other.right).toHaveLength(1);
  });

  it('removes a registered channel once; unknown or removed ids are channel_not_found; the address is free again', () => {
    const channelId = randomUUID();
    const registered = [
      {
        type: 'NotificationChannelRegistered' as const,
        data: { userId, channelId, type: 'webhook' as const, address: 'https://example.com/hook', at: NOW },
      },
    ];
    const remove: NotificationCommand = {
      type: 'RemoveChannel',
      userId,
      channelId: channelId.toUpperCase(),
      now: NOW,
    };
    const removed = given(registered, remove);
    expect(removed).toEqual({
      _tag: 'Right',
      right: [{ type: 'NotificationChannelRemoved', data: { userId, channelId, at: NOW } }],
    });
    const after = [...registered, ...(isRight(removed) ? removed.right : [])];
    expect(given(after, remove)).toMatchObject({ _tag: 'Left', left: { code: 'channel_not_found' } });
    expect(given([], remove)).toMatchObject({ _tag: 'Left', left: { code: 'channel_not_found' } });
    const again = given(after, {
      type: 'RegisterChannel',
      userId,
      channelId: 'c2',
      channelType: 'webhook',
      address: 'https://example.com/hook',
      now: NOW,
    });
    expect(isRight(again) && again.right[0]?.type).toBe('NotificationChannelRegistered');
  });

  it('removes a channel whose receiver is gone with its notice, once; a second 410 removes nothing', () => {
    const channelId = randomUUID();
    const deliveryId = randomUUID();
    const registered = [
      {
        type: 'NotificationChannelRegistered' as const,
        data: { userId, channelId, type: 'webhook' as const, address: 'https://example.com/hook', at: NOW },
      },
    ];
    const notice = fields({ type: 'webhook_removed', contentId: channelId, causationEventId: deliveryId });
    const gone: NotificationCommand = {
      type: 'RemoveChannel',
      userId,
      channelId,
      now: NOW,
      gone: { deliveryId, notice },
    };
    const removed = given(registered, gone);
    expect(removed).toEqual({
      _tag: 'Right',
      right: [
        {
          type: 'NotificationChannelRemoved',
          data: { userId, channelId, at: NOW, reason: 'receiver_gone', deliveryId },
        },
        { type: 'NotificationCreated', data: notice },
      ],
    });
    const after = [...registered, ...(isRight(removed) ? removed.right : [])];
    // Another delivery claimed before the removal answered 410 too: nothing to do, and not an error.
    expect(given(after, { ...gone, gone: { deliveryId: randomUUID(), notice } })).toEqual({
      _tag: 'Right',
      right: [],
    });
  });
});

describe('e-mail request decider', () => {
  const request: EmailRequested['data'] = {
    emailId: randomUUID(),
    userId,
    to: 'a@example.com',
    groupId: null,
    sessionId: null,
    facts: { template: 'verification', role: 'user', recipientName: 'Ann', code: '1' },
    requestedAt: NOW,
  };
  it('records a request once', () => {
    const first = emailRequest.decide({ type: 'RequestEmail', request }, emailRequest.initialState());
    expect(isRight(first) && first.right).toEqual([{ type: 'EmailRequested', data: request }]);
    const again = emailRequest.decide(
      { type: 'RequestEmail', request },
      fold(emailRequest, [{ type: 'EmailRequested', data: request }]),
    );
    expect(isLeft(again)).toBe(true);
  });
});

describe('who hears of a session event', () => {
  const ref = {
    groupId: randomUUID(),
    sessionId: randomUUID(),
    coachId: randomUUID(),
    clientId: randomUUID(),
    serviceId: randomUUID(),
  };
  const to = (e: BookingEvent) => sessionNotices(e).map((n) => [n.userId, n.type]);
  it('approve and decline tell the client, dispute the coach', () => {
    expect(to({ type: 'SessionApproved', data: { ...ref, at: NOW } })).toEqual([
      [ref.clientId, 'session_approved'],
    ]);
    expect(to({ type: 'SessionDeclined', data: { ...ref, reason: '', at: NOW } })).toEqual([
      [ref.clientId, 'session_declined'],
    ]);
    expect(to({ type: 'SessionDisputed', data: { ...ref, reason: 'x', at: NOW } })).toEqual([
      [ref.coachId, 'session_disputed'],
    ]);
    expect(to({ type: 'SessionCompleted', data: { ...ref, completedAt: NOW } })).toEqual([]);
  });
  it('a cancellation tells the other party, both when the system canceled', () => {
    const cancel = (by: 'client' | 'coach' | 'system'): BookingEvent => ({
      type: 'SessionCanceled',
      data: { ...ref, by, reason: '', at: NOW },
    });
    expect(to(cancel('client'))).toEqual([[ref.coachId, 'session_canceled']]);
    expect(to(cancel('coach'))).toEqual([[ref.clientId, 'session_canceled']]);
    expect(to(cancel('system')).map(([u]) => u)).toEqual([ref.clientId, ref.coachId]);
  });
  it("the in-app message tells a dispute's reason to the coach, and none for blanks", () => {
    const [withReason] = sessionNotices({
      type: 'SessionDisputed',
      data: { ...ref, reason: 'The coach did not come', at: NOW },
    });
    expect(noticeMessage(withReason!, 'Tennis basics')).toBe(
      'Your client disputed the session of Tennis basics. Reason: The coach did not come',
    );
    const [blank] = sessionNotices({ type: 'SessionDeclined', data: { ...ref, reason: ' \n', at: NOW } });
    expect(noticeMessage(blank!, 'Tennis basics')).toBe('Your session of Tennis basics was declined');
  });
  it('derives stable uuids', () => {
    expect(uuidFrom('a', 'b')).toBe(uuidFrom('a', 'b'));
    expect(uuidFrom('a', 'b')).not.toBe(uuidFrom('a', 'c'));
    expect(uuidFrom('a')).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-8[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
  });
});

describe('what orders the reactions of the notice, e-mail and webhook processes (orderedBy)', () => {
  const recorded = (type: string, data: Record<string, unknown>) =>
    ({ type, data, id: randomUUID() }) as unknown as Parameters<NonNullable<Projection['orderedBy']>>[0];
  const processes = [
    notificationProcess({} as EventStore),
    emailProcess({
      store: {} as EventStore,
      mailer: {} as Mailer,
      log: createLogger({}),
      clock: () => new Date(),
      mailLeaseMs: 1,
    }),
  ];

  it.each(processes.map((p) => [p.name, p] as const))(
    '%s: a booking and its later events share a key; two bookings of one coach or one client share one; others none',
    (_, p) => {
      const keys = (type: string, data: Record<string, unknown>) =>
        new Set(p.orderedBy!(recorded(type, data)));
      const shares = (a: Set<string>, b: Set<string>) => [...a].some((k) => b.has(k));
      const booked = keys('SessionsBooked', { groupId: 'g1', clientId: 'c1', coachId: 'k1' });
      const canceled = keys('SessionCanceled', { groupId: 'g1', sessionId: 's1' });
      const sameCoach = keys('SessionsBooked', { groupId: 'g2', clientId: 'c2', coachId: 'k1' });
      const sameClient = keys('SessionsBooked', { groupId: 'g3', clientId: 'c1', coachId: 'k3' });
      const unrelated = keys('SessionsBooked', { groupId: 'g4', clientId: 'c4', coachId: 'k4' });
      expect([shares(booked, canceled), shares(booked, sameCoach), shares(booked, sameClient)]).toEqual([
        true,
        true,
        true,
      ]);
      expect(shares(booked, unrelated)).toBe(false);
    },
  );

  it('the e-mail process keys a requested e-mail by its user; the webhook process a notification by its user', () => {
    const mail = processes[1]!.orderedBy!(recorded('EmailRequested', { userId: 'u1', to: 'a@b.c' }));
    const hook = webhookProcess({ store: {} as EventStore, db: {} as Database }).orderedBy!(
      recorded('NotificationCreated', { userId: 'u1', notificationId: 'n1' }),
    );
    expect([mail, hook]).toEqual([['u1'], ['u1']]);
  });
});

describe('in-app notices of reviews and payments', () => {
  const move = (from: PaymentStatus, to: PaymentStatus, reason = 'provider') => ({
    paymentId: 'p1',
    groupId: 'g1',
    from,
    to,
    reason,
    at: NOW,
  });

  it('a payment move tells its client of money received, refunded, canceled or failed, and of nothing else', () => {
    expect(
      [
        move('checkout', 'received'),
        move('review', 'received'),
        move('refund', 'received'),
        move('received', 'refund', 'booking_canceled'),
        move('delivered', 'refund'),
        move('awaiting', 'canceled', 'expired'),
        move('refund', 'canceled'),
        move('checkout', 'canceled', 'canceled_by_service'),
        move('checkout', 'failed'),
        move('awaiting', 'failed'),
      ].map(paymentNoticeType),
    ).toEqual([
      'payment_received',
      'payment_received',
      'payment_received',
      'payment_refund',
      'payment_refund',
      'payment_canceled',
      'payment_canceled',
      'payment_canceled',
      'payment_failed',
      'payment_failed',
    ]);
    // Nothing paid and the session's notice told it (or the client did it): the follow-up of a last session gone.
    expect(paymentNoticeType(move('awaiting', 'canceled', 'booking_canceled'))).toBeNull();
    for (const [from, to] of [
      ['awaiting', 'checkout'],
      ['checkout', 'review'],
      ['failed', 'checkout'],
      ['received', 'delivered'],
      ['delivered', 'deleted'],
      ['awaiting', 'deleted'],
      ['canceled', 'deleted'],
    ] as const)
      expect([from, to, paymentNoticeType(move(from, to))]).toEqual([from, to, null]);
  });

  it('a cancel is told by the session notices while a session is open or was canceled for the payment', () => {
    expect(cancelToldBySessions([{ state: 'new' }])).toBe(true);
    expect(cancelToldBySessions([{ state: 'completed' }, { state: 'approved' }])).toBe(true);
    expect(cancelToldBySessions([{ state: 'canceled', canceledFor: 'payment_canceled' }])).toBe(true);
    expect(cancelToldBySessions([{ state: 'canceled', canceledFor: 'ill' }, { state: 'completed' }])).toBe(
      false,
    );
    expect(cancelToldBySessions([])).toBe(false);
  });

  it('words each notice for its reader', () => {
    expect(reviewNoticeMessage('Tennis basics', 5)).toBe('New review of Tennis basics (5/5)');
    const words = (type: Parameters<typeof paymentNoticeMessage>[0], from: PaymentStatus, reason: string) =>
      paymentNoticeMessage(type, 'Tennis basics', { from, reason });
    expect(words('payment_received', 'checkout', 'provider')).toBe('Payment received for Tennis basics');
    expect(words('payment_refund', 'received', 'booking_canceled')).toBe(
      'Your payment for Tennis basics is being refunded',
    );
    expect(words('payment_canceled', 'awaiting', 'expired')).toBe(
      'Your payment for Tennis basics was canceled: it was not made in time',
    );
    expect(words('payment_canceled', 'refund', 'provider')).toBe(
      'Your payment for Tennis basics was canceled after its refund',
    );
    expect(words('payment_canceled', 'checkout', 'canceled_by_service')).toBe(
      'Your payment for Tennis basics was canceled',
    );
    expect(
      paymentNoticeMessage('payment_failed', 'Tennis basics', { from: 'checkout', reason: 'provider' }),
    ).toBe('Your payment for Tennis basics failed');
    expect(
      paymentNoticeMessage(
        'payment_failed',
        'Tennis basics',
        { from: 'checkout', reason: 'provider' },
        '2026-12-02 09:00 (Europe/Berlin)',
      ),
    ).toBe(
      'Your payment for Tennis basics failed: pay again by 2026-12-02 09:00 (Europe/Berlin), or the booking is canceled then',
    );
  });

  it('the notification process leaves a new payment alone and reads no stream for a move that tells no one', async () => {
    // A store with nothing in it: reading any stream would throw.
    const p = notificationProcess({} as EventStore);
    expect(p.handles).not.toContain('PaymentCreated');
    expect(p.handles).toEqual(expect.arrayContaining(['PaymentStatusChanged', 'SessionReviewed']));
    for (const data of [
      move('awaiting', 'checkout'),
      move('received', 'delivered'),
      move('awaiting', 'canceled', 'booking_canceled'),
    ])
      await expect(
        p.react!({ type: 'PaymentStatusChanged', data, id: randomUUID() } as never),
      ).resolves.toBeUndefined();
    await expect(
      p.react!({
        type: 'PaymentStatusChanged',
        data: move('checkout', 'received'),
        id: randomUUID(),
      } as never),
    ).rejects.toThrow();
  });
});
