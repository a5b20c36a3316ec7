import type Router from '@koa/router';
import { addressCommands } from '../commands/addresses/routes';
import { addressQueries } from '../queries/addresses';
import { userCommands } from '../commands/users/routes';
import { serviceCommands } from '../commands/services/routes';
import { userQueries } from '../queries/users';
import { serviceQueries } from '../queries/services';
import { reviewQueries } from '../queries/reviews';
import { coachProfileQueries } from '../queries/coachProfile';
import { coachSearchQueries } from '../queries/coachSearch';
import { paymentCommands } from '../commands/payments/routes';
import { paymentQueries } from '../queries/payments';
import { paymentAuditQueries } from '../queries/paymentAudit';
import { auditQueries } from '../queries/audit';
import { calendarCommands } from '../commands/calendar/routes';
import { bookingCommands } from '../commands/booking/routes';
import { availabilityQueries } from '../queries/availability';
import { scheduleQueries } from '../queries/schedule';
import { sessionQueries } from '../queries/sessions';
import { videoCommands } from '../commands/videos/routes';
import { videoQueries } from '../queries/videos';
import { profileMediaCommands } from '../commands/users/media';
import { profileMediaQueries } from '../queries/profileMedia';
import { notificationCommands } from '../commands/notifications/routes';
import { notificationQueries } from '../queries/notifications';
import { emailCommands } from '../commands/email/routes';
import { webhookQueries } from '../queries/webhooks';
import { adminQueries } from '../queries/admin';
import { deliveryCommands } from '../commands/delivery/routes';
import { calendarFeedCommands } from '../commands/users/calendarFeed';
import { calendarFeedQueries } from '../queries/calendarFeed';
import type { AppDeps } from './deps';

/** Every command and query router of the API. */
export const routers = (deps: AppDeps): Router[] => [
  calendarCommands(deps),
  bookingCommands(deps),
  availabilityQueries(deps),
  scheduleQueries(deps),
  sessionQueries(deps),
  addressCommands(deps),
  addressQueries(deps),
  userCommands(deps),
  serviceCommands(deps),
  userQueries(deps),
  serviceQueries(deps),
  reviewQueries(deps),
  coachProfileQueries(deps),
  coachSearchQueries(deps),
  paymentCommands(deps),
  paymentQueries(deps),
  paymentAuditQueries(deps),
  auditQueries(deps),
  videoCommands(deps),
  videoQueries(deps),
  profileMediaCommands(deps),
  profileMediaQueries(deps),
  notificationCommands(deps),
  notificationQueries(deps),
  emailCommands(deps),
  webhookQueries(deps),
  adminQueries(deps),
  deliveryCommands(deps),
  calendarFeedCommands(deps),
  calendarFeedQueries(deps),
];
