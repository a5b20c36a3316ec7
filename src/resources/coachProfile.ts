import type { FileBase } from './fileBase';
import type { ServiceOut } from './service';

/** The interface document's `PublicCoachProfileOut`. Nullable numbers are null when nothing backs them. */
export interface PublicCoachProfileOut {
  firstName: string;
  lastName: string;
  phone: string;
  whatsapp: string;
  gender: string;
  description: string;
  languages: Record<string, true>;
  avatarUrl: string;
  mediaType: string;
  mediaUrl: string;
  mediaPreviewUrl: string;
  rating: number | null;
  serviceTypes: string[];
  services: ServiceOut[];
  images: FileBase[];
  videos: FileBase[];
  certificates: FileBase[];
  distance: number | null;
  experience: number;
  price: number | null;
  minPrice: number | null;
  maxPrice: number | null;
  priceCurrency: string | null;
  sessionCount: number;
  verified: boolean;
}
