import { addressesProjection } from './addresses';
import type { Projection } from './runner';

/** Every read model and process manager the service runs. */
export const allProjections = (): Projection[] => [addressesProjection];
