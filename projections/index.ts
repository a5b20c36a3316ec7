import { addressesProjection } from './addresses';
import type { Projection } from './runner';
import { paymentsProjection } from './payments';
import { paymentHistoryProjection } from './paymentHistory';
import { paymentExpiryProjection } from './paymentExpiry';
import { userProfilesProjection } from './userProfiles';
import { servicesProjection } from './services';
import { coachClientsProjection } from './coachClients';
import { reviewsProjection } from './reviews';
import { completedSessionsProjection } from './completedSessions';

/** Every read model and process manager the service runs. */
export const allProjections = (): Projection[] => [
  addressesProjection,
  userProfilesProjection,
  servicesProjection,
  coachClientsProjection,
  reviewsProjection,
  completedSessionsProjection,
  paymentsProjection,
  paymentHistoryProjection,
  paymentExpiryProjection,
];
