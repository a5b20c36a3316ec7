import type { Config } from './config';
import type { Database } from './db/database';
import type { EventStore } from './eventstore/types';
import type { Logger } from './log';
import type { BlobStore } from './storage';
import type { Mailer } from './mail/mailer';
import type { Metrics } from './metrics';
import type { ProjectionRunner } from '../projections/runner';
import type { Leases } from './leases';

/** What routes are built from. Clock and ids are injected so tests and replays control them. */
export interface AppDeps {
  config: Config;
  db: Database;
  store: EventStore;
  runner: ProjectionRunner;
  log: Logger;
  clock: () => Date;
  newId: () => string;
  /** Blob storage: S3 when S3_ENDPOINT is set, else DATA_DIR/blobs. */
  blobs: BlobStore;
  mailer: Mailer;
  /** Prometheus registry and the wrappers that feed it. */
  metrics: Metrics;
  /** Which process managers and sweepers this instance runs (one owner each across instances). */
  leases: Leases;
}
