import { EventStoreUnavailableError } from '../eventstore/types';
import { isDatabaseBusy, isDatabaseUnavailable } from '../db/unavailable';
import { BlobStoreUnavailableError } from '../storage/types';
import { HttpError, ValidationError } from './errors';

export interface Rendered {
  status: number;
  body: unknown;
  /** Whether the error is the caller's (4xx) rather than ours. */
  expected: boolean;
  /** A moment's state (contention, the event store away), not the request's outcome: never replayed. */
  retryable?: boolean;
}

/**
 * The machine ran short of disk space or of open files: an upload's temporary file (DATA_DIR/uploads) or a
 * blob (DATA_DIR/blobs) could not be written, as when many large uploads at once fill the disk. Not the
 * request's fault, and it passes once uploads end and space is freed: 503 to retry, not a 500.
 */
const SHORT_OF_LOCAL_RESOURCES = new Set(['ENOSPC', 'EDQUOT', 'EMFILE', 'ENFILE']);

/** Turns anything thrown below the error middleware into the documented status and body. */
export function renderError(err: unknown): Rendered {
  if (err instanceof ValidationError) return { status: 422, body: { detail: err.detail }, expected: true };
  // Not the caller's fault and not a bug: the event store is away for a moment; the request may be repeated.
  if (err instanceof EventStoreUnavailableError) {
    const body = {
      error: 'service_unavailable',
      message: 'the event store is not answering; retry shortly',
      code: 503,
    };
    return { status: 503, body, expected: true, retryable: true };
  }
  if (err instanceof HttpError) {
    return {
      status: err.status,
      body: { error: err.error, message: err.message, code: err.status },
      expected: true,
      retryable: err.retryable,
    };
  }
  // Errors raised by Koa and its middleware (body parser, koa-jwt) carry an exposed 4xx status.
  const e = err as {
    status?: number;
    statusCode?: number;
    expose?: boolean;
    message?: string;
    type?: string;
  };
  const status = e?.status ?? e?.statusCode;
  if (typeof status === 'number' && ((status >= 400 && status < 500) || status === 501)) {
    const error =
      status === 401
        ? 'unauthorized'
        : status === 413
          ? 'payload_too_large'
          : status === 415
            ? 'unsupported_media_type'
            : status === 400
              ? 'bad_request'
              : status === 404
                ? 'not_found'
                : status === 405
                  ? 'method_not_allowed'
                  : status === 501
                    ? 'not_implemented'
                    : 'bad_request';
    const message =
      status === 400 && e.type === 'entity.parse.failed'
        ? 'the body is not valid JSON'
        : (e.message ?? error);
    return { status, body: { error, message, code: status }, expected: true };
  }
  // A server it depends on away for a moment (the database restarting or failing over, file storage
  // unreachable): as for the event store, 503 to retry shortly. Before, a 500 "an unexpected error occurred".
  // Also a statement the server gave up on (canceled by a statement_timeout, a lock_timeout, disk full): the
  // request was not wrong, and was a 500.
  if (isDatabaseUnavailable(err) || isDatabaseBusy(err) || err instanceof BlobStoreUnavailableError) {
    const body = {
      error: 'service_unavailable',
      message: 'the database (or file storage) is not answering; retry shortly',
      code: 503,
    };
    return { status: 503, body, expected: true, retryable: true };
  }
  if (SHORT_OF_LOCAL_RESOURCES.has(String((err as { code?: unknown } | null)?.code))) {
    const body = {
      error: 'service_unavailable',
      message: 'the service is short of disk space (or open files) for the request; retry shortly',
      code: 503,
    };
    // Not `expected`: logged with its error, so an operator learns the disk is full.
    return { status: 503, body, expected: false, retryable: true };
  }
  return {
    status: 500,
    body: { error: 'internal_error', message: 'an unexpected error occurred', code: 500 },
    expected: false,
  };
}
