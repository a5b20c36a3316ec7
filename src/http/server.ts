import http from 'node:http';
import { randomUUID } from 'node:crypto';
import type { Duplex } from 'node:stream';
import type Koa from 'koa';

export interface ServerTimeouts {
  /** Time to receive a request's headers; 408 after it. */
  headersTimeoutMs: number;
  /** Time to receive a whole request (headers and body, uploads included); 408 after it. */
  requestTimeoutMs: number;
  /** Longest silence while a request body is still arriving (a body shorter than its Content-Length); 408. */
  bodyIdleTimeoutMs: number;
  /**
   * Longest time a response being sent may wait for the client to take any of it; the connection is then
   * closed (0: never). A slow handler is not cut by it: only bytes waiting for the client count.
   */
  responseIdleTimeoutMs: number;
  /**
   * How long a kept-alive connection may sit idle between requests. Longer than the load balancer's own
   * idle timeout, so it never reuses a connection being closed here (its request would be lost).
   */
  keepAliveTimeoutMs: number;
}

export const DEFAULT_TIMEOUTS: ServerTimeouts = {
  headersTimeoutMs: 10_000,
  requestTimeoutMs: 300_000,
  bodyIdleTimeoutMs: 10_000,
  responseIdleTimeoutMs: 60_000,
  keepAliveTimeoutMs: 65_000,
};

/**
 * Ends a request whose body stopped arriving. Destroying only its socket once the 408 was sent left the
 * request stream open for ever (no 'aborted' or 'close': its response had finished), so an upload's reader
 * waited on it and its partly written temporary file stayed in DATA_DIR/uploads.
 */
function abandon(req: http.IncomingMessage) {
  req.destroy();
  req.socket.destroy();
}

