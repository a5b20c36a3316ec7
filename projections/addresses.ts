import type { AddressEvent } from '../commands/addresses/events';
import { assertNever } from '../src/decider';
import type { Projection } from './runner';
import { bumped, userScope } from '../src/readModels/readVersions';

/** Each change bumps the user's cached reads (availability's travel, the profile's distance) with it. */
const INSERT_ADDRESS = bumped(
  `INSERT INTO addresses (id, user_id, lat, lng, zoom, name, address, country, state, city, line1, line2, zip,
     details, created_at, seq)
   VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16)`,
  'addresses',
);
const SET_DEFAULT = bumped('UPDATE addresses SET is_default = true WHERE id = $1', 'addresses');
const REMOVE = bumped('DELETE FROM addresses WHERE id = $1', 'addresses');

/** Read model `addresses`: one row per saved address; `seq` is the stream revision, for newest-first order. */
export const addressesProjection: Projection = {
  name: 'addresses',
  handles: ['AddressAdded', 'DefaultAddressChanged', 'AddressRemoved'],
  async apply(tx, recorded) {
    const event = { type: recorded.type, data: recorded.data } as AddressEvent;
    switch (event.type) {
      case 'AddressAdded': {
        const { addressId, userId, fields: f, addedAt } = event.data;
        await tx.query(INSERT_ADDRESS, [
          addressId,
          userId,
          f.lat,
          f.lng,
          f.zoom,
          f.name,
          f.address,
          f.country,
          f.state,
          f.city,
          f.line1,
          f.line2,
          f.zip,
          f.details,
          addedAt,
          recorded.revision.toString(),
          [userScope(userId)],
        ]);
        return;
      }
      case 'DefaultAddressChanged':
        // Clear first: the partial unique index allows one default per user at any instant.
        await tx.query(
          'UPDATE addresses SET is_default = false WHERE user_id = $1 AND is_default AND id <> $2',
          [event.data.userId, event.data.addressId],
        );
        await tx.query(SET_DEFAULT, [event.data.addressId, [userScope(event.data.userId)]]);
        return;
      case 'AddressRemoved':
        await tx.query(REMOVE, [event.data.addressId, [userScope(event.data.userId)]]);
        return;
      default:
        assertNever(event);
    }
  },
};
