import * as t from 'io-ts';
import { describeSchema } from '../../src/http/openapi/jsonSchema';
import {
  boundedString,
  finiteNumberIn,
  FreeJsonObject,
  intIn,
  strict,
  Uuid,
} from '../../src/http/validation';
import { PAYMENT_STATUSES, type PaymentStatus } from './events';

const isStatus = (u: unknown): u is PaymentStatus =>
  typeof u === 'string' && (PAYMENT_STATUSES as readonly string[]).includes(u);

/** Payment.status: one of the nine values of the interface document (all within its max length 40). */
export const PaymentStatusCodec = describeSchema(
  new t.Type<PaymentStatus, string, unknown>(
    'PaymentStatus',
    isStatus,
    (u, c) =>
      isStatus(u) ? t.success(u) : t.failure(u, c, `Input should be one of ${PAYMENT_STATUSES.join(', ')}`),
    String,
  ),
  { type: 'string', enum: [...PAYMENT_STATUSES] },
);

/**
 * Body of endpoints 15 and 17 (not shown in the interface document; see docs/api.md "Payments"). It may be
 * the whole `Payment` record the client read, with the new status: the record's other fields are then
 * checked against the payment (the decider's `expected`), never written.
 */
export const PaymentUpdateBody = strict(
  { status: PaymentStatusCodec },
  {
    clientSecret: boundedString(1000),
    checkout: FreeJsonObject,
    providerEventId: boundedString(200, 1),
    price: finiteNumberIn(0, 1_000_000, 'price'),
    currency: boundedString(10, 1),
    methodId: intIn(0, 2 ** 31 - 1, 'methodId'),
    coachId: Uuid,
    clientId: Uuid,
    serviceId: Uuid,
  },
  'PaymentUpdate',
);
export type PaymentUpdateBody = t.TypeOf<typeof PaymentUpdateBody>;

export const PaymentIdPath = t.type({ payment_id: Uuid });
export const UserIdPath = t.type({ user_id: Uuid });
