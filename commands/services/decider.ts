import { left, right, type Either } from 'fp-ts/Either';
import { assertNever, type Decider, type DomainError } from '../../src/decider';
import type { ServiceEvent, ServiceFields, ServiceStatus } from './events';

export interface ServiceState {
  service: (ServiceFields & { id: string; coachId: string; status: ServiceStatus; createdAt: string }) | null;
}

export type ServiceCommand =
  | { type: 'CreateService'; serviceId: string; coachId: string; fields: ServiceFields; now: string }
  | {
      type: 'UpdateService';
      serviceId: string;
      coachId: string;
      changes: Partial<ServiceFields>;
      now: string;
    }
  | { type: 'ApproveService'; serviceId: string; now: string }
  | { type: 'RejectService'; serviceId: string; reason: string; now: string };

const notFound: DomainError = { code: 'service_not_found', message: 'no such service' };

/** A one-to-one service has exactly one seat. */
function groupRule(f: Pick<ServiceFields, 'groupSession' | 'maxGroupSize'>): DomainError | null {
  return !f.groupSession && f.maxGroupSize !== 1
    ? {
        code: 'validation',
        message: 'maxGroupSize must be 1 when groupSession is false',
        locs: [['body', 'maxGroupSize']],
      }
    : null;
}

/** Decimals of a currency's minor unit (ISO 4217, from the runtime's ICU data): EUR 2, JPY 0, BHD 3; else 2. */
export function currencyDecimals(currency: string): number {
  try {
    return (
      new Intl.NumberFormat('en', { style: 'currency', currency }).resolvedOptions().maximumFractionDigits ??
      2
    );
  } catch {
    return 2;
  }
}

/**
 * `price` in the currency's minor units (19.99 EUR is 1999), or null when it is finer than they are. The
 * tolerance absorbs binary fractions: 19.99 * 100 is 1998.9999999999998.
 */
function minorUnits(price: number, currency: string): number | null {
  const scaled = price * 10 ** currencyDecimals(currency);
  const rounded = Math.round(scaled);
  return Math.abs(scaled - rounded) < 1e-6 ? rounded : null;
}

/**
 * A price is an amount a client can pay: no finer than its currency's minor unit (19.999 EUR, or 0.5 JPY,
 * cannot be charged, and 0.0000001 EUR would be a booking that is not free and can never be paid).
 */
function priceRule(f: Pick<ServiceFields, 'price' | 'priceCurrency'>): DomainError | null {
  return minorUnits(f.price, f.priceCurrency) !== null
    ? null
    : {
        code: 'validation',
        message: `price ${f.price} has more decimals than ${f.priceCurrency} has (${currencyDecimals(f.priceCurrency)})`,
        locs: [['body', 'price']],
      };
}

/**
 * A price taken by `priceRule` as the amount it means: 0.1 + 0.2 (0.30000000000000004) is stored as 0.3, so
 * the service, its bookings' payments and the audit show the number the session's share shows. A price the
 * rule refuses is left as given, for the rule to name.
 */
function inMinorUnits<F extends { price?: number | undefined; priceCurrency?: string | undefined }>(
  fields: F,
  currency: string,
): F {
  if (fields.price === undefined) return fields;
  const units = minorUnits(fields.price, currency);
  const price = units === null ? fields.price : units / 10 ** currencyDecimals(currency);
  return price === fields.price ? fields : { ...fields, price };
}

/**
 * `serviceTypes` as stored: each without the blanks around it, and once (compared as the search compares them,
 * in any case, in NFC; the first spelling kept), so `" tennis "` is found by `serviceType=tennis` and the
 * profile (13) does not list `tennis` twice. Services recorded before keep their types as recorded.
 */
export function tidyServiceTypes(types: readonly string[]): string[] {
  const seen = new Set<string>();
  const kept: string[] = [];
  for (const raw of types) {
    const type = raw.trim();
    const key = type.normalize('NFC').toLowerCase();
    if (seen.has(key)) continue;
    seen.add(key);
    kept.push(type);
  }
  return kept;
}

function withTidyTypes<F extends { serviceTypes?: string[] | undefined }>(fields: F): F {
  return fields.serviceTypes === undefined
    ? fields
    : { ...fields, serviceTypes: tidyServiceTypes(fields.serviceTypes) };
}

const same = (a: unknown, b: unknown) => JSON.stringify(a) === JSON.stringify(b);

