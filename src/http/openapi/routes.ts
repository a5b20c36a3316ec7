import * as t from 'io-ts';
import { CreateAddressBody } from '../../../commands/addresses/codecs';
import {
  BookingBody,
  DisputeBody,
  ReasonBody,
  RescheduleBody,
  ReviewBody,
} from '../../../commands/booking/codecs';
import { ScheduleBody } from '../../../commands/calendar/codecs';
import { DeliveryIdPath } from '../../../commands/delivery/routes';
import { SessionEmailBody, VerificationBody } from '../../../commands/email/routes';
import { ChannelBody, MarkReadBody, NotificationEventBody } from '../../../commands/notifications/codecs';
import { PaymentUpdateBody } from '../../../commands/payments/codecs';
import { CreateServiceBody, RejectServiceBody, UpdateServiceBody } from '../../../commands/services/codecs';
import { UpsertUserProfileBody } from '../../../commands/users/codecs';
import { CoachSearchQuery } from '../../../queries/coachSearch';
import { MediaFields } from '../../../commands/users/media';
import { ReorderBody, VideoFields } from '../../../commands/videos/routes';
import { AdminServicesQuery, EmailDeliveriesQuery } from '../../../queries/admin';
import { RangeQuery } from '../../../queries/availability';
import { AdminFilter, UnreadFilter } from '../../../queries/notifications';
import { KindQuery } from '../../../queries/profileMedia';
import { WebhookFilter } from '../../../queries/webhooks';
import { AuditQuery } from '../../../queries/paymentAudit';
import { SessionsFilter } from '../../../queries/sessions';
import { AuditChainCodec, ExportQuery, StreamAuditCodec, StreamQuery } from '../../../queries/audit';
import * as A from '../../resources/codecs';
import { IntFromString, IsoInstant, Paging } from '../validation';
import { describeSchema } from './jsonSchema';

/** A lease in GET /healthz (src/leases.ts, LeaseInfo). */
const HealthLease = t.exact(
  t.type({
    name: t.string,
    owner: t.union([t.string, t.null]),
    expiresAt: t.union([t.string, t.null]),
    mine: t.boolean,
  }),
);
/** A projection in GET /healthz (projections/runner.ts, ProjectionStatus; `error` and `failedEvent` for an admin). */
const HealthProjection = t.exact(
  t.intersection([
    t.type({
      name: t.string,
      state: A.ProjectionStateCodec,
      position: t.union([t.exact(t.type({ commit: t.string, prepare: t.string })), t.null]),
      mode: t.keyof({ live: null, 'catch-up': null }),
      queued: A.int,
    }),
    t.partial({
      lease: t.exact(t.type({ name: t.string, held: t.boolean })),
      error: t.string,
      failedEvent: t.exact(
        t.type({ id: t.string, type: t.string, streamName: t.string, position: t.string }),
      ),
    }),
  ]),
);

/**
 * What the routers cannot tell about their routes: the codecs of query, body and answer, a summary and the
 * interface document's endpoint number. Paths, path parameters and roles are read off the routers
 * themselves (src/http/openapi/document.ts); a route missing here, or an entry without its route, fails
 * test/api/openapi.test.ts. Codecs are the ones the routes decode with, imported, never restated.
 */
export interface FilePart {
  name: string;
  accept: string;
  required?: boolean;
}

