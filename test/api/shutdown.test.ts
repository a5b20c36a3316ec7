import net from 'node:net';
import jwt from 'jsonwebtoken';
import { startServiceProcess } from '../support/serviceProcess';

/**
 * `npm start` (src/main.ts) stopped with SIGTERM, as a deploy or `docker stop` does: a request already
 * being served gets its answer before the process lets go of its database and exits.
 */
const SECRET = 'a-test-secret-that-is-long-enough-for-production-rules';

it('answers a request in flight when SIGTERM arrives, then exits 0', async () => {
  // Embedded PGlite in its own folder (a child process cannot share the test's database otherwise).
  const service = await startServiceProcess({ JWT_SECRET: SECRET, WEBHOOK_SIGNING_KEY: SECRET }, 'shutdown');
  const { child, port, exited } = service;
  try {
    // A command whose body is still arriving when the signal comes.
    const token = jwt.sign({ sub: '11111111-1111-4111-8111-111111111111', roles: ['client'] }, SECRET, {
      expiresIn: 3600,
    });
    const body = JSON.stringify({ lat: 52.52, lng: 13.405, name: 'Home', address: 'Alexanderplatz 1' });
    const socket = net.connect(port, '127.0.0.1');
    const answer = new Promise<string>((resolve) => {
      let text = '';
      socket.on('data', (d) => (text += d.toString()));
      socket.on('close', () => resolve(text));
      socket.on('error', () => resolve(text));
    });
    await new Promise((r) => socket.once('connect', r));
    socket.write(
      `POST /api/v1/nav/addreses HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${token}\r\n` +
        `Content-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n` +
        body.slice(0, 10),
    );
    await new Promise((r) => setTimeout(r, 300));
    child.kill('SIGTERM');
    await new Promise((r) => setTimeout(r, 500));
    socket.write(body.slice(10));
    const text = await answer;
    expect(text.split('\r\n')[0]).toBe('HTTP/1.1 200 OK');
    expect(text).toContain('Alexanderplatz 1');
    expect({ code: await exited, output: service.output() }).toEqual({ code: 0, output: '' });
  } finally {
    await service.cleanUp();
  }
}, 120_000);
