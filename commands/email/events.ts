import type { DomainEvent } from '../../src/decider';

export const EMAIL_TEMPLATES = [
  'verification',
  'booking',
  'approve',
  'cancel',
  'decline',
  'dispute',
  'reschedule',
] as const;
export type EmailTemplate = (typeof EMAIL_TEMPLATES)[number];

/** What a template is filled with. Captured when the e-mail is decided, so a replay renders the same text. */
export interface EmailFacts {
  template: EmailTemplate;
  /** The recipient's role in the session ('user' for verification). */
  role: 'client' | 'coach' | 'user';
  recipientName: string;
  serviceName?: string;
  /** Local date-times of the sessions concerned, in `timezone`. */
  slots?: string[];
  timezone?: string;
  reason?: string;
  by?: string;
  /** A reschedule's former local date-time, in `timezone` (`slots` holds the new one). */
  previousSlot?: string;
  code?: string;
  link?: string;
}

/** A private endpoint (18 to 23) asked for an e-mail; the e-mail process manager sends it once. */
export type EmailRequested = DomainEvent<
  'EmailRequested',
  {
    emailId: string;
    userId: string;
    to: string;
    groupId: string | null;
    sessionId: string | null;
    facts: EmailFacts;
    requestedAt: string;
  }
>;

export type EmailEvent = EmailRequested;

export const emailStream = (emailId: string) => `email-${emailId}`;
