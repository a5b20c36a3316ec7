import type { AddressFields } from '../../commands/addresses/events';

/** AddressOut of the interface document. `position` is a GeoJSON Point derived from lat/lng. */
export interface AddressOut extends AddressFields {
  id: string;
  isDefault: boolean;
  position: { type: 'Point'; coordinates: [number, number] };
}

export const toAddressOut = (a: Omit<AddressOut, 'position'>): AddressOut => ({
  id: a.id,
  lat: a.lat,
  lng: a.lng,
  zoom: a.zoom,
  isDefault: a.isDefault,
  name: a.name,
  address: a.address,
  country: a.country,
  state: a.state,
  city: a.city,
  line1: a.line1,
  line2: a.line2,
  zip: a.zip,
  details: a.details,
  position: { type: 'Point', coordinates: [a.lng, a.lat] },
});
