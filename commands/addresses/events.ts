import type { DomainEvent } from '../../src/decider';

/** The fields a user gives an address (AddressOut without `id` and `position`). */
export interface AddressFields {
  lat: number;
  lng: number;
  zoom: number;
  name: string;
  address: string;
  country: string;
  state: string;
  city: string;
  line1: string;
  line2: string;
  zip: string;
  details: string;
}

export type AddressAdded = DomainEvent<
  'AddressAdded',
  { addressId: string; userId: string; fields: AddressFields; addedAt: string }
>;
/** The user's default moved to `addressId` (from `previousId`, null when there was none). */
export type DefaultAddressChanged = DomainEvent<
  'DefaultAddressChanged',
  { addressId: string; userId: string; previousId: string | null }
>;

/** The user removed `addressId`; a removed default is followed by the move of the default to another one. */
export type AddressRemoved = DomainEvent<
  'AddressRemoved',
  { addressId: string; userId: string; removedAt: string }
>;

export type AddressEvent = AddressAdded | DefaultAddressChanged | AddressRemoved;

export const addressStream = (userId: string) => `addresses-${userId}`;