export interface RouteDoc {
  summary: string;
  /** Number of the endpoint in the interface document (section 4). */
  endpoint?: number;
  tag: string;
  /** Path parameters the route decodes with its own codec (a `t.type`); other `*_id` ones are uuids. */
  params?: t.Mixed;
  query?: t.Mixed;
  /** JSON body; `optional` when an absent or empty body is fine. */
  body?: { codec: t.Mixed; optional?: boolean; example?: unknown };
  multipart?: { fields: t.Mixed; files: FilePart[] };
  /** The 200 answer: a codec (JSON), `binary` (a stored file), `prometheus` (text exposition), `html`. */
  answer: t.Mixed | 'binary' | 'prometheus' | 'html' | 'ndjson' | 'icalendar';
  /** The answer may also be this page when the client asks for text/html (endpoint 31). */
  alsoHtml?: boolean;
  /** Statuses beyond the ones every route of its kind has (see document.ts). */
  extraStatuses?: number[];
  /** A `binary` answer served by byte ranges too: 206 with `Content-Range`, 416 past the end. */
  ranges?: boolean;
  /** Headers of the 200 answer beyond the usual ones (14's `X-Media-Id`). */
  okHeaders?: Record<string, { schema: Record<string, unknown>; description: string }>;
  description?: string;
}

/**
 * `Paging` of the lists that `paging()` reads, with its defaults (limit 50, offset 0); the lists answered
 * whole without a `limit` (a coach's services, addresses) keep `Paging`.
 */
const DefaultPaging = t.partial({
  limit: describeSchema(IntFromString(1, 200), { type: 'integer', minimum: 1, maximum: 200, default: 50 }),
  offset: describeSchema(IntFromString(0, 1_000_000), {
    type: 'integer',
    minimum: 0,
    maximum: 1_000_000,
    default: 0,
  }),
});

const list = <C extends t.Mixed>(c: C) => t.array(c);
const VIDEO_FILES: FilePart[] = [
  { name: 'file', accept: 'video/*', required: true },
  { name: 'preview', accept: 'image/*' },
];

