/**
 * Travel time of a coach to a session at the client's place, from the coach's default saved address.
 * The rule (docs/api.md, "Travel"): great-circle distance × ROAD_FACTOR at SPEED_KMH, rounded up to
 * whole ROUND_TO minutes. No routing service: a documented estimate that is the same for the booking
 * (which blocks it on the calendar) and availability (which shows what can be booked).
 */
export const ROAD_FACTOR = 1.3;
export const SPEED_KMH = 30;
export const ROUND_TO = 5;
/**
 * The longest trip a session may need, each way: a day (about 550 km from the coach's default address). A
 * place farther away is refused (422): a session days away is not one a coach travels to, and its trips
 * would block the coach's calendar for weeks (up to 36 days each side at the antipodes).
 */
export const MAX_TRAVEL_MINUTES = 24 * 60;

/** Why a trip of `minutes` is refused, or null when it is within MAX_TRAVEL_MINUTES. */
export const tooFarMessage = (minutes: number): string | null =>
  minutes > MAX_TRAVEL_MINUTES
    ? `the place is ${minutes} minutes of travel from the coach's default address, each way; at most ${MAX_TRAVEL_MINUTES}`
    : null;

const EARTH_RADIUS_KM = 6371.0088;
const rad = (deg: number) => (deg * Math.PI) / 180;

export interface LatLng {
  lat: number;
  lng: number;
}

/** Great-circle (haversine) distance in km. */
export function greatCircleKm(a: LatLng, b: LatLng): number {
  const h =
    Math.sin(rad(b.lat - a.lat) / 2) ** 2 +
    Math.cos(rad(a.lat)) * Math.cos(rad(b.lat)) * Math.sin(rad(b.lng - a.lng) / 2) ** 2;
  return 2 * EARTH_RADIUS_KM * Math.asin(Math.min(1, Math.sqrt(h)));
}

/** Minutes one way from the coach's base to the client; 0 when either place is unknown. */
export function travelMinutes(base: LatLng | null, client: LatLng | null): number {
  if (!base || !client) return 0;
  const minutes = ((greatCircleKm(base, client) * ROAD_FACTOR) / SPEED_KMH) * 60;
  // A whole number of slices; a hair over a boundary (float noise) does not add a slice.
  return Math.max(0, Math.ceil(minutes / ROUND_TO - 1e-9) * ROUND_TO);
}
