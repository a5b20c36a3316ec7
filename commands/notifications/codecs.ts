import * as t from 'io-ts';
import { Uuid, boundedString, codePointLength, refine, strict } from '../../src/http/validation';
import { isDeliverable, isMailbox } from '../../src/mail/compose';
import { describeSchema, sharpenSchema } from '../../src/http/openapi/jsonSchema';
import { webhookUrlProblem } from '../../src/webhooks/target';

const IDS_MESSAGE = 'List should have 1 to 200 notification ids';
const Ids = describeSchema(
  refine(t.array(Uuid), (a) => a.length >= 1 && a.length <= 200, 'ids', IDS_MESSAGE),
  {
    type: 'array',
    items: { type: 'string', format: 'uuid' },
    minItems: 1,
    maxItems: 200,
    description: IDS_MESSAGE,
  },
);

/** 25. PUT /api/v1/notifications */
export const MarkReadBody = strict({ notifications: Ids }, {}, 'MarkNotificationsRead');
/** 26. POST /api/v1/notification/event */
export const NotificationEventBody = strict({ notificationIds: Ids }, {}, 'NotificationEvent');

/** A channel's address, as sent and as stored. */
const ADDRESS_MAX = 500;
const EMAIL_RE = /^[^\s@]+@[^\s@]+\.[^\s@]+$/;
/** 27. POST /api/v1/notification/channel: the address must suit the type (checked in the route). */
export const ChannelBody = strict(
  {
    type: t.keyof({ email: null, push: null, webhook: null }),
    // Checked by type once decoded (channelAddressProblem): said in /openapi.json, where a schema cannot.
    address: sharpenSchema(boundedString(ADDRESS_MAX, 1), {
      description:
        'By `type`: `email` an e-mail address (at most 254 characters); `push` a token without spaces; ' +
        '`webhook` an https URL to a public address (at most 500 characters once normalized)',
    }),
  },
  {},
  'NotificationChannel',
);

/** DELETE /api/v1/notification/channel/{channel_id} */
export const ChannelIdPath = t.type({ channel_id: Uuid });

/** `allowLoopback`: WEBHOOK_ALLOW_LOOPBACK (http:// and private addresses for tests and development). */
export function channelAddressProblem(
  type: 'email' | 'push' | 'webhook',
  address: string,
  allowLoopback = false,
): string | null {
  // One mailbox a mail server takes, as profiles are checked: no list, quotes or angle brackets a mail header
  // would misread, no dot-atom a server refuses (`a..b@x.com`), no invisible character, at most 254
  // characters (the longest address SMTP carries).
  if (type === 'email')
    return address.length <= 254 && EMAIL_RE.test(address) && isMailbox(address) && isDeliverable(address)
      ? null
      : 'Input should be an e-mail address (at most 254 characters)';
  // In its normal form (as stored and answered), which must register the same channel again: a non-ASCII
  // character sent counts as its percent-encoding (`é` is `%C3%A9`).
  if (type === 'webhook')
    return codePointLength(address) > ADDRESS_MAX
      ? `The URL should have at most ${ADDRESS_MAX} characters once normalized (non-ASCII percent-encoded)`
      : webhookUrlProblem(address, allowLoopback);
  return /^\S+$/.test(address) ? null : 'Input should be a push token without spaces';
}