/** 15 to 17: the `Payment` record has no id, so the answer names the payment it shows (17's choice). */
const PAYMENT_ID_HEADER = {
  'X-Payment-Id': {
    schema: { type: 'string', format: 'uuid' },
    description: 'The id of the payment answered (for 17, the payment it chose); a replay names the same id',
  },
};
export const ROUTE_DOCS: Record<string, RouteDoc> = {
  // Videos
  'POST /api/v1/storage/video': {
    endpoint: 1,
    tag: 'Videos',
    summary: 'Upload a preview video (coach)',
    multipart: { fields: VideoFields, files: VIDEO_FILES },
    answer: A.FileBaseCodec,
  },
  'GET /api/v1/storage/videos': {
    endpoint: 2,
    tag: 'Videos',
    summary: "The caller's videos in their order",
    answer: list(A.FileBaseCodec),
  },
  'PUT /api/v1/storage/videos/order': {
    endpoint: 3,
    tag: 'Videos',
    summary: 'Reorder the videos: `order` must be a permutation of the video ids',
    body: { codec: ReorderBody },
    answer: list(A.FileBaseCodec),
  },
  'PUT /api/v1/storage/video/:video_id': {
    endpoint: 4,
    tag: 'Videos',
    summary: 'Replace a video, its preview or its title and description',
    multipart: {
      fields: VideoFields,
      files: VIDEO_FILES.map((f) => ({ name: f.name, accept: f.accept })),
    },
    answer: A.FileBaseCodec,
  },
  'DELETE /api/v1/storage/video/:video_id': {
    endpoint: 5,
    tag: 'Videos',
    summary: 'Delete a video',
    answer: A.VideoDeletedCodec,
  },
  'GET /api/v1/storage/files/:key': {
    tag: 'Videos',
    summary: 'A stored file (video, preview, profile media) by the key in its URL',
    answer: 'binary',
    ranges: true,
    extraStatuses: [416],
    okHeaders: {
      'Accept-Ranges': { schema: { const: 'bytes' }, description: 'One byte range may be asked for (206)' },
      'Cache-Control': { schema: { type: 'string' }, description: '`public, max-age=3600`' },
      'X-Content-Type-Options': { schema: { const: 'nosniff' }, description: 'Read as its stored type only' },
      'Content-Security-Policy': {
        schema: { type: 'string' },
        description: "`default-src 'none'; sandbox` (not on a PDF, which the browser's viewer shows)",
      },
    },
  },
  // Services and sessions
  'GET /api/v1/service/:service_id/availability': {
    endpoint: 6,
    tag: 'Services',
    summary: "Free slots of a service, as local date-times in the coach's time zone",
    query: RangeQuery,
    answer: A.ServiceAvailabilityCodec,
  },
  'GET /api/v1/service/:service_id': {
    endpoint: 7,
    tag: 'Services',
    summary: 'One service (in review or rejected: its coach, admins and a client with an open package of it)',
    answer: A.ServiceOutCodec,
  },
  'POST /api/v1/service/:service_id': {
    endpoint: 8,
    tag: 'Sessions',
    summary: 'Book slots of a service (client): one session per slot and one payment',
    body: { codec: BookingBody, example: { slots: ['2026-12-02T10:00:00'], method: 'card' } },
    answer: list(A.SessionOutCodec),
  },
  'GET /api/v1/service/:coach_id/reviews': {
    endpoint: 9,
    tag: 'Services',
    summary: 'Reviews of a coach, newest first',
    query: DefaultPaging,
    answer: list(A.ReviewOutCodec),
  },
  'GET /api/v1/coach/:coach_id/services': {
    endpoint: 10,
    tag: 'Services',
    summary: "A coach's services (unapproved ones to the coach and admins only)",
    query: Paging,
    answer: list(A.ServiceOutCodec),
  },
  'GET /api/v1/coach/:coach_id/availability': {
    endpoint: 11,
    tag: 'Services',
    summary:
      "Every approved service of a coach with its free slots (and those of the caller's open packages)",
    query: RangeQuery,
    answer: A.CoachAvailabilityCodec,
  },
  'GET /api/v1/coach/client/:client_id': {
    endpoint: 12,
    tag: 'Users',
    summary: 'A client that has booked the calling coach (admins: any client), with its packages',
    answer: A.CoachClientCodec,
  },
  'GET /api/v1/coaches': {
    tag: 'Users',
    summary:
      'Find coaches with an approved service: by name or service name (`q`), service type, price, distance; ' +
      'ordered by rating, distance or price',
    query: CoachSearchQuery,
    answer: list(A.CoachCardCodec),
  },
  'GET /api/v1/coach/:coach_id/profile': {
    endpoint: 13,
    tag: 'Users',
    summary: "A coach's public profile with services, videos and prices",
    answer: A.PublicCoachProfileOutCodec,
  },
  'POST /api/v1/storage/profile/media': {
    endpoint: 14,
    tag: 'Users',
    summary: "Upload the caller's profile picture or video (`kind` media), or a profile image or certificate",
    multipart: {
      fields: MediaFields,
      files: [
        { name: 'file', accept: 'image/*, video/*, application/pdf', required: true },
        { name: 'preview', accept: 'image/*' },
      ],
    },
    answer: A.UserProfileOutCodec,
    okHeaders: {
      'X-Media-Id': {
        schema: { type: 'string', format: 'uuid' },
        description:
          'The id of the picture or certificate added (`kind` image or certificate); a replay names the same id',
      },
    },
  },
  'GET /api/v1/storage/profile/media': {
    tag: 'Users',
    summary: "The caller's profile images and certificates (`kind` filters), in upload order",
    query: KindQuery,
    answer: list(A.ProfileMediaOutCodec),
  },
  'DELETE /api/v1/storage/profile/media/:media_id': {
    tag: 'Users',
    summary: "Remove one of the caller's profile images or certificates",
    answer: A.MediaDeletedCodec,
  },
  'PUT /api/v1/users/:user_id': {
    tag: 'Users',
    summary: 'Create or change a user profile (account service, admin)',
    body: { codec: UpsertUserProfileBody, optional: true },
    answer: A.UserProfileRecordCodec,
  },
  'GET /api/v1/users/:user_id': {
    tag: 'Users',
    summary: 'A user profile as stored (the user itself, the account service, admins; others 404)',
    answer: A.UserProfileRecordCodec,
  },
  'GET /api/v1/coach/schedule': {
    tag: 'Services',
    summary: "The calling coach's schedule as last published (weekly hours and date overrides)",
    answer: A.ScheduleCodec,
  },
  'PUT /api/v1/coach/schedule': {
    tag: 'Services',
    summary: "Publish the calling coach's weekly hours and date overrides (replaces the schedule)",
    body: { codec: ScheduleBody },
    answer: A.ScheduleCodec,
  },
  'POST /api/v1/coach/services': {
    tag: 'Services',
    summary: 'Create a service (coach); it waits for review',
    body: { codec: CreateServiceBody },
    answer: A.ServiceOutCodec,
  },
  'PUT /api/v1/coach/services/:service_id': {
    tag: 'Services',
    summary: 'Change a service (its coach); fields left out keep their value',
    body: { codec: UpdateServiceBody, optional: true },
    answer: A.ServiceOutCodec,
  },
  'POST /api/v1/admin/services/:service_id/approve': {
    tag: 'Admin',
    summary: 'Approve a service in review',
    answer: A.ServiceOutCodec,
  },
  'POST /api/v1/admin/services/:service_id/reject': {
    tag: 'Admin',
    summary: 'Reject a service in review, with an optional reason',
    body: { codec: RejectServiceBody, optional: true },
    answer: A.ServiceOutCodec,
  },
  'GET /api/v1/session/:session_id': {
    tag: 'Sessions',
    summary: 'One session (its client, its coach, admins)',
    answer: A.SessionOutCodec,
  },
  'GET /api/v1/sessions': {
    tag: 'Sessions',
    summary: "The caller's sessions (as client or coach), latest first; by state, part and start",
    query: t.intersection([DefaultPaging, SessionsFilter]),
    answer: list(A.SessionOutCodec),
  },
  'POST /api/v1/session/:session_id/approve': {
    tag: 'Sessions',
    // The other party's action (a client approving, a coach reviewing) is 403.
    extraStatuses: [403],
    summary: 'The coach approves a booked session',
    answer: A.SessionOutCodec,
  },
  'POST /api/v1/session/:session_id/decline': {
    tag: 'Sessions',
    extraStatuses: [403],
    summary: 'The coach declines a booked session',
    body: { codec: ReasonBody, optional: true },
    answer: A.SessionOutCodec,
  },
  'POST /api/v1/session/:session_id/cancel': {
    tag: 'Sessions',
    extraStatuses: [403],
    summary: 'Client or coach cancels a session (within the cancellation window)',
    body: { codec: ReasonBody, optional: true },
    answer: A.SessionOutCodec,
  },
  'POST /api/v1/session/:session_id/reschedule': {
    tag: 'Sessions',
    summary:
      'Client or coach moves a new or approved session to another free slot (same session, payment and price)',
    body: { codec: RescheduleBody, example: { slot: '2026-12-02T14:00:00' } },
    answer: A.SessionOutCodec,
  },
  'POST /api/v1/session/:session_id/complete': {
    tag: 'Sessions',
    extraStatuses: [403],
    summary: 'The coach marks an approved session completed (not before its start)',
    answer: A.SessionOutCodec,
  },
  'POST /api/v1/session/:session_id/dispute': {
    tag: 'Sessions',
    extraStatuses: [403],
    summary:
      'The client disputes a completed session, or an approved one that is over and was never completed (within 30 days)',
    body: { codec: DisputeBody },
    answer: A.SessionOutCodec,
  },
  'POST /api/v1/session/:session_id/review': {
    tag: 'Sessions',
    extraStatuses: [403],
    summary: 'The client reviews a completed session (once)',
    body: { codec: ReviewBody },
    answer: A.SessionOutCodec,
  },
  // Payments
  'POST /api/v1/payment/private/payment/:payment_id/update': {
    endpoint: 15,
    tag: 'Payments (private)',
    summary: 'The payment provider reports a status change',
    body: { codec: PaymentUpdateBody, example: { status: 'checkout', clientSecret: 'pi_123_secret_456' } },
    answer: A.PaymentOutCodec,
    okHeaders: PAYMENT_ID_HEADER,
  },
  'POST /api/v1/payment/private/payment/:payment_id/cancel': {
    endpoint: 16,
    tag: 'Payments (private)',
    summary: 'Cancel a payment',
    answer: A.PaymentOutCodec,
    okHeaders: PAYMENT_ID_HEADER,
  },
  'POST /api/v1/payment/private/user/:user_id/update': {
    endpoint: 17,
    tag: 'Payments (private)',
    summary: "Update the user's open payment",
    body: { codec: PaymentUpdateBody },
    answer: A.PaymentOutCodec,
    okHeaders: PAYMENT_ID_HEADER,
  },
  'GET /api/v1/payment/:payment_id': {
    tag: 'Payments',
    summary: 'A payment with its history (payer, coach, admins, auditors)',
    answer: A.PaymentDetailCodec,
  },
  'GET /api/v1/audit/payments/:payment_id/events': {
    tag: 'Audit',
    summary: "A payment's events and its state at `at`",
    query: AuditQuery,
    answer: A.PaymentAuditCodec,
  },
  'GET /api/v1/audit/streams/:stream': {
    tag: 'Audit',
    summary: 'Any stream as of an instant (`at`, recorded time) or a revision, with its folded state',
    query: StreamQuery,
    answer: StreamAuditCodec,
  },
  'GET /api/v1/audit/events': {
    tag: 'Audit',
    summary: 'History export as NDJSON, in log order, filtered and resumable (`after`)',
    query: ExportQuery,
    answer: 'ndjson',
  },
  'GET /api/v1/audit/events/:event_id/chain': {
    tag: 'Audit',
    summary: 'The events that caused an event, and those it caused',
    answer: AuditChainCodec,
  },
  'GET /api/v1/audit/sessions/:session_id/events': {
    tag: 'Audit',
    summary: "A session's events and its state at `at`",
    query: t.partial({ at: IsoInstant }),
    answer: A.SessionAuditCodec,
  },
  // Private e-mail endpoints
  'POST /api/v1/notification/private/email/:user_id/verification': {
    endpoint: 18,
    tag: 'E-mail (private)',
    summary: 'Send a verification e-mail',
    body: { codec: VerificationBody },
    answer: A.EmailQueuedCodec,
  },
  'POST /api/v1/notification/private/email/:user_id/session/:group_id/booking': {
    endpoint: 19,
    tag: 'E-mail (private)',
    summary: 'Send a booking e-mail',
    body: { codec: SessionEmailBody, optional: true },
    answer: A.EmailQueuedCodec,
  },
  'POST /api/v1/notification/private/email/:user_id/session/:session_id/approve': {
    endpoint: 20,
    tag: 'E-mail (private)',
    summary: 'Send a session approval e-mail',
    body: { codec: SessionEmailBody, optional: true },
    answer: A.EmailQueuedCodec,
  },
  'POST /api/v1/notification/private/email/:user_id/session/:session_id/cancel': {
    endpoint: 21,
    tag: 'E-mail (private)',
    summary: 'Send a session cancellation e-mail',
    body: { codec: SessionEmailBody, optional: true },
    answer: A.EmailQueuedCodec,
  },
  'POST /api/v1/notification/private/email/:user_id/session/:session_id/decline': {
    endpoint: 22,
    tag: 'E-mail (private)',
    summary: 'Send a session decline e-mail',
    body: { codec: SessionEmailBody, optional: true },
    answer: A.EmailQueuedCodec,
  },
  'POST /api/v1/notification/private/email/:user_id/session/:session_id/dispute': {
    endpoint: 23,
    tag: 'E-mail (private)',
    summary: 'Send a session dispute e-mail to the coach',
    body: { codec: SessionEmailBody, optional: true },
    answer: A.EmailQueuedCodec,
  },
  // Notifications
  'GET /api/v1/notifications': {
    endpoint: 24,
    tag: 'Notifications',
    summary: "The caller's notifications, newest first",
    query: t.intersection([DefaultPaging, UnreadFilter]),
    answer: list(A.NotificationOutCodec),
  },
  'PUT /api/v1/notifications': {
    endpoint: 25,
    tag: 'Notifications',
    summary: 'Mark notifications read',
    body: { codec: MarkReadBody },
    answer: list(A.NotificationOutCodec),
  },
  'POST /api/v1/notification/event': {
    endpoint: 26,
    tag: 'Notifications',
    summary: 'Report notifications delivered (displayed by the app)',
    body: { codec: NotificationEventBody },
    answer: list(A.DeliveredNotificationCodec),
  },
  'POST /api/v1/notification/channel': {
    endpoint: 27,
    tag: 'Notifications',
    summary: 'Register a delivery channel (e-mail, push token, https webhook)',
    body: { codec: ChannelBody, example: { type: 'email', address: 'lena.weber@demo.coaching.local' } },
    answer: A.ChannelCodec,
  },
  'GET /api/v1/notification/channel': {
    tag: 'Notifications',
    summary: "The caller's delivery channels, in the order registered (a webhook's secret is never shown)",
    answer: list(A.ChannelListedCodec),
  },
  'DELETE /api/v1/notification/channel/:channel_id': {
    tag: 'Notifications',
    summary: 'Remove one of your channels: nothing more is sent to it, queued webhook deliveries are dropped',
    answer: A.ChannelRemovedCodec,
  },
  'POST /api/v1/calendar/feed': {
    tag: 'Calendar feed',
    summary:
      'Open a private calendar feed of your sessions (a new address each time: the last one stops working); the token is shown this once',
    answer: A.CalendarFeedIssuedCodec,
  },
  'GET /api/v1/calendar/feed': {
    tag: 'Calendar feed',
    summary: 'Whether you have a calendar feed open, and since when',
    answer: A.CalendarFeedStatusCodec,
  },
  'DELETE /api/v1/calendar/feed': {
    tag: 'Calendar feed',
    summary: 'Close your calendar feed: its address answers 404 from now on',
    answer: A.CalendarFeedStatusCodec,
  },
  'GET /api/v1/calendar/feed/:file': {
    tag: 'Calendar feed',
    summary:
      'The feed (`<token>.ics`, iCalendar): your sessions as client and coach from 90 days ago on, for calendar apps that subscribe to an address',
    description:
      'The address is the secret: `<token>.ics` with the token as POST /api/v1/calendar/feed gave it; any other is 404 `feed_not_found`. ' +
      'A poll whose `If-None-Match` names the `ETag` of the feed as it is answers 304 without a body.',
    answer: 'icalendar',
    okHeaders: {
      ETag: {
        schema: { type: 'string' },
        description: 'A weak tag of the feed (its DTSTAMPs, the time of the copy, left out)',
      },
    },
  },
  'POST /api/v1/notification/channel/mailprovider-init': {
    endpoint: 28,
    tag: 'Notifications',
    summary: 'Check the mail transport (SMTP connects and authenticates, or the outbox is writable)',
    answer: A.MailCheckCodec,
  },
  'GET /manage/admin/notifications': {
    endpoint: 29,
    tag: 'Admin',
    summary: "Every user's notifications, newest first; filters `user`, `type`, `unread`, `from` and `to`",
    query: t.intersection([DefaultPaging, AdminFilter]),
    answer: list(A.AdminNotificationCodec),
  },
  'GET /manage/admin/notifications/:notification_id': {
    endpoint: 30,
    tag: 'Admin',
    summary: 'One notification, with its webhook deliveries and the e-mails its cause sent its user',
    answer: A.AdminNotificationDetailCodec,
  },
  'GET /admin/notifications': {
    endpoint: 31,
    tag: 'Admin',
    summary: 'Notification counts; a browser asking for text/html gets the admin page',
    description:
      "With `Accept: text/html` preferred (a browser), the answer is the operators' web page, served without " +
      'a token: it signs in with an admin token and reads the JSON endpoints.',
    answer: A.NotificationCountsCodec,
    alsoHtml: true,
  },
  'GET /manage/admin/webhook-deliveries': {
    tag: 'Admin',
    summary: 'The webhook delivery log, newest first; filters `user` and `status`',
    query: t.intersection([DefaultPaging, WebhookFilter]),
    answer: list(A.WebhookDeliveryCodec),
  },
  'GET /api/v1/admin/services': {
    tag: 'Admin',
    summary: 'Services by status (default `review`: the queue waiting for approval), oldest first',
    query: t.intersection([DefaultPaging, AdminServicesQuery]),
    answer: list(A.AdminServiceCodec),
  },
  'GET /api/v1/admin/emails': {
    tag: 'Admin',
    summary: 'E-mail deliveries, latest change first: state, attempts, last error',
    query: t.intersection([DefaultPaging, EmailDeliveriesQuery]),
    answer: list(A.EmailDeliveryCodec),
  },
  'POST /api/v1/admin/emails/:delivery_id/retry': {
    tag: 'Admin',
    params: DeliveryIdPath,
    summary: 'Retry a failed e-mail now (same Message-ID); answers the delivery afterwards',
    answer: A.EmailDeliveryCodec,
  },
  'GET /api/v1/admin/projections': {
    tag: 'Admin',
    summary: "This instance's projections: state, checkpoint, lag in events and seconds",
    answer: list(A.ProjectionLagCodec),
  },
  'GET /admin/assets/:asset': {
    tag: 'Admin',
    summary: "The admin page's script and style sheet",
    answer: 'binary',
  },
  // Addresses
  'GET /api/v1/nav/addreses': {
    endpoint: 32,
    tag: 'Addresses',
    summary: "The caller's saved addresses, newest first",
    query: Paging,
    answer: list(A.AddressOutCodec),
  },
  'POST /api/v1/nav/addreses': {
    endpoint: 33,
    tag: 'Addresses',
    summary: 'Save an address; `isDefault` moves the default to it',
    body: { codec: CreateAddressBody },
    answer: list(A.AddressOutCodec),
  },
  'DELETE /api/v1/nav/addreses/:address_id': {
    tag: 'Addresses',
    summary:
      'Remove one of your addresses (a removed default passes to the newest one left); answers the list',
    answer: list(A.AddressOutCodec),
  },
  'PUT /api/v1/nav/addreses/:address_id/default': {
    tag: 'Addresses',
    summary: 'Make one of your addresses the default; answers the list',
    answer: list(A.AddressOutCodec),
  },
  // Operations
  'GET /healthz': {
    tag: 'Operations',
    summary: 'Health of the event store, the database and every projection (503 when degraded)',
    answer: t.exact(
      t.type({
        status: t.keyof({ ok: null, degraded: null }),
        eventStore: t.exact(t.type({ kind: t.string, status: t.string })),
        database: t.exact(t.type({ kind: t.string, status: t.string })),
        instance: t.string,
        // null while the database does not answer.
        leases: t.union([t.array(HealthLease), t.null]),
        projections: t.array(HealthProjection),
      }),
    ),
    extraStatuses: [503],
  },
  'GET /metrics': {
    tag: 'Operations',
    summary: 'Prometheus metrics (admin JWT, or `Bearer <METRICS_TOKEN>`)',
    answer: 'prometheus',
  },
  'GET /openapi.json': {
    tag: 'Operations',
    summary: 'This document',
    answer: t.UnknownRecord,
  },
  'GET /docs': {
    tag: 'Operations',
    summary: 'The API reference, rendered from this document',
    answer: 'html',
  },
  'GET /docs/:asset': {
    tag: 'Operations',
    summary: "The reference page's files (Swagger UI, served from the service)",
    answer: 'binary',
  },
};
