import type { ProfileMediaChanged, ProfileMediaRemoved } from '../commands/users/events';
import type { VideoDeleted, VideoReplaced } from '../commands/videos/events';
import type { RecordedEvent } from '../src/eventstore/types';
import { LEASES } from '../src/leases';
import type { Logger } from '../src/log';
import { BlobStoreUnavailableError, type BlobStore } from '../src/storage/types';
import { isTransient, type Projection } from './runner';

/** The blob keys an event makes unreferenced: a replace's old files, a delete's or a removal's files. */
export function keysReleasedBy(recorded: RecordedEvent): string[] {
  switch (recorded.type) {
    case 'VideoReplaced':
      return (recorded.data as VideoReplaced['data']).replacedKeys ?? [];
    case 'VideoDeleted': {
      const { key, previewKey } = recorded.data as VideoDeleted['data'];
      return previewKey ? [key, previewKey] : [key];
    }
    case 'ProfileMediaChanged':
      return (recorded.data as ProfileMediaChanged['data']).replacedKeys ?? [];
    case 'ProfileMediaRemoved':
      return (recorded.data as ProfileMediaRemoved['data']).removedKeys ?? [];
    default:
      return [];
  }
}

/**
 * Process manager that removes the files an event made unreferenced. The routes remove them right after
 * the event is stored (so the answer means their URLs are 404); a process killed in between left them
 * served at their old URLs for good (a replaced profile picture, the old file of a replaced video). This
 * removes them again from the log, at least once: a blob delete is idempotent, so the usual double
 * removal costs one look at a missing file. A key is never used again once an event released it (a keyed
 * upload run again drops a key its stream no longer holds: `withStoredBlobs`), so nothing live is removed.
 */
export function blobCleanupProcess(deps: { blobs: BlobStore; log: Logger }): Projection {
  return {
    name: 'blob-cleanup-process',
    lease: LEASES.blobCleanup,
    handles: ['VideoReplaced', 'VideoDeleted', 'ProfileMediaChanged', 'ProfileMediaRemoved'],
    // Removals of different events never depend on each other.
    orderedBy: (recorded) => [recorded.id],
    async react(recorded) {
      for (const key of keysReleasedBy(recorded)) {
        try {
          await deps.blobs.delete(key);
        } catch (err) {
          // The storage away (S3 down, slow, 5xx, unreachable): tried again with backoff until it answers.
          if (err instanceof BlobStoreUnavailableError || isTransient(err)) {
            deps.log.warn('could not remove an unreferenced file yet; will try again', {
              key,
              err: String(err),
            });
            throw Object.assign(err as Error, { transient: true });
          }
          // Anything else (a file the process may not remove) leaves the file, as a route's removal does:
          // stopping the process manager over it would make /healthz 503 and hold back every later removal.
          deps.log.error('could not remove an unreferenced file; it is left behind', {
            key,
            err: String(err),
          });
        }
      }
    },
  };
}
