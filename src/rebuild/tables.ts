/**
 * The tables each read model owns (and nothing else writes). A rebuild recreates exactly these in its
 * shadow schema; a projection that touched a table not listed here fails the rebuild loudly (the shadow
 * schema is the only one on its search_path), so this list cannot silently fall behind the code.
 * test/integration/rebuild.test.ts checks that every read model has an entry.
 */
export const READ_MODEL_TABLES: Readonly<Record<string, readonly string[]>> = {
  addresses: ['addresses'],
  user_profiles: ['user_profiles'],
  services: ['services'],
  coach_clients: ['coach_clients'],
  reviews: ['reviews'],
  completed_sessions: ['completed_sessions'],
  payments: ['payments'],
  payment_history: ['payment_history'],
  payment_expiry: ['payment_expiry_due'],
  session_reminders: ['session_reminder_due'],
  calendar: ['coach_calendars', 'slot_holds'],
  sessions: ['sessions'],
  videos: ['videos'],
  notifications: ['notifications'],
  notification_channels: ['notification_channels'],
  profile_media: ['profile_media'],
  calendar_feeds: ['calendar_feeds'],
  'email-deliveries': ['email_deliveries'],
};
