import * as t from 'io-ts';
import type { AddressOut } from './address';
import type { PublicCoachProfileOut } from './coachProfile';
import type { CoachCard } from './coachCard';
import type { FileBase, ProfileMediaOut } from './fileBase';
import type { NotificationOut } from './notification';
import type { PaymentOut } from './payment';
import type { ReviewOut } from './review';
import type { ServiceOut } from './service';
import type { SessionOut } from './session';
import type { UserOut } from './user';
import type { UserProfileOut } from './userProfile';
import type { WebhookDeliveryOut } from '../../queries/webhooks';
import type { PackageOut } from '../../queries/packages';
import type { EmailDeliveryOut } from '../readModels/emailDeliveries';
import { describeSchema } from '../http/openapi/jsonSchema';
import { PAYMENT_STATUSES } from '../../commands/payments/events';
import { SESSION_STATES } from '../../commands/booking/events';

/**
 * io-ts codecs of the API's answers: what /openapi.json documents (src/http/openapi) and what the API tests
 * check every JSON answer against. Resources are closed (no additional properties), so a field added to a
 * resource without being added here fails the API tests; the type checks at the bottom make the TypeScript
 * shapes and these codecs agree.
 */
const closed = <R extends t.Props>(name: string, required: R) => t.exact(t.type(required), name);
const closedWith = <R extends t.Props, O extends t.Props>(name: string, required: R, optional: O) =>
  t.exact(t.intersection([t.type(required), t.partial(optional)]), name);
const nullable = <C extends t.Mixed>(c: C) => t.union([c, t.null]);
const s = t.string;
const n = t.number;
const b = t.boolean;
/** A JSON integer (the interface document's `integer`): documented as `type: integer`. */
export const int = describeSchema(
  new t.Type<number, number, unknown>(
    'Integer',
    (u): u is number => typeof u === 'number' && Number.isInteger(u),
    (u, c) => (typeof u === 'number' && Number.isInteger(u) ? t.success(u) : t.failure(u, c)),
    t.identity,
  ),
  { type: 'integer' },
);
const UUID_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
/** The interface document's `string (uuid)`: documented as `format: uuid`. */
const uuid = describeSchema(
  new t.Type<string, string, unknown>(
    'UuidOut',
    (u): u is string => typeof u === 'string' && UUID_RE.test(u),
    (u, c) => (typeof u === 'string' && UUID_RE.test(u) ? t.success(u) : t.failure(u, c)),
    t.identity,
  ),
  { type: 'string', format: 'uuid' },
);

/** A string the document describes more sharply than `type: string` (values, length), checked alike. */
const documentedString = (name: string, schema: Record<string, unknown>, ok: (s: string) => boolean) =>
  describeSchema(
    new t.Type<string, string, unknown>(
      name,
      (u): u is string => typeof u === 'string' && ok(u),
      (u, c) => (typeof u === 'string' && ok(u) ? t.success(u) : t.failure(u, c)),
      t.identity,
    ),
    { type: 'string', ...schema },
  );
/** The interface document's `string (date, YYYY-MM-DD)`: documented as `format: date`. */
const calendarDate = documentedString('CalendarDate', { format: 'date' }, (d) =>
  /^\d{4}-\d{2}-\d{2}$/.test(d),
);
/** The interface document's `date text, day/month/year with slashes` (Session's dates): `dd/mm/yyyy`. */
const dayMonthYear = documentedString('DayMonthYear', { pattern: '^\\d{2}/\\d{2}/\\d{4}$' }, (d) =>
  /^\d{2}\/\d{2}\/\d{4}$/.test(d),
);
/** Payment.status: the nine values of the interface document (section 3; all within its max length 40). */
const paymentStatus = documentedString('PaymentStatusOut', { enum: [...PAYMENT_STATUSES] }, (s) =>
  (PAYMENT_STATUSES as readonly string[]).includes(s),
);
/** Session.state: the six states a session moves through (docs/api.md, "Session lifecycle"). */
const sessionState = documentedString('SessionStateOut', { enum: [...SESSION_STATES] }, (s) =>
  (SESSION_STATES as readonly string[]).includes(s),
);
/** Payment.currency: at most 10 characters (the interface document's section 8). */
const paymentCurrency = documentedString('PaymentCurrency', { maxLength: 10 }, (s) => s.length <= 10);
/** UserProfileOut.profileCompletion: a whole percent, 0 to 100 (docs/api.md, endpoint 14). */
const percent = describeSchema(
  new t.Type<number, number, unknown>(
    'Percent',
    (u): u is number => typeof u === 'number' && Number.isInteger(u) && u >= 0 && u <= 100,
    (u, c) =>
      typeof u === 'number' && Number.isInteger(u) && u >= 0 && u <= 100 ? t.success(u) : t.failure(u, c),
    t.identity,
  ),
  { type: 'integer', minimum: 0, maximum: 100 },
);

