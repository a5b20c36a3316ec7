import fs from 'node:fs';
import { ConfigError } from './config';

/**
 * Makes DATA_DIR (uploads in progress, and the embedded database, blobs and outbox when they are local) and
 * checks it can be written, so a DATA_DIR that is a file or read-only stops the start with one line naming
 * it, not with a stack from whichever part touched it first.
 */
export function ensureDataDir(dir: string): void {
  try {
    fs.mkdirSync(dir, { recursive: true });
    fs.accessSync(dir, fs.constants.W_OK);
  } catch (err) {
    const reason =
      (err as NodeJS.ErrnoException).code === 'EEXIST'
        ? 'it is a file, not a directory'
        : (err as Error).message;
    throw new ConfigError(`DATA_DIR ${dir} cannot be used as the data directory: ${reason}`);
  }
}
