import Router from '@koa/router';
import type { Context } from 'koa';
import * as t from 'io-ts';
import type { AppDeps } from '../../src/deps';
import { ConcurrencyConflictError, handleCommand, readState } from '../../src/commandHandler';
import { keptState, loadState, type Folder, type Loaded } from '../../src/foldedStates';
import {
  type EventMetadata,
  type StreamCondition,
  WrongExpectedRevisionError,
} from '../../src/eventstore/types';
import { currentPrincipal, requireRole, authenticated } from '../../src/http/auth';
import { domainErrorToHttp, metadataOf, runCommand } from '../../src/http/command';
import { HttpError, ValidationError, busy, notFound } from '../../src/http/errors';
import { idempotent } from '../../src/http/idempotency';
import { Uuid, decode } from '../../src/http/validation';
import { sessionRecordOf, sessionRecordsOfHold, toSessionOut } from '../../src/resources/session';
import { addressBook } from '../addresses/decider';
import { addressStream } from '../addresses/events';
import { calendar } from '../calendar/decider';
import { calendarStream, type SlotMoved, type SlotsReserved } from '../calendar/events';
import { tooFarMessage, travelMinutes } from '../calendar/travel';
import { BookingBody, DisputeBody, METHOD_IDS, ReasonBody, RescheduleBody, ReviewBody } from './codecs';
import { listBooking, listingAppend, sessionParty } from './lookups';
import { bookingAppends, completeBooking, packageJoinAppend } from './complete';
import { paymentDecider } from '../payments/decider';
import { paymentStream } from '../payments/events';
import { EXPIRABLE_STATUSES, UNPAID_STATUSES } from '../payments/transitions';
import { booking, refuseReschedule, type Booking, type BookingCommand, type By } from './decider';
import { bookingStream, type BookingEvent } from './events';
import { service } from '../services/decider';
import { serviceStream } from '../services/events';
import { SYSTEM_ACTOR } from '../../src/paymentExpirySweeper';

/** An unpaid booking holds its slots this long (and never past one hour before the first session). */
export const PAYMENT_WINDOW_HOURS = 24;
/** Read models a booking's reply and the caller's next reads depend on. */
const BOOKING_READ_MODELS = ['calendar', 'sessions', 'payments'];

const ServicePath = t.type({ service_id: Uuid });
const SessionPath = t.type({ session_id: Uuid });

/**
 * Where the session takes place and how far the coach travels, from the coach's address book
 * (`addresses-<coachId>`, the log, not a read model): `addressId` names one of the coach's saved places
 * (no travel); without it the session is at the client's place (`address`, `position`), and the coach
 * travels there from its default address. Null when `addressId` is not one of the coach's addresses.
 */
function placeOf(book: ReturnType<typeof addressBook.initialState>, body: BookingBody) {
  const clientLocation = body.position ? { lat: body.position.lat, lng: body.position.lng } : null;
  const common = { clientAddress: body.address ?? '', clientLocation };
  if (body.addressId) {
    const addressId = body.addressId.toLowerCase();
    const at = book.addresses.find((a) => a.id === addressId);
    if (!at) return null;
    // The place as it is now, kept with the session: it stays where it was booked if the coach deletes it.
    return { ...common, addressId, place: { name: at.name, address: at.address }, minutesTravel: 0 };
  }
  const base = book.addresses.find((a) => a.isDefault) ?? null;
  return { ...common, addressId: null, minutesTravel: travelMinutes(base, clientLocation) };
}

/** A session still on: neither declined nor canceled (a booking with none left keeps no money). */
const isOn = (s: { state: string }) => s.state !== 'declined' && s.state !== 'canceled';

/** A stream a booking decided on without writing it: it must be unchanged when the hold is written. */
const unchanged = (streamName: string, read: Loaded<unknown>): StreamCondition => ({
  streamName,
  condition: true,
  expectedRevision: read.revision,
});