export const ServiceOutCodec = closed('ServiceOut', {
  id: uuid,
  name: s,
  description: s,
  promo: b,
  price: n,
  priceCurrency: s,
  serviceOtherType: s,
  sessionMinutesDuration: int,
  sessionCancellationHours: int,
  status: t.keyof({ review: null, approved: null, rejected: null }),
  serviceTypes: t.array(s),
  numberOfSessions: int,
  expiresInDays: int,
  groupSession: b,
  maxGroupSize: int,
  slots: t.array(s),
  minimumNoticeHours: int,
  bookingWindowDays: int,
});

export const FileBaseCodec = closed('FileBase', {
  id: uuid,
  title: s,
  description: s,
  contentType: s,
  originFilename: s,
  url: s,
  thumb: s,
  filesize: int,
  status: s,
});

/** A profile image or certificate: a FileBase with its kind and upload time. */
export const ProfileMediaOutCodec = closed('ProfileMedia', {
  ...FileBaseCodec.type.props,
  kind: t.keyof({ image: null, certificate: null }),
  createdAt: s,
});

export const AddressOutCodec = closed('AddressOut', {
  id: uuid,
  lat: n,
  lng: n,
  zoom: n,
  isDefault: b,
  name: s,
  address: s,
  country: s,
  state: s,
  city: s,
  line1: s,
  line2: s,
  zip: s,
  details: s,
  position: closed('Point', { type: t.literal('Point'), coordinates: t.tuple([n, n]) }),
});

export const NotificationOutCodec = closed('Notification', {
  id: uuid,
  type: s,
  contentType: s,
  contentId: uuid,
  message: s,
  code: int,
  unread: b,
  createdAt: s,
});

/** The admin view of a notification (29, 30): the owner and the read and delivery times added. */
export const AdminNotificationCodec = closed('AdminNotification', {
  ...NotificationOutCodec.type.props,
  userId: s,
  readAt: nullable(s),
  deliveredAt: nullable(s),
});

export const PaymentOutCodec = closedWith(
  'Payment',
  {
    status: paymentStatus,
    price: n,
    currency: paymentCurrency,
    methodId: int,
    coachId: uuid,
    clientId: uuid,
    serviceId: uuid,
  },
  { clientSecret: s, checkout: t.UnknownRecord },
);

const Actor = closed('Actor', { userId: s, role: s });

/** GET /api/v1/payment/{id} (16): the Payment plus its ids, deadline and transitions. */
export const PaymentDetailCodec = closedWith(
  'PaymentDetail',
  {
    ...PaymentOutCodec.type.types[0].props,
    id: s,
    groupId: s,
    expiresAt: nullable(s),
    history: t.array(
      closed('PaymentTransition', { from: s, to: s, at: s, reason: s, actor: nullable(Actor) }),
    ),
  },
  PaymentOutCodec.type.types[1].props,
);

export const ReviewOutCodec = closed('Review', {
  id: s,
  sessionId: s,
  serviceId: s,
  clientId: s,
  clientName: s,
  rating: int,
  comment: s,
  createdAt: s,
});

