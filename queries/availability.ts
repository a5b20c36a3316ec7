import Router from '@koa/router';
import * as t from 'io-ts';
import { DateTime } from 'luxon';
import type { Schedule } from '../commands/calendar/events';
import { IsoDate } from '../commands/calendar/codecs';
import {
  freeSlots,
  localDate,
  slotRulesOf,
  type FreeSlot,
  type Reservation,
} from '../commands/calendar/slots';
import type { Queryable } from '../src/db/database';
import type { AppDeps } from '../src/deps';
import { notFound, ValidationError } from '../src/http/errors';
import { Uuid, decode } from '../src/http/validation';
import { optionalPrincipal } from './caller';
import { isCoach } from '../src/readModels/users';
import type { ServiceOut } from '../src/resources/service';
import { coachServices, findService } from './services';

/** Longest range one availability request may cover, in days. */
export const MAX_RANGE_DAYS = 62;
const DEFAULT_RANGE_DAYS = 14;

const RangeQuery = t.partial({ from_date: IsoDate, to_date: IsoDate, address_id: Uuid, user: Uuid });

/** The requested local date range, defaulting to two weeks from today in the coach's zone. */
function range(query: unknown, zone: string, now: Date) {
  const q = decode(RangeQuery, query, 'query');
  const from = q.from_date ?? localDate(now, zone);
  const to =
    q.to_date ??
    DateTime.fromISO(from)
      .plus({ days: DEFAULT_RANGE_DAYS - 1 })
      .toISODate()!;
  const days = DateTime.fromISO(to).diff(DateTime.fromISO(from), 'days').days;
  if (days < 0)
    throw new ValidationError([
      { loc: ['query', 'to_date'], msg: 'to_date should not be before from_date', type: 'value_error' },
    ]);
  if (days >= MAX_RANGE_DAYS)
    throw new ValidationError([
      {
        loc: ['query', 'to_date'],
        msg: `the range should cover at most ${MAX_RANGE_DAYS} days`,
        type: 'value_error',
      },
    ]);
  return { from, to };
}

async function calendarOf(db: Queryable, coachId: string, from: string, to: string) {
  const cal = await db.query<{ schedule: Schedule }>(
    'SELECT schedule FROM coach_calendars WHERE coach_id = $1',
    [coachId],
  );
  const schedule = cal.rows[0]?.schedule ?? null;
  // A day of margin each side covers zones far from UTC and sessions crossing midnight.
  const holds = await db.query<{
    sessionId: string;
    serviceId: string;
    clientId: string;
    startsAt: Date;
    endsAt: Date;
  }>(
    `SELECT session_id AS "sessionId", service_id AS "serviceId", client_id AS "clientId", starts_at AS "startsAt",
            ends_at AS "endsAt"
       FROM slot_holds WHERE coach_id = $1 AND ends_at > ($2::date - 1) AND starts_at < ($3::date + 2)`,
    [coachId, from, to],
  );
  const reservations: Reservation[] = holds.rows.map((h) => ({
    ...h,
    startsAt: new Date(h.startsAt).toISOString(),
    endsAt: new Date(h.endsAt).toISOString(),
  }));
  return { schedule, reservations };
}

const slotsFor = (
  s: ServiceOut,
  schedule: Schedule | null,
  reservations: Reservation[],
  from: string,
  to: string,
  now: Date,
): FreeSlot[] => (schedule ? freeSlots(schedule, reservations, slotRulesOf(s), from, to, now) : []);

export function availabilityQueries(deps: AppDeps): Router {
  const router = new Router();

  // 6. Free slots of one service, as local date-times in the coach's zone with the seats left.
  router.get('/api/v1/service/:service_id/availability', async (ctx) => {
    const serviceId = decode(t.type({ service_id: Uuid }), ctx.params, 'path').service_id.toLowerCase();
    const service = await findService(deps.db, serviceId);
    const caller = optionalPrincipal(ctx);
    if (!service || (service.status !== 'approved' && service.coachId !== caller?.userId))
      throw notFound('service_not_found', 'no such service');
    const zoneRow = await deps.db.query<{ tz: string }>(
      "SELECT schedule->>'timezone' AS tz FROM coach_calendars WHERE coach_id = $1",
      [service.coachId],
    );
    const zone = zoneRow.rows[0]?.tz ?? 'UTC';
    const { from, to } = range(ctx.query, zone, deps.clock());
    const { schedule, reservations } = await calendarOf(deps.db, service.coachId, from, to);
    ctx.body = {
      serviceId,
      coachId: service.coachId,
      timezone: zone,
      fromDate: from,
      toDate: to,
      minutesDuration: service.sessionMinutesDuration,
      groupSession: service.groupSession,
      slots: slotsFor(service, schedule, reservations, from, to, deps.clock()),
    };
  });

  // 11. Every approved service of a coach with its free slots.
  router.get('/api/v1/coach/:coach_id/availability', async (ctx) => {
    const coachId = decode(t.type({ coach_id: Uuid }), ctx.params, 'path').coach_id.toLowerCase();
    optionalPrincipal(ctx);
    if (!(await isCoach(deps.db, coachId))) throw notFound('coach_not_found', 'no such coach');
    const zoneRow = await deps.db.query<{ tz: string }>(
      "SELECT schedule->>'timezone' AS tz FROM coach_calendars WHERE coach_id = $1",
      [coachId],
    );
    const zone = zoneRow.rows[0]?.tz ?? 'UTC';
    const { from, to } = range(ctx.query, zone, deps.clock());
    const { schedule, reservations } = await calendarOf(deps.db, coachId, from, to);
    const services = await coachServices(deps.db, coachId, false);
    ctx.body = {
      coachId,
      timezone: zone,
      fromDate: from,
      toDate: to,
      services: services.map((s) => ({
        service: s,
        slots: slotsFor(s, schedule, reservations, from, to, deps.clock()),
      })),
    };
  });
  return router;
}
