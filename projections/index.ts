import { addressesProjection } from './addresses';
import type { Projection } from './runner';
import type { EventStore } from '../src/eventstore/types';
import { calendarProjection } from './calendar';
import { sessionsProjection } from './sessions';
import { bookingProcess } from './bookingProcess';
import { paymentsProjection } from './payments';
import { paymentHistoryProjection } from './paymentHistory';
import { paymentExpiryProjection } from './paymentExpiry';
import { userProfilesProjection } from './userProfiles';
import { servicesProjection } from './services';
import { coachClientsProjection } from './coachClients';
import { reviewsProjection } from './reviews';
import { completedSessionsProjection } from './completedSessions';

/** Every read model and process manager the service runs. */
export const allProjections = (ctx: { store: EventStore; clock: () => Date }): Projection[] => [
  addressesProjection,
  userProfilesProjection,
  servicesProjection,
  coachClientsProjection,
  reviewsProjection,
  completedSessionsProjection,
  paymentsProjection,
  paymentHistoryProjection,
  paymentExpiryProjection,
  calendarProjection,
  sessionsProjection,
  bookingProcess(ctx.store, ctx.clock),
];
