import * as t from 'io-ts';
import { Uuid, boundedString, finiteNumberIn, strict, requiredText } from '../../src/http/validation';

const text = (max: number) => boundedString(max);

/** POST /api/v1/nav/addreses body: AddressOut without `id` and `position`. */
export const CreateAddressBody = strict(
  {
    lat: finiteNumberIn(-90, 90, 'latitude'),
    lng: finiteNumberIn(-180, 180, 'longitude'),
    name: requiredText(120),
    address: requiredText(500),
  },
  {
    zoom: finiteNumberIn(0, 25, 'zoom'),
    isDefault: t.boolean,
    country: text(100),
    state: text(100),
    city: text(100),
    line1: text(200),
    line2: text(200),
    zip: text(20),
    details: text(1000),
  },
  'AddressIn',
);
export type CreateAddressBody = t.TypeOf<typeof CreateAddressBody>;

/** The `{address_id}` of DELETE and PUT .../default. */
export const AddressIdPath = t.type({ address_id: Uuid });
