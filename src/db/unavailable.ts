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
    // node-postgres reports a dropped connection or a connect timeout without a code.
    /^Connection terminated|^timeout exceeded when trying to connect/i.test(text)
  );
}