const LatLng = closed('LatLng', { lat: n, lng: n });

/** A projection's state (projections/runner.ts), in the admin's lag list and GET /healthz. */
export const ProjectionStateCodec = t.keyof({
  starting: null,
  running: null,
  retrying: null,
  failed: null,
  stopped: null,
  standby: null,
});

export const SessionOutCodec = closed('Session', {
  id: uuid,
  name: s,
  state: sessionState,
  price: n,
  currency: s,
  dayAvailability: int,
  minutesDuration: int,
  minutesTravel: int,
  promo: b,
  parking: s,
  parkingDescription: s,
  orderDescription: s,
  paymentId: uuid,
  coachId: uuid,
  clientId: uuid,
  serviceId: uuid,
  addressId: nullable(uuid),
  clientAddress: s,
  clientLocation: nullable(LatLng),
  groupId: uuid,
  expirationDate: dayMonthYear,
  paymentState: paymentStatus,
  paymentExpirationAt: dayMonthYear,
  slot: s,
  startsAt: s,
  endsAt: s,
  reviewed: b,
});

export const UserOutCodec = closed('User', {
  id: uuid,
  username: s,
  name: s,
  surname: s,
  firstName: s,
  lastName: s,
  fullName: s,
  email: s,
  phone: s,
  timezone: s,
  rating: nullable(n),
  mediaFilename: s,
  mediaPreviewFilename: s,
  mediaType: s,
  roleList: s,
  birthDate: nullable(calendarDate),
  gender: s,
  available: b,
  verified: b,
  type: s,
  languages: s,
  description: s,
  avatar: s,
  avatarUrl: s,
  mediaUrl: s,
  mediaPreviewUrl: s,
});

/** A client's package and the sessions left of it (availability 6, 11 and the coach-client view 12). */
export const PackageOutCodec = closed('Package', {
  packageId: uuid,
  serviceId: uuid,
  serviceName: s,
  numberOfSessions: int,
  bookedSessions: int,
  remainingSessions: int,
  expirationDate: dayMonthYear,
  expired: b,
  paymentState: paymentStatus,
  open: b,
});

/** 12. The User, plus the client's packages with the calling coach. */
export const CoachClientCodec = closed('CoachClient', {
  ...UserOutCodec.type.props,
  packages: t.array(PackageOutCodec),
});

export const UserProfileOutCodec = closed('UserProfileOut', {
  id: uuid,
  gender: s,
  birthDate: nullable(calendarDate),
  timezone: s,
  firstName: s,
  lastName: s,
  description: s,
  languages: t.array(s),
  experience: int,
  requiresParking: b,
  type: s,
  username: s,
  phone: s,
  email: s,
  verifiedPhone: b,
  verifiedEmail: b,
  available: b,
  verified: b,
  avatarUrl: s,
  mediaType: s,
  mediaUrl: s,
  mediaPreviewUrl: s,
  sessionCount: int,
  totalPayment: int,
  totalPaymentCurrency: s,
  profileCompletion: percent,
});

/** PUT /api/v1/users/{user_id} (14 of the private side): the stored profile with its id. */
export const UserProfileRecordCodec = closed('UserProfile', {
  id: s,
  username: s,
  firstName: s,
  lastName: s,
  email: s,
  phone: s,
  whatsapp: s,
  timezone: s,
  languages: t.array(s),
  gender: s,
  birthDate: nullable(calendarDate),
  description: s,
  type: s,
  experience: n,
  avatarUrl: s,
  mediaType: s,
  mediaUrl: s,
  mediaPreviewUrl: s,
  verified: b,
  verifiedEmail: b,
  verifiedPhone: b,
  available: b,
  requiresParking: b,
});

