/** A review as listed (its fields are not in the interface document; this is our shape). */
export interface ReviewOut {
  id: string;
  sessionId: string;
  serviceId: string;
  clientId: string;
  /** The client's "firstName lastName" from their profile, '' when there is none. */
  clientName: string;
  rating: number;
  comment: string;
  createdAt: string;
}