/**
 * A booking to decide again on the streams as read: it refused on guessed (kept) states, or the service or
 * the address book changed between its read and the hold's write. Nothing was written.
 */
class DecideAgain extends Error {}

export function bookingCommands(deps: AppDeps): Router {
  const router = new Router();

  /**
   * A package to book against, from the log: its booking stream (the calendar decider then checks that it
   * is the caller's, of this service, not expired and not used up) and its payment's status.
   */
  const packageRef = async (groupId: string, clientId: string, serviceId: string) => {
    const bookingRead = await loadState(deps.store, bookingStream(groupId), booking);
    const b = bookingRead.state;
    if (!b.groupId || b.clientId !== clientId)
      throw notFound('package_not_found', 'packageId is not one of your bookings');
    // Also a package of another coach's service, which that coach's calendar (the decider) never saw.
    if (b.serviceId !== serviceId)
      throw new ValidationError([
        { loc: ['body', 'packageId'], msg: 'packageId is a booking of another service', type: 'value_error' },
      ]);
    const paymentRead = await loadState(deps.store, paymentStream(b.paymentId), paymentDecider);
    const paymentState = paymentRead.state.payment?.status ?? 'awaiting';
    return {
      groupId,
      /** The zone the package was booked in: its dates (expirationDate) are shown in it. */
      timezone: b.timezone,
      paymentState,
      paymentOpen: !['canceled', 'deleted', 'refund'].includes(paymentState),
      paymentUnpaid: UNPAID_STATUSES.includes(paymentState),
      paymentExpirable: EXPIRABLE_STATUSES.includes(paymentState),
      /** On the SQL stores the payment must be as read when the session is held (a condition, below). */
      paymentUnchanged: unchanged(paymentStream(b.paymentId), paymentRead),
      /** The booking stream's revision as read: the sessions join it in the hold's transaction (SQL stores). */
      bookingRevision: bookingRead.revision,
    };
  };

  // 8. Book slots of a service: hold them on the coach's calendar (the one place that decides), then
  // create the sessions and the payment from the hold.
  router.post('/api/v1/service/:service_id', requireRole('client'), idempotent(deps), async (ctx) => {
    const serviceId = decode(ServicePath, ctx.params, 'path').service_id.toLowerCase();
    const body = decode(BookingBody, ctx.request.body, 'body');
    const { userId } = currentPrincipal(ctx);
    const metadata = metadataOf(ctx);
    const keyed = typeof metadata.idempotencyTag === 'string';
    // On the SQL stores the service and the coach's address book must be unchanged when the hold is
    // written (conditions of its appendMany), so the states this process kept of them are decided on
    // without a read; a refusal, or a change since, is decided again on the streams as read.
    const guessing = !!deps.store.appendMany && !keyed;
    for (let attempt = 0; ; attempt++) {
      try {
        ctx.body = await book(serviceId, body, userId, metadata, guessing && attempt === 0);
        return;
      } catch (err) {
        if (!(err instanceof DecideAgain)) throw err;
        if (attempt >= 5) throw busy('the service kept changing; retry the request');
      }
    }
  });

  /** One attempt at a booking; with `guess`, on kept states (any refusal then throws DecideAgain). */
  const book = async (
    serviceId: string,
    body: BookingBody,
    userId: string,
    metadata: EventMetadata,
    guess: boolean,
  ) => {
    /** Whether anything this attempt decides on was kept, not read (the calendar is handleCommand's). */
    let guessed = false;
    const refuse = (err: HttpError | ValidationError) => {
      throw guessed ? new DecideAgain() : err;
    };
    const kept = <S>(streamName: string, folder: Folder<never, S>) => {
      const k = guess ? keptState(deps.store, streamName, folder) : undefined;
      if (k) guessed = true;
      return k;
    };
    // The service and the address come from their own streams: a lagging or stopped read model must not
    // book a rejected service, at an old price, or past a reduced group size.
    const serviceRead =
      kept(serviceStream(serviceId), service) ||
      (await loadState(deps.store, serviceStream(serviceId), service));
    const bookable = serviceRead.state.service;
    if (!bookable) return refuse(notFound('service_not_found', 'no such bookable service'));
    // The coach's calendar as this process last folded it, checked by the hold's append (see handleCommand);
    // else read while the place is looked up (a keyed request reads it whole, later).
    const calendarState =
      typeof metadata.idempotencyTag === 'string'
        ? undefined
        : keptState(deps.store, calendarStream(bookable.coachId), calendar)
          ? ('kept' as const)
          : loadState(deps.store, calendarStream(bookable.coachId), calendar);
    if (typeof calendarState === 'object') calendarState.catch(() => undefined); // a refusal below leaves it unread
    const bookRead =
      kept(addressStream(bookable.coachId), addressBook) ||
      (await loadState(deps.store, addressStream(bookable.coachId), addressBook, { keepEmpty: true }));
    const where = placeOf(bookRead.state, body);
    if (!where)
      return refuse(
        notFound(
          'address_not_found',
          "addressId is not one of the coach's saved addresses; to meet at your own place, send its position and address instead",
        ),
      );
    const tooFar = tooFarMessage(where.minutesTravel);
    if (tooFar)
      return refuse(new ValidationError([{ loc: ['body', 'position'], msg: tooFar, type: 'value_error' }]));
    const method = body.method ?? 'card';
    const pkg = body.packageId
      ? await packageRef(body.packageId.toLowerCase(), userId, serviceId)
      : undefined;
    // A payment canceled (or expired) between its read and the hold must not take one more session: the
    // slot would stay held with nothing left to pay or release it.
    const conditions = deps.store.appendMany
      ? [
          unchanged(serviceStream(serviceId), serviceRead),
          unchanged(addressStream(bookable.coachId), bookRead),
          ...(pkg ? [pkg.paymentUnchanged] : []),
        ]
      : [];
    const groupId = pkg?.groupId ?? deps.newId();
    const now = deps.clock().toISOString();

    // The calendar decider checks the service (approved, not the caller's own, enough sessions) and the
    // slots together, and writes the hold with the service's terms as they are now.
    const outcome = await handleCommand(
      deps.store,
      calendarStream(bookable.coachId),
      calendar,
      {
        type: 'ReserveSlots',
        service: bookable,
        groupId,
        clientId: userId,
        slots: body.slots,
        sessionIds: body.slots.map(() => deps.newId()),
        order: {
          paymentId: deps.newId(),
          method,
          methodId: METHOD_IDS[method],
          ...where,
          parking: typeof body.parking === 'boolean' ? (body.parking ? 'yes' : 'no') : (body.parking ?? ''),
          parkingDescription: body.parkingDescription ?? '',
          orderDescription: body.orderDescription ?? '',
        },
        paymentWindowHours: PAYMENT_WINDOW_HOURS,
        now,
        ...(pkg
          ? {
              package: {
                groupId: pkg.groupId,
                paymentOpen: pkg.paymentOpen,
                paymentUnpaid: pkg.paymentUnpaid,
                paymentExpirable: pkg.paymentExpirable,
              },
            }
          : {}),
      },
      metadata,
      // Many clients racing for one calendar: each retry re-decides on fresh holds, so losers learn
      // "slot_unavailable" rather than a generic conflict.
      60,
      // On the SQL stores the client's list entry, the sessions and the payment are written in the hold's
      // own transaction: one commit per booking, and nothing for the booking process to heal.
      ([hold]) => {
        const held = (hold as SlotsReserved).data;
        // A package's later sessions join its booking stream as read: a session canceled or declined there
        // since (its settlement may find no session left) makes the booking decide again.
        if (held.packageTopUp && pkg)
          return [
            listingAppend(held, metadata),
            packageJoinAppend(held, metadata, pkg.bookingRevision),
            ...conditions,
          ];
        return [listingAppend(held, metadata), ...bookingAppends(held, metadata), ...conditions];
      },
      calendarState,
    ).catch((err: unknown) => {
      if (err instanceof ConcurrencyConflictError) throw busy('the calendar is busy; retry the request');
      // The service or the address book (or a package's booking) changed since it was read: nothing was written.
      if (
        err instanceof WrongExpectedRevisionError &&
        (conditions.some((c) => c.streamName === err.streamName) ||
          (pkg && err.streamName === bookingStream(groupId)))
      )
        throw new DecideAgain();
      throw err;
    });
    if (!outcome.ok) return refuse(domainErrorToHttp(outcome.error));
    const reserved = outcome.events[0]!.data as SlotsReserved['data'];
    // The hold is the booking: once it is stored, a failure to write the sessions and payment is healed by
    // the booking process manager, so the client is told it booked rather than sent to retry into a 409.
    // Listed first: once the client's list names the booking, endpoint 17 and the lifecycle find it.
    const last = outcome.alongside
      ? outcome.position
      : await listBooking(deps.store, reserved, metadata)
          .then(() => completeBooking(deps.store, reserved, metadata))
          .catch((err: unknown) => {
            deps.log.error('booking held but not completed; the booking process will complete it', {
              groupId,
              error: err instanceof Error ? err.message : String(err),
            });
            return null;
          });
    if (last) await deps.runner.waitFor(last, deps.config.consistencyWaitMs, BOOKING_READ_MODELS);
    // The reply is the stored hold, as the client's later reads will show it (a package's later sessions
    // show its payment as it is, its booking time, and its dates in its zone).
    return sessionRecordsOfHold(reserved)
      .map((r) => (pkg ? { ...r, paymentState: pkg.paymentState, timezone: pkg.timezone } : r))
      .map(toSessionOut);
  };

  /**
   * The system's move of a booking's payment when its last session was declined or canceled (the booking
   * process's `SettleCanceledBooking`, at most once per payment), made by the request: recorded as the
   * system's follow-up of the session's change (its `causationId`), in the request's correlation. A failure
   * is left to the booking process: the session change is stored already.
   */
  const settleCanceledBooking = async (
    ctx: Context,
    groupId: string,
    paymentId: string,
    now: string,
    causationId: string | undefined,
  ) => {
    try {
      // Read again after the slot's release, as the booking process does: a package's session held before
      // the release (the calendar still counted the canceled one) has joined the booking, which keeps its
      // payment then.
      const { events } = await deps.store.readStream(bookingStream(groupId));
      const latest = events.reduce(
        (b, e) => booking.evolve(b, { type: e.type, data: e.data } as BookingEvent),
        booking.initialState(),
      );
      if ([...latest.sessions.values()].some(isOn)) return;
      const { requestId, correlationId } = metadataOf(ctx);
      const outcome = await handleCommand(
        deps.store,
        paymentStream(paymentId),
        paymentDecider,
        { type: 'SettleCanceledBooking', paymentId, now },
        {
          requestId,
          correlationId,
          ...(causationId ? { causationId } : {}),
          actor: SYSTEM_ACTOR,
        },
      );
      const position = outcome.ok ? (outcome.position ?? outcome.observed) : null;
      if (position)
        await deps.runner.waitFor(position, deps.config.consistencyWaitMs, [
          'payments',
          'payment_history',
          'sessions',
        ]);
    } catch (err) {
      deps.log.warn('payment settlement left to the booking process', {
        paymentId,
        error: err instanceof Error ? err.message : String(err),
      });
    }
  };

  /** Runs a lifecycle command on the session's booking, then answers the session as it now is. */
  const lifecycle = async (
    ctx: Context,
    build: (sessionId: string, by: By, now: string) => BookingCommand,
  ) => {
    const sessionId = decode(SessionPath, ctx.params, 'path').session_id.toLowerCase();
    const { userId } = currentPrincipal(ctx);
    // The booking stream is found from the caller's own streams (its bookings as client, its calendar as
    // coach), never from the sessions read model: a session booked a moment ago is there already.
    const party = await sessionParty(deps.store, userId, sessionId);
    if (!party) throw notFound('session_not_found', 'no such session');
    const { groupId } = party;
    // The events record the caller's part in the session as its role, not the token's first role.
    ctx.state.principal = { ...currentPrincipal(ctx), acting: party.as };
    const now = deps.clock().toISOString();
    const { events, eventIds, state } = await runCommand(
      deps,
      ctx,
      bookingStream(groupId),
      booking,
      build(sessionId, { userId }, now),
      ['sessions', 'reviews', 'completed_sessions'],
    );
    const freedAt = events.findIndex((e) => e.type === 'SessionDeclined' || e.type === 'SessionCanceled');
    const freed = events[freedAt];
    if (freed) {
      // The session's change as stored: what this request does because of it (the slot's release, the
      // payment's settlement) names it as its cause, as the booking process's follow-ups do, so the
      // correlation chain leads from one to the other whoever wrote them.
      const causationId = eventIds[freedAt];
      // Free the slot now rather than when the process manager gets to it (it repeats this harmlessly). The
      // session change is stored already: losing a race on a busy calendar must not turn it into an error.
      await runCommand(
        deps,
        ctx,
        calendarStream(state.coachId),
        calendar,
        {
          type: 'ReleaseSlots',
          coachId: state.coachId,
          groupId,
          sessionIds: [sessionId],
          reason: freed.type === 'SessionDeclined' ? 'declined' : 'canceled',
          now,
        },
        ['calendar'],
        { ...metadataOf(ctx), ...(causationId ? { causationId } : {}) },
      ).catch((err: unknown) =>
        deps.log.warn('slot release left to the booking process', {
          sessionId,
          error: err instanceof Error ? err.message : String(err),
        }),
      );
      // The booking's last session gone: its payment follows now (canceled if unpaid, refunded if received),
      // as the booking process would a moment later (it then finds it settled and does nothing), so this
      // answer and the caller's next reads show it, and endpoint 17 no longer takes it for an open payment.
      if (![...state.sessions.values()].some(isOn))
        await settleCanceledBooking(ctx, groupId, state.paymentId, now, causationId);
    }
    const payment = await readState(deps.store, paymentStream(state.paymentId), paymentDecider);
    ctx.body = toSessionOut(sessionRecordOf(state, sessionId, payment.payment?.status ?? 'awaiting')!);
  };

  /**
   * One attempt at a reschedule: the booking's checks, then the hold's move on the coach's calendar (one
   * SlotMoved), and the booking's SessionRescheduled, in the calendar append's transaction on the SQL stores
   * (the booking, service and payment as read, else decided again), or just after it on EventStoreDB (the
   * booking process writes it if this request dies in between, once per move).
   */
  const reschedule = async (
    groupId: string,
    sessionId: string,
    slot: string,
    by: By,
    metadata: EventMetadata,
  ) => {
    const keyed = typeof metadata.idempotencyTag === 'string';
    const bookingRead = await loadState(deps.store, bookingStream(groupId), booking, { whole: keyed });
    const b = bookingRead.state;
    // A keyed request run again after a crash: what its first run stored is its outcome.
    if (keyed && bookingRead.recorded.some((r) => r.metadata.idempotencyTag === metadata.idempotencyTag))
      return b;
    const now = deps.clock().toISOString();
    const refused = refuseReschedule(b, sessionId, by, now);
    if (refused) throw domainErrorToHttp(refused);
    const session = b.sessions.get(sessionId)!;
    const [serviceRead, paymentRead] = await Promise.all([
      loadState(deps.store, serviceStream(b.serviceId), service),
      loadState(deps.store, paymentStream(b.paymentId), paymentDecider),
    ]);
    const bookable = serviceRead.state.service;
    if (!bookable) throw domainErrorToHttp({ code: 'slot_unavailable', message: 'the service is gone' });
    const status = paymentRead.state.payment?.status ?? 'awaiting';
    const from = { startsAt: session.startsAt, endsAt: session.endsAt, slot: session.slot };
    /**
     * The booking as this move left it: the answer is this request's move, not a later one made since (the
     * stream read back could already hold another move of the session).
     */
    let own: Booking | undefined;
    const outcome = await handleCommand(
      deps.store,
      calendarStream(b.coachId),
      calendar,
      {
        type: 'MoveSlot',
        service: bookable,
        groupId,
        sessionId,
        by: by.userId === b.coachId ? 'coach' : 'client',
        from,
        slot,
        minutesDuration: (session.terms ?? b.terms)!.minutesDuration,
        paymentExpirable: EXPIRABLE_STATUSES.includes(status),
        moveId: deps.newId(),
        now,
      },
      metadata,
      60,
      // The booking's record of the move, in the same transaction, on the booking, the service and the
      // payment as read: a change to any of them since decides again.
      ([moved]) => {
        const m = (moved as SlotMoved).data;
        const decided = booking.decide(
          { type: 'Reschedule', sessionId, by, to: m.to, moveId: m.moveId, now },
          b,
        );
        if (decided._tag === 'Left') throw new DecideAgain();
        own = decided.right.reduce(booking.evolve, b);
        return [
          {
            streamName: bookingStream(groupId),
            events: decided.right.map((e) => ({ type: e.type, data: e.data, metadata })),
            expectedRevision: bookingRead.revision,
          },
          unchanged(serviceStream(b.serviceId), serviceRead),
          unchanged(paymentStream(b.paymentId), paymentRead),
        ];
      },
    ).catch((err: unknown) => {
      if (err instanceof ConcurrencyConflictError) throw busy('the calendar is busy; retry the request');
      if (
        err instanceof WrongExpectedRevisionError &&
        [bookingStream(groupId), serviceStream(b.serviceId), paymentStream(b.paymentId)].includes(
          err.streamName,
        )
      )
        throw new DecideAgain();
      throw err;
    });
    if (!outcome.ok) {
      // Another move of the session got there first (the hold is no longer where this booking read put
      // it): decided again on the moved session, as documented, rather than sending the caller to retry.
      if (outcome.error.code === 'conflict') throw new DecideAgain();
      throw domainErrorToHttp(outcome.error);
    }
    let last = outcome.position;
    if (!outcome.alongside) {
      // EventStoreDB (or a keyed request's earlier run): the booking's record follows the hold, as its cause.
      const moved = outcome.events.find((e) => e.type === 'SlotMoved') as SlotMoved | undefined;
      const causationId = outcome.eventIds[outcome.events.findIndex((e) => e.type === 'SlotMoved')];
      if (moved) {
        const m = moved.data;
        const record: BookingCommand = {
          type: 'RecordMove',
          sessionId,
          from: m.from,
          to: m.to,
          by: m.by,
          moveId: m.moveId,
          now: m.movedAt,
        };
        let unrecorded: Booking | undefined;
        try {
          const recorded = await handleCommand(deps.store, bookingStream(groupId), booking, record, {
            ...metadata,
            ...(causationId ? { causationId } : {}),
          });
          if (recorded.ok && recorded.position) last = recorded.position;
          if (recorded.ok && recorded.events.length > 0) own = recorded.state;
          if (recorded.ok && recorded.events.length === 0) unrecorded = recorded.state;
        } catch (err) {
          // The hold has moved: that is the reschedule, and the booking process records it from the SlotMoved.
          // The caller is answered the moved session, not sent to retry into a 409 (as a booking's hold is).
          deps.log.error(
            'session moved on the calendar but not recorded; the booking process will record it',
            {
              sessionId,
              error: err instanceof Error ? err.message : String(err),
            },
          );
          const decided = booking.decide(record, b);
          return decided._tag === 'Right' ? decided.right.reduce(booking.evolve, b) : b;
        }
        // Nothing recorded and the session no longer open: it was declined or canceled (its hold released)
        // before the move reached its booking, where the cancellation came first. Refused as on the SQL
        // stores, not answered 200 with a canceled session at its old time.
        const refusal = unrecorded && refuseReschedule(unrecorded, sessionId, by, now);
        if (refusal) throw domainErrorToHttp(refusal);
        // Recorded by the booking process first (or by this keyed request's earlier run): the move on the
        // booking as this request read it.
        if (unrecorded) {
          const decided = booking.decide(record, b);
          own = decided._tag === 'Right' ? decided.right.reduce(booking.evolve, b) : undefined;
        }
      }
    }
    if (last) await deps.runner.waitFor(last, deps.config.consistencyWaitMs, ['calendar', 'sessions']);
    return own ?? readState(deps.store, bookingStream(groupId), booking);
  };

  // Move a session to another time: same session, payment, price and place (docs/api.md, "Session lifecycle").
  router.post('/api/v1/session/:session_id/reschedule', authenticated(), idempotent(deps), async (ctx) => {
    const sessionId = decode(SessionPath, ctx.params, 'path').session_id.toLowerCase();
    const body = decode(RescheduleBody, ctx.request.body, 'body');
    const { userId } = currentPrincipal(ctx);
    const party = await sessionParty(deps.store, userId, sessionId);
    if (!party) throw notFound('session_not_found', 'no such session');
    ctx.state.principal = { ...currentPrincipal(ctx), acting: party.as };
    const metadata = metadataOf(ctx);
    for (let attempt = 0; ; attempt++) {
      try {
        const state = await reschedule(party.groupId, sessionId, body.slot, { userId }, metadata);
        const payment = await readState(deps.store, paymentStream(state.paymentId), paymentDecider);
        ctx.body = toSessionOut(sessionRecordOf(state, sessionId, payment.payment?.status ?? 'awaiting')!);
        return;
      } catch (err) {
        if (!(err instanceof DecideAgain)) throw err;
        if (attempt >= 5) throw busy('the booking kept changing; retry the request');
        // On EventStoreDB the other move's booking record follows its hold by a moment: give it that.
        await new Promise((resolve) => setTimeout(resolve, 10 * (attempt + 1)));
      }
    }
  });

  router.post('/api/v1/session/:session_id/approve', authenticated(), idempotent(deps), (ctx) =>
    lifecycle(ctx, (sessionId, by, now) => ({ type: 'Approve', sessionId, by, now })),
  );
  router.post('/api/v1/session/:session_id/decline', authenticated(), idempotent(deps), (ctx) => {
    const body = decode(ReasonBody, ctx.request.body, 'body');
    return lifecycle(ctx, (sessionId, by, now) => ({
      type: 'Decline',
      sessionId,
      by,
      reason: body.reason ?? '',
      now,
    }));
  });
  router.post('/api/v1/session/:session_id/cancel', authenticated(), idempotent(deps), (ctx) => {
    const body = decode(ReasonBody, ctx.request.body, 'body');
    return lifecycle(ctx, (sessionId, by, now) => ({
      type: 'Cancel',
      sessionId,
      by,
      reason: body.reason ?? '',
      now,
    }));
  });
  router.post('/api/v1/session/:session_id/complete', authenticated(), idempotent(deps), (ctx) =>
    lifecycle(ctx, (sessionId, by, now) => ({ type: 'Complete', sessionId, by, now })),
  );
  router.post('/api/v1/session/:session_id/dispute', authenticated(), idempotent(deps), (ctx) => {
    const body = decode(DisputeBody, ctx.request.body, 'body');
    return lifecycle(ctx, (sessionId, by, now) => ({
      type: 'Dispute',
      sessionId,
      by,
      reason: body.reason,
      now,
    }));
  });
  router.post('/api/v1/session/:session_id/review', authenticated(), idempotent(deps), (ctx) => {
    const body = decode(ReviewBody, ctx.request.body, 'body');
    return lifecycle(ctx, (sessionId, by, now) => ({
      type: 'Review',
      sessionId,
      by,
      rating: body.rating,
      comment: body.comment ?? '',
      now,
    }));
  });
  return router;
}