function decideUpdate(
  command: Extract<ServiceCommand, { type: 'UpdateService' }>,
  s: NonNullable<ServiceState['service']>,
): Either<DomainError, ServiceEvent[]> {
  // Another coach's service answers as if it did not exist, so ids cannot be probed.
  if (s.coachId !== command.coachId) return left(notFound);
  const given = withTidyTypes(
    inMinorUnits(command.changes, command.changes.priceCurrency ?? s.priceCurrency),
  );
  const changes = Object.fromEntries(
    Object.entries(given).filter(([k, v]) => v !== undefined && !same(s[k as keyof ServiceFields], v)),
  ) as Partial<ServiceFields>;
  if (Object.keys(changes).length === 0) return right([]);
  // A service made a group one says how many it seats, as on create: left at its one seat, no second client
  // could ever join the group the coach meant to open.
  if (changes.groupSession === true && command.changes.maxGroupSize === undefined)
    return left({
      code: 'validation',
      message: 'maxGroupSize is required when a service becomes a group session',
      locs: [['body', 'maxGroupSize']],
      type: 'missing',
    });
  const err =
    groupRule({ ...s, ...changes }) ??
    // Checked when the price or its currency changes: other edits of a service stored before the rule stay possible.
    ('price' in changes || 'priceCurrency' in changes ? priceRule({ ...s, ...changes }) : null);
  if (err) return left(err);
  const events: ServiceEvent[] = [
    {
      type: 'ServiceUpdated',
      data: { serviceId: s.id, coachId: s.coachId, changes, updatedAt: command.now },
    },
  ];
  // An approved service stays approved when edited (price, duration or anything else): bookings already
  // made keep the terms they were made on, and the admin can still reject later. A rejected one that is
  // edited is resubmitted for review.
  if (s.status === 'rejected')
    events.push({
      type: 'ServiceResubmitted',
      data: { serviceId: s.id, coachId: s.coachId, at: command.now },
    });
  return right(events);
}

export const service: Decider<ServiceCommand, ServiceEvent, ServiceState> = {
  initialState: () => ({ service: null }),

  evolve(state, event) {
    const s = state.service;
    switch (event.type) {
      case 'ServiceCreated': {
        const { serviceId, coachId, status, createdAt, ...fields } = event.data;
        return { service: { ...fields, id: serviceId, coachId, status, createdAt } };
      }
      case 'ServiceUpdated':
        return s ? { service: { ...s, ...event.data.changes } } : state;
      case 'ServiceApproved':
        return s ? { service: { ...s, status: 'approved' } } : state;
      case 'ServiceRejected':
        return s ? { service: { ...s, status: 'rejected' } } : state;
      case 'ServiceResubmitted':
        return s ? { service: { ...s, status: 'review' } } : state;
      default:
        return assertNever(event);
    }
  },

  decide(command, state) {
    const s = state.service;
    switch (command.type) {
      case 'CreateService': {
        if (s) return left({ code: 'conflict', message: 'a service with this id already exists' });
        const fields = withTidyTypes(inMinorUnits(command.fields, command.fields.priceCurrency));
        const err = groupRule(fields) ?? priceRule(fields);
        if (err) return left(err);
        return right([
          {
            type: 'ServiceCreated',
            data: {
              serviceId: command.serviceId,
              coachId: command.coachId,
              ...fields,
              status: 'review',
              createdAt: command.now,
            },
          },
        ]);
      }
      case 'UpdateService':
        return s ? decideUpdate(command, s) : left(notFound);
      case 'ApproveService':
        if (!s) return left(notFound);
        if (s.status === 'approved') return right([]); // approving twice is a no-op, so retries are safe
        if (s.status === 'rejected')
          return left({
            code: 'invalid_transition',
            message: 'a rejected service must be edited by its coach first',
          });
        return right([
          { type: 'ServiceApproved', data: { serviceId: s.id, coachId: s.coachId, at: command.now } },
        ]);
      case 'RejectService':
        if (!s) return left(notFound);
        if (s.status === 'rejected') return right([]);
        // Rejecting an approved service withdraws it from the catalogue (e.g. after a complaint).
        return right([
          {
            type: 'ServiceRejected',
            data: { serviceId: s.id, coachId: s.coachId, reason: command.reason, at: command.now },
          },
        ]);
      default:
        return assertNever(command);
    }
  },
};
