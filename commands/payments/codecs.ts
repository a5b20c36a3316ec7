import * as t from 'io-ts';
import { describeSchema } from '../../src/http/openapi/jsonSchema';
import { boundedString, FreeJsonObject, strict, Uuid } from '../../src/http/validation';
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

/** Body of endpoints 15 and 17 (not shown in the interface document; see docs/api.md "Payments"). */
export const PaymentUpdateBody = strict(
  { status: PaymentStatusCodec },
  {
    clientSecret: boundedString(1000),
    checkout: FreeJsonObject,
    providerEventId: boundedString(200, 1),
  },
  'PaymentUpdate',
);
export type PaymentUpdateBody = t.TypeOf<typeof PaymentUpdateBody>;

export const PaymentIdPath = t.type({ payment_id: Uuid });
export const UserIdPath = t.type({ user_id: Uuid });