export const PublicCoachProfileOutCodec = closed('PublicCoachProfileOut', {
  firstName: s,
  lastName: s,
  phone: s,
  whatsapp: s,
  gender: s,
  description: s,
  languages: t.record(s, t.literal(true)),
  avatarUrl: s,
  mediaType: s,
  mediaUrl: s,
  mediaPreviewUrl: s,
  rating: nullable(n),
  serviceTypes: t.array(s),
  services: t.array(ServiceOutCodec),
  images: t.array(FileBaseCodec),
  videos: t.array(FileBaseCodec),
  certificates: t.array(FileBaseCodec),
  distance: nullable(n),
  experience: int,
  price: nullable(n),
  minPrice: nullable(n),
  maxPrice: nullable(n),
  priceCurrency: nullable(s),
  sessionCount: int,
  verified: b,
});

/** GET /api/v1/coaches: one coach of the search (src/resources/coachCard.ts). */
export const CoachCardCodec = closed('CoachCard', {
  id: uuid,
  firstName: s,
  lastName: s,
  avatarUrl: s,
  languages: t.record(s, t.literal(true)),
  experience: int,
  verified: b,
  rating: nullable(n),
  sessionCount: int,
  serviceTypes: t.array(s),
  minPrice: n,
  maxPrice: n,
  priceCurrency: s,
  distance: nullable(n),
});

const Interval = closed('Interval', { start: s, end: s });
/** PUT /api/v1/coach/schedule answers the schedule it stored. */
export const ScheduleCodec = closed('Schedule', {
  timezone: s,
  weekly: t.partial({
    monday: t.array(Interval),
    tuesday: t.array(Interval),
    wednesday: t.array(Interval),
    thursday: t.array(Interval),
    friday: t.array(Interval),
    saturday: t.array(Interval),
    sunday: t.array(Interval),
  }),
  overrides: t.record(s, t.array(Interval)),
});

const FreeSlot = closed('FreeSlot', { slot: s, startsAt: s, endsAt: s, remainingSeats: int });

/** 6. Free slots of one service. */
export const ServiceAvailabilityCodec = closed('ServiceAvailability', {
  serviceId: uuid,
  coachId: uuid,
  timezone: s,
  fromDate: calendarDate,
  toDate: calendarDate,
  minutesDuration: int,
  minutesTravel: int,
  groupSession: b,
  slots: t.array(FreeSlot),
  packages: t.array(PackageOutCodec),
});

/** 11. Every approved service of a coach with its free slots. */
export const CoachAvailabilityCodec = closed('CoachAvailability', {
  coachId: uuid,
  timezone: s,
  fromDate: calendarDate,
  toDate: calendarDate,
  minutesTravel: int,
  services: t.array(
    closed('ServiceSlots', {
      service: ServiceOutCodec,
      slots: t.array(FreeSlot),
      packages: t.array(PackageOutCodec),
    }),
  ),
});

/** `metadata.actor` of an event: who made it (`{userId, role}`). */
const EventActor = t.type({ userId: s, role: s });
/** An event's metadata as every audit shows it: these three always (null when absent), and the rest. */
const AuditMetadata = t.type({
  actor: nullable(EventActor),
  correlationId: nullable(s),
  causationId: nullable(s),
});
/** An event as every audit shows it (the stream audit, the export's lines, the correlation chain). */
export const AuditEventOut = t.type({
  eventId: s,
  position: s,
  stream: s,
  revision: int,
  type: s,
  data: t.unknown,
  metadata: AuditMetadata,
  recordedAt: s,
});
/** An event as the payment and session audits show it: the stream audit's fields, and `createdAt` as before. */
const AuditEvent = t.intersection([AuditEventOut, t.type({ createdAt: s })]);

/** A secret an audit shows as set, never with its value. */
const REDACTED = t.literal('[redacted]');
/** The payment replay's `stateAt`: the payment folded up to `at`, its revision and its last change. */
const PaymentAuditState = closedWith(
  'PaymentAuditState',
  {
    id: s,
    groupId: s,
    ...PaymentOutCodec.type.types[0].props,
    expiresAt: s,
    revision: int,
    lastChange: closed('PaymentLastChange', {
      eventId: s,
      type: s,
      at: s,
      reason: nullable(s),
      actor: nullable(EventActor),
    }),
  },
  { clientSecret: REDACTED, checkout: REDACTED },
);

