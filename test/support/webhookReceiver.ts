import http from 'node:http';
import type { AddressInfo } from 'node:net';

export interface ReceivedHook {
  path: string;
  headers: http.IncomingHttpHeaders;
  body: string;
}

/**
 * A real HTTP server on loopback that records every request and answers with the next status of `script`
 * for its path (then 200), as a webhook receiver would.
 */
export async function startWebhookReceiver() {
  const received: ReceivedHook[] = [];
  const scripts = new Map<string, number[]>();
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const path = req.url ?? '/';
      received.push({ path, headers: req.headers, body: Buffer.concat(chunks).toString('utf8') });
      res.statusCode = scripts.get(path)?.shift() ?? 200;
      res.end('ok');
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    received,
    url: (path: string) => base + path,
    /** The statuses the next requests to `path` are answered with, in order. */
    script: (path: string, statuses: number[]) => scripts.set(path, [...statuses]),
    at: (path: string) => received.filter((r) => r.path === path),
    close: () =>
      new Promise<void>((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  };
}

/**
 * A webhook receiver that holds every request without answering until `release(status)`: `arrived` resolves
 * when the first request came (the delivery was claimed and sent), `requests` counts them.
 */
export async function startHeldReceiver() {
  let release: (status: number) => void = () => undefined;
  let arrive: () => void = () => undefined;
  const arrived = new Promise<void>((r) => (arrive = r));
  const held = {
    requests: 0,
    arrived,
    release: (status: number) => release(status),
    url: (path: string) => `http://127.0.0.1:${(server.address() as AddressInfo).port}${path}`,
    close: () =>
      new Promise<void>((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  };
  const server = http.createServer((req, res) => {
    req.resume();
    held.requests++;
    release = (status) => {
      res.statusCode = status;
      res.end();
    };
    arrive();
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return held;
}
