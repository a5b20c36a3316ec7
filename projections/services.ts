import type { ServiceEvent } from '../commands/services/events';
import { assertNever } from '../src/decider';
import type { Projection } from './runner';
import { bumped, userScope } from '../src/readModels/readVersions';

/** Each change bumps its coach's cached reads (availability, profile) with it. */
const SET_STATUS = bumped('UPDATE services SET status = $2 WHERE id = $1', 'services');
const INSERT_SERVICE = bumped(
  `INSERT INTO services (id, coach_id, status, fields, created_at) VALUES ($1, $2, $3, $4::jsonb, $5)`,
  'services',
);
const UPDATE_FIELDS = bumped('UPDATE services SET fields = fields || $2::jsonb WHERE id = $1', 'services');

/** Read model `services`: one row per service, its editable fields as jsonb, its status in a column. */
export const servicesProjection: Projection = {
  name: 'services',
  handles: ['ServiceCreated', 'ServiceUpdated', 'ServiceApproved', 'ServiceRejected', 'ServiceResubmitted'],
  async apply(tx, recorded) {
    const event = { type: recorded.type, data: recorded.data } as ServiceEvent;
    const coach = [userScope(event.data.coachId)];
    const setStatus = (id: string, status: string) => tx.query(SET_STATUS, [id, status, coach]);
    switch (event.type) {
      case 'ServiceCreated': {
        const { serviceId, coachId, status, createdAt, ...fields } = event.data;
        await tx.query(INSERT_SERVICE, [
          serviceId,
          coachId,
          status,
          JSON.stringify(fields),
          createdAt,
          coach,
        ]);
        return;
      }
      case 'ServiceUpdated':
        await tx.query(UPDATE_FIELDS, [event.data.serviceId, JSON.stringify(event.data.changes), coach]);
        return;
      case 'ServiceApproved':
        await setStatus(event.data.serviceId, 'approved');
        return;
      case 'ServiceRejected':
        await setStatus(event.data.serviceId, 'rejected');
        return;
      case 'ServiceResubmitted':
        await setStatus(event.data.serviceId, 'review');
        return;
      default:
        assertNever(event);
    }
  },
};