/** Audit of a payment: its events and its state at `at`. */
export const PaymentAuditCodec = closed('PaymentAudit', {
  paymentId: s,
  at: nullable(s),
  events: t.array(AuditEvent),
  stateAt: nullable(PaymentAuditState),
});

/** Audit of a session: the events of its booking that concern it, and its state at `at`. */
export const SessionAuditCodec = closed('SessionAudit', {
  sessionId: s,
  groupId: s,
  at: nullable(s),
  stateAt: nullable(s),
  slotAt: nullable(closed('SessionSlotAt', { slot: s, startsAt: s, endsAt: s })),
  lastChange: nullable(
    closed('SessionLastChange', {
      eventId: s,
      type: s,
      at: s,
      reason: nullable(s),
      actor: nullable(EventActor),
    }),
  ),
  events: t.array(t.intersection([AuditEvent, t.type({ id: s })])),
});

const TypeCounts = { total: int, unread: int, delivered: int };
/** 31. Notification counts, overall and per type. */
export const NotificationCountsCodec = closed('NotificationCounts', {
  ...TypeCounts,
  byType: t.array(closed('NotificationTypeCounts', { type: s, ...TypeCounts })),
});

export const DeliveredNotificationCodec = closed('DeliveredNotification', {
  id: s,
  status: t.literal('delivered'),
  deliveredAt: nullable(s),
});

const channelFields = {
  id: s,
  type: t.keyof({ email: null, push: null, webhook: null }),
  address: s,
  createdAt: s,
};
/** 27's answer: a new webhook's also carries its `secret`, once. */
export const ChannelCodec = closedWith('NotificationChannel', channelFields, { secret: s });
/** A channel as the caller's list shows it: a webhook's secret is never shown again. */
export const ChannelListedCodec = closed('NotificationChannelListed', channelFields);

export const MailCheckCodec = closedWith(
  'MailProviderCheck',
  { provider: t.keyof({ smtp: null, outbox: null }), status: t.keyof({ ok: null, error: null }) },
  { detail: s },
);

export const EmailQueuedCodec = closed('EmailQueued', {
  id: s,
  status: t.literal('queued'),
  to: s,
  template: s,
});

export const VideoDeletedCodec = closed('VideoDeleted', { id: s, status: t.literal('deleted') });
export const MediaDeletedCodec = closed('MediaDeleted', { id: s, status: t.literal('deleted') });
export const ChannelRemovedCodec = closed('NotificationChannelRemoved', {
  id: s,
  status: t.literal('removed'),
});

/** A calendar feed just opened: its address (relative to the base URL) and token, shown this once. */
export const CalendarFeedIssuedCodec = closed('CalendarFeedIssued', { url: s, token: s, issuedAt: s });

/** Whether the caller has a calendar feed open, and since when. */
export const CalendarFeedStatusCodec = closed('CalendarFeedStatus', {
  open: t.boolean,
  issuedAt: nullable(s),
});

/** One webhook delivery of a notification to a channel, with every attempt. */
export const WebhookDeliveryCodec = closed('WebhookDelivery', {
  id: s,
  notificationId: s,
  channelId: s,
  userId: s,
  url: s,
  status: t.keyof({ pending: null, sending: null, delivered: null, failed: null }),
  attempts: n,
  lastStatusCode: nullable(n),
  lastError: nullable(s),
  nextAttemptAt: nullable(s),
  deliveredAt: nullable(s),
  createdAt: s,
  log: t.array(
    closed('WebhookAttempt', {
      attempt: n,
      at: s,
      statusCode: nullable(n),
      error: nullable(s),
      durationMs: n,
    }),
  ),
});

/** Admin list of services (the review queue): the Service with its coach and creation time. */
export const AdminServiceCodec = closed('AdminService', {
  ...ServiceOutCodec.type.props,
  coachId: s,
  createdAt: s,
});

