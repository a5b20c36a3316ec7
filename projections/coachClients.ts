import type { Projection } from './runner';

/** What this read model needs of the booking side's `SessionsBooked` (stream `booking-<groupId>`). */
interface SessionsBookedData {
  groupId: string;
  coachId: string;
  clientId: string;
  serviceId: string;
}

/**
 * Read model `coach_clients`: which clients have booked which coach. It decides who may read a
 * client's profile (GET /api/v1/coach/client/{client_id}). A later cancel keeps the row: the coach has
 * still had dealings with that client.
 */
export const coachClientsProjection: Projection = {
  name: 'coach_clients',
  handles: ['SessionsBooked'],
  async apply(tx, recorded) {
    const { coachId, clientId } = recorded.data as SessionsBookedData;
    await tx.query(
      `INSERT INTO coach_clients (coach_id, client_id, first_booked_at) VALUES ($1, $2, $3)
       ON CONFLICT DO NOTHING`,
      [coachId, clientId, recorded.createdAt.toISOString()],
    );
  },
};
