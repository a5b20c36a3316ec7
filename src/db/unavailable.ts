/**
 * Whether a database error says "the server is not answering" (down, restarting, failing over, out of
 * connections, unreachable) rather than "this statement is wrong": nothing is known to be wrong with the
 * request, so HTTP answers 503 `service_unavailable` (retry shortly), as for the event store away.
 */
export function isDatabaseUnavailable(err: unknown): boolean {
  const e = err as { code?: unknown; message?: unknown } | null | undefined;
  const code = typeof e?.code === 'string' ? e.code : '';
  const text = typeof e?.message === 'string' ? e.message : '';
  return (
    code.startsWith('08') || // connection exceptions
    code === '57P01' || // admin shutdown
    code === '57P02' || // crash shutdown (another backend crashed: the server restarts)
    code === '57P03' || // cannot connect now (starting up, recovering)
    code === '53300' || // too many connections
    ['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', 'EHOSTUNREACH', 'ENETUNREACH', 'EAI_AGAIN'].includes(
      code,
    ) ||
    // node-postgres reports a dropped connection, a connect timeout or no answer to a statement (its
    // query_timeout) without a code.
    /^Connection terminated|^timeout exceeded when trying to connect|^Query read timeout$/i.test(text)
  );
}

/**
 * Whether the server gave up on a statement, not on what it was asked: canceled (a role's statement_timeout,
 * pg_cancel_backend), a lock not had within lock_timeout, or short of resources (disk full, out of memory).
 * The same statement may pass a moment later: HTTP answers 503 (retry shortly), a projection retries.
 */
export function isDatabaseBusy(err: unknown): boolean {
  const code = (err as { code?: unknown } | null | undefined)?.code;
  return code === '57014' || code === '55P03' || (typeof code === 'string' && /^53...$/.test(code));
}

/**
 * Whether a database error at start means "no connection can be had": the server does not answer, the host
 * is unknown, or the server refuses the login or knows no such database. Named in one line at start, not
 * as an unknown failure with a stack.
 */
export function isConnectFailure(err: unknown): boolean {
  const code = (err as { code?: unknown } | null | undefined)?.code;
  return (
    isDatabaseUnavailable(err) ||
    code === 'ENOTFOUND' ||
    code === '28P01' || // password authentication failed
    code === '28000' || // no such role, or pg_hba refuses the client
    code === '3D000' // no such database
  );
}
