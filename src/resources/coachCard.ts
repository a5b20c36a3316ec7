/**
 * A coach as the search (GET /api/v1/coaches) lists it: enough to choose one and open its profile (13).
 * Prices are over its approved services that match the search's `q` and `serviceType` (all of them without
 * these), compared as plain numbers (as the profile does); `serviceTypes` over all of them; `distance` is null
 * without a place to measure from or a default address of the coach.
 */
export interface CoachCard {
  id: string;
  firstName: string;
  lastName: string;
  avatarUrl: string;
  languages: Record<string, true>;
  experience: number;
  verified: boolean;
  rating: number | null;
  sessionCount: number;
  serviceTypes: string[];
  minPrice: number;
  maxPrice: number;
  priceCurrency: string;
  distance: number | null;
}