/** The documented error body, written straight to a socket Node's HTTP parser gave up on. */
function rawError(socket: Duplex, status: number, reason: string, error: string, message: string) {
  const body = JSON.stringify({ error, message, code: status });
  socket.end(
    `HTTP/1.1 ${status} ${reason}\r\nX-Request-Id: ${randomUUID()}\r\n` +
      `Content-Type: application/json; charset=utf-8\r\n` +
      `Content-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
  );
}

/** The latest request each connection carried, and its response: what an error on the connection concerns. */
const latest = new WeakMap<Duplex, { req: http.IncomingMessage; res: http.ServerResponse }>();

/**
 * Whether an answer written now would not be the answer to a request of its own: the request whose body is
 * still arriving was answered already (a 401 or 413 sent before the body was read; Node reads the rest and
 * throws it away), or a response is part-way out. Writing one there sent a second answer to one request (a
 * 408 after the 401, when the rest took longer than REQUEST_TIMEOUT_MS) or cut into a response's bytes.
 */
function answerUnwanted(socket: Duplex): boolean {
  const last = latest.get(socket);
  return !!last && last.res.headersSent && (!last.req.complete || !last.res.writableFinished);
}

const PARSER_ERRORS: Record<string, [number, string, string, string]> = {
  HPE_HEADER_OVERFLOW: [
    431,
    'Request Header Fields Too Large',
    'request_header_fields_too_large',
    'the request headers are larger than the server accepts (16 kB in all)',
  ],
  ERR_HTTP_REQUEST_TIMEOUT: [
    408,
    'Request Timeout',
    'request_timeout',
    'the request took too long to arrive',
  ],
};

/**
 * The HTTP server around the Koa app. Node answers requests its parser refuses (headers over its limit,
 * malformed request lines, timeouts) itself, with an empty body; the `clientError` handler gives them the
 * documented `{error, message, code}` shape. Timeouts bound how long a slow or stalled client holds a
 * connection: headers, the whole request, and silence while a body is expected.
 */
export function createHttpServer(app: Koa, timeouts: ServerTimeouts = DEFAULT_TIMEOUTS): http.Server {
  const callback = app.callback();
  const server = http.createServer(
    {
      headersTimeout: timeouts.headersTimeoutMs,
      requestTimeout: timeouts.requestTimeoutMs,
      // How often Node checks the two timeouts above (default 30 s, far coarser than they are). A headers
      // timeout of 0 (no limit) made it a timer of 0 ms, run every millisecond.
      connectionsCheckingInterval: Math.min(1000, timeouts.headersTimeoutMs || 1000),
      // Idle keep-alive connections outlive a load balancer's (60 s is common; KEEP_ALIVE_TIMEOUT_MS for
      // others), so it never reuses a socket we are closing.
      keepAliveTimeout: timeouts.keepAliveTimeoutMs,
      // HTTP/1.1 without Host is refused below, in the error shape: Node's own 400 had an empty body.
      requireHostHeader: false,
    },
    (req, res) => {
      if (req.httpVersionMajor === 1 && req.httpVersionMinor === 1 && req.headers.host === undefined) {
        const body = JSON.stringify({
          error: 'bad_request',
          message: 'an HTTP/1.1 request must carry a Host header',
          code: 400,
        });
        res.writeHead(400, {
          // Every answer carries a request id, also those made before the app sees the request (docs/api.md).
          'x-request-id': randomUUID(),
          'content-type': 'application/json; charset=utf-8',
          'content-length': Buffer.byteLength(body),
          connection: 'close',
        });
        res.end(body);
        return;
      }
      const socket = req.socket;
      latest.set(socket, { req, res });
      // Once the request is in, the socket's timeout watches the response: a client that stops reading a
      // response larger than the socket's buffers (an asset, the audit export) held its connection and the
      // response's buffers for ever (the keep-alive timeout starts only once a response is all sent). When
      // it fires with nothing waiting to be sent, the handler is merely slow: the next write re-arms it.
      const watchResponse = () => socket.setTimeout(timeouts.responseIdleTimeoutMs);
      res.on('timeout', () => {
        if (req.complete && (socket.writableLength > 0 || res.writableNeedDrain)) socket.destroy();
      });
      if (timeouts.bodyIdleTimeoutMs > 0 && req.method !== 'GET' && req.method !== 'HEAD') {
        // A body shorter than its Content-Length would otherwise hold the request until the client gives up.
        req.setTimeout(timeouts.bodyIdleTimeoutMs, () => {
          if (req.complete) return; // the body arrived; the handler is merely slow
          if (!res.headersSent) {
            const body = JSON.stringify({
              error: 'request_timeout',
              message: `the request body stopped arriving for ${timeouts.bodyIdleTimeoutMs} ms`,
              code: 408,
            });
            res.writeHead(408, {
              'x-request-id': String(res.getHeader('x-request-id') ?? randomUUID()),
              'content-type': 'application/json; charset=utf-8',
              'content-length': Buffer.byteLength(body),
              connection: 'close',
            });
            res.end(body, () => abandon(req));
          } else abandon(req);
        });
        // The socket timeout set above is meant for the body only: once the body is in, a slow handler must
        // not lose its socket (the response's listener above keeps Node from destroying it), and Node sets
        // the keep-alive timeout itself when the response is done.
        req.once('end', watchResponse);
      } else watchResponse();
      void callback(req, res);
    },
  );
  // An `Expect` other than 100-continue: Node answered 417 itself, with an empty body.
  server.on('checkExpectation', (req: http.IncomingMessage, res: http.ServerResponse) => {
    const body = JSON.stringify({
      error: 'expectation_failed',
      message: 'the only Expect the service meets is 100-continue',
      code: 417,
    });
    res.writeHead(417, {
      'x-request-id': randomUUID(),
      'content-type': 'application/json; charset=utf-8',
      'content-length': Buffer.byteLength(body),
      connection: 'close',
    });
    res.end(body, () => req.socket.destroy());
  });
  // CONNECT (a proxy tunnel) is served on no path: Node dropped the connection without an answer.
  server.on('connect', (_req: http.IncomingMessage, socket: Duplex) =>
    rawError(socket, 405, 'Method Not Allowed', 'method_not_allowed', 'CONNECT is not served here'),
  );
  server.on('clientError', (err: NodeJS.ErrnoException, socket: Duplex) => {
    if (!socket.writable || err.code === 'ECONNRESET' || answerUnwanted(socket)) {
      socket.destroy();
      return;
    }
    const known = PARSER_ERRORS[err.code ?? ''];
    if (known) rawError(socket, ...known);
    else rawError(socket, 400, 'Bad Request', 'bad_request', 'the request is not valid HTTP');
  });
  return server;
}