/** A projection of the answering instance: state, checkpoint and lag behind the log's head. */
export const ProjectionLagCodec = closedWith(
  'ProjectionLag',
  {
    name: s,
    // standby: a process manager another instance runs (it holds the lease); its lag is measured there.
    state: ProjectionStateCodec,
    position: nullable(s),
    // null while the event store does not answer (the lag cannot be measured then)
    lagEvents: nullable(n),
    lagSeconds: nullable(n),
  },
  { error: s },
);

/** An e-mail delivery (the ledger's read model): its state, attempts and last error. */
export const EmailDeliveryCodec = closed('EmailDelivery', {
  id: s,
  recipient: s,
  to: s,
  subject: s,
  template: s,
  status: t.keyof({ sending: null, sent: null, deferred: null, failed: null }),
  attempts: n,
  messageId: s,
  error: nullable(s),
  nextAttemptAt: nullable(s),
  createdAt: s,
  sentAt: nullable(s),
  updatedAt: s,
});

/**
 * 30. One notification for an admin, with its webhook deliveries and the e-mails its cause sent its user
 * (null when its cause is not recorded: a row written before migration 113, until a rebuild).
 */
export const AdminNotificationDetailCodec = closed('AdminNotificationDetail', {
  ...AdminNotificationCodec.type.props,
  webhookDeliveries: t.array(WebhookDeliveryCodec),
  emailDeliveries: nullable(t.array(EmailDeliveryCodec)),
});

/** The codecs that become named schemas under components/schemas. */
export const NAMED_ANSWER_CODECS: Record<string, t.Mixed> = {
  Service: ServiceOutCodec,
  FileBase: FileBaseCodec,
  ProfileMedia: ProfileMediaOutCodec,
  AddressOut: AddressOutCodec,
  Notification: NotificationOutCodec,
  AdminNotification: AdminNotificationCodec,
  WebhookDelivery: WebhookDeliveryCodec,
  Payment: PaymentOutCodec,
  EmailDelivery: EmailDeliveryCodec,
  PaymentDetail: PaymentDetailCodec,
  Review: ReviewOutCodec,
  Session: SessionOutCodec,
  User: UserOutCodec,
  CoachClient: CoachClientCodec,
  Package: PackageOutCodec,
  UserProfileOut: UserProfileOutCodec,
  PublicCoachProfileOut: PublicCoachProfileOutCodec,
  CoachCard: CoachCardCodec,
};

/* The TypeScript shapes the code builds must fit these codecs (a changed or removed field fails here). */
type Fits<_Codec, _Shape extends _Codec> = true;
export type AnswerCodecsFitTheResources = [
  Fits<t.TypeOf<typeof ServiceOutCodec>, ServiceOut>,
  Fits<t.TypeOf<typeof FileBaseCodec>, FileBase>,
  Fits<t.TypeOf<typeof ProfileMediaOutCodec>, ProfileMediaOut>,
  Fits<t.TypeOf<typeof WebhookDeliveryCodec>, WebhookDeliveryOut>,
  Fits<t.TypeOf<typeof EmailDeliveryCodec>, EmailDeliveryOut>,
  Fits<t.TypeOf<typeof AddressOutCodec>, AddressOut>,
  Fits<t.TypeOf<typeof NotificationOutCodec>, NotificationOut>,
  Fits<t.TypeOf<typeof PaymentOutCodec>, PaymentOut>,
  Fits<t.TypeOf<typeof ReviewOutCodec>, ReviewOut>,
  Fits<t.TypeOf<typeof SessionOutCodec>, SessionOut>,
  Fits<t.TypeOf<typeof UserOutCodec>, UserOut>,
  Fits<t.TypeOf<typeof PackageOutCodec>, PackageOut>,
  Fits<t.TypeOf<typeof UserProfileOutCodec>, UserProfileOut>,
  Fits<t.TypeOf<typeof PublicCoachProfileOutCodec>, PublicCoachProfileOut>,
  Fits<t.TypeOf<typeof CoachCardCodec>, CoachCard>,
];
