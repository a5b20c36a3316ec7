/** Errors the API answers with. Bodies follow the interface document's `ErrorResponse {error, message, code}`. */
export class HttpError extends Error {
  constructor(
    readonly status: number,
    readonly error: string,
    message: string,
    /** A moment's contention, not an outcome: the same request may pass when repeated (never replayed). */
    readonly retryable = false,
  ) {
    super(message);
    this.name = 'HttpError';
  }
}

export interface ValidationIssue {
  loc: (string | number)[];
  msg: string;
  type: string;
}

/** 422 with the FastAPI-style `{detail: [{loc, msg, type}]}` body. */
export class ValidationError extends Error {
  constructor(readonly detail: ValidationIssue[]) {
    super('validation failed');
    this.name = 'ValidationError';
  }
}

export const notFound = (error: string, message: string) => new HttpError(404, error, message);
export const conflict = (error: string, message: string) => new HttpError(409, error, message);
/** 409 `conflict` for contention that a repeat of the request may get past ("retry the request"). */
export const busy = (message: string) => new HttpError(409, 'conflict', message, true);
export const forbidden = (message = 'this action is not allowed for your role') =>
  new HttpError(403, 'forbidden', message);
export const unauthorized = (message = 'a valid bearer token is required') =>
  new HttpError(401, 'unauthorized', message);
