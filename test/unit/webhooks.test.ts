import dns from 'node:dns';
import fs from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { generateKeyPairSync } from 'node:crypto';
import { ConfigError, DEV_WEBHOOK_KEY, loadConfig } from '../../src/config';
import { channelSecret, signatureHeader, verifySignature } from '../../src/webhooks/signing';
import {
  createHostResolver,
  isPublicAddress,
  postWebhook,
  webhookUrlProblem,
} from '../../src/webhooks/target';
import { startFakeDns } from '../support/fakeDns';

describe('webhook URL policy', () => {
  it('takes https URLs to public hosts, and nothing else unless loopback is allowed', () => {
    expect(webhookUrlProblem('https://hooks.example.com/x?y=1', false)).toBeNull();
    expect(webhookUrlProblem('https://93.184.216.34/x', false)).toBeNull();
    // NAT64 and 6to4 forms of a public IPv4 address stay allowed (IPv6-only networks reach the world so).
    expect(webhookUrlProblem('https://[64:ff9b::5db8:d822]/x', false)).toBeNull();
    expect(webhookUrlProblem('https://[2002:5db8:d822::1]/x', false)).toBeNull();
    for (const bad of [
      'http://hooks.example.com/x',
      'ftp://hooks.example.com/x',
      'not a url',
      'https://localhost/x',
      'https://localhost./x', // the same name, fully qualified
      'https://hooks.localhost/x', // every name under localhost is loopback (RFC 6761)
      'https://127.0.0.1/x',
      'https://10.1.2.3/x',
      'https://172.20.0.1/x',
      'https://192.168.1.1/x',
      'https://169.254.169.254/latest/meta-data',
      'https://[::1]/x',
      'https://[fd00::1]/x',
      'https://[::ffff:127.0.0.1]/x',
      'https://[64:ff9b::a9fe:a9fe]/latest/meta-data', // NAT64 of 169.254.169.254
      'https://[64:ff9b::10.0.0.1]/x',
      'https://[2002:c0a8:101::1]/x', // 6to4 of 192.168.1.1
      'https://[::7f00:1]/x', // IPv4-compatible 127.0.0.1
      'https://[::ffff:0:a9fe:a9fe]/x', // IPv4-translated (SIIT) 169.254.169.254
      'https://[fec0::1]/x', // site-local, the private range before fc00::/7
      'https://user:pass@hooks.example.com/x',
    ])
      expect({ bad, problem: webhookUrlProblem(bad, false) }).toEqual({ bad, problem: expect.any(String) });
    expect(webhookUrlProblem('http://127.0.0.1:8080/x', true)).toBeNull();
    expect(webhookUrlProblem('ftp://127.0.0.1/x', true)).toEqual(expect.any(String));
  });

  it('tells public from loopback, private and link-local addresses', () => {
    expect(isPublicAddress('8.8.8.8')).toBe(true);
    expect(isPublicAddress('2606:4700::1111')).toBe(true);
    for (const a of [
      '127.0.0.1',
      '10.0.0.1',
      '100.64.0.1',
      '0.0.0.0',
      '::1',
      '::',
      'fe80::1',
      '::ffff:10.0.0.1',
      '::ffff:0:127.0.0.1',
      'fec0::1',
    ])
      expect({ a, pub: isPublicAddress(a) }).toEqual({ a, pub: false });
  });

  it('refuses at delivery a host name that resolves to a non-public address (any of its addresses)', async () => {
    const dnsServer = await startFakeDns({
      records: {
        'inside.example.test': { a: ['10.0.0.5'] },
        'v6inside.example.test': { aaaa: ['fd00::1'] },
        // One public address is not enough: the connection may use the other.
        'mixed.example.test': { a: ['93.184.216.34'], aaaa: ['::1'] },
      },
    });
    try {
      const resolve = createHostResolver({ servers: [dnsServer.server] });
      for (const host of ['inside.example.test', 'v6inside.example.test', 'mixed.example.test'])
        await expect(
          postWebhook(`https://${host}:1/x`, '{}', {}, { allowLoopback: false, timeoutMs: 2000, resolve }),
        ).rejects.toThrow(/non-public address/);
      expect(dnsServer.state.queries).toBeGreaterThan(0);
    } finally {
      await dnsServer.close();
    }
  });

  it('resolves host names by DNS (c-ares), never with getaddrinfo on the thread pool', async () => {
    const dnsServer = await startFakeDns({ records: { 'receiver.example.test': { a: ['127.0.0.1'] } } });
    const server = http.createServer((req, res) => {
      req.resume();
      res.end('ok');
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const lookup = jest.spyOn(dns, 'lookup');
    try {
      const port = (server.address() as net.AddressInfo).port;
      const resolve = createHostResolver({ servers: [dnsServer.server] });
      await expect(
        postWebhook(
          `http://receiver.example.test:${port}/x`,
          '{}',
          {},
          {
            allowLoopback: true,
            timeoutMs: 2000,
            resolve,
          },
        ),
      ).resolves.toEqual({ status: 200 });
      // localhost (and names under it) is loopback without asking anyone (RFC 6761), as /etc/hosts has it.
      const asked = dnsServer.state.queries;
      await expect(
        postWebhook(
          `http://localhost:${port}/x`,
          '{}',
          {},
          { allowLoopback: true, timeoutMs: 2000, resolve },
        ),
      ).resolves.toEqual({ status: 200 });
      expect(dnsServer.state.queries).toBe(asked);
      expect(lookup).not.toHaveBeenCalled();
    } finally {
      lookup.mockRestore();
      server.closeAllConnections();
      await new Promise((r) => server.close(r));
      await dnsServer.close();
    }
  });

  it('a name that never resolves fails the attempt within the bound, and holds no thread-pool thread meanwhile', async () => {
    // A black-hole zone: queries go out and nothing ever answers. getaddrinfo held one of libuv's 4 threads
    // per lookup for the system resolver's whole timeout, and file I/O (the mail outbox, uploads) waited.
    const blackHole = await startFakeDns({ silent: true });
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'webhook-dns-'));
    try {
      const resolve = createHostResolver({ servers: [blackHole.server], deadlineMs: 3000 });
      const started = Date.now();
      let settled = 0;
      const attempts = Array.from({ length: 8 }, (_, i) =>
        postWebhook(
          `https://sink${i}.black-hole.example.test/x`,
          '{}',
          {},
          { allowLoopback: false, timeoutMs: 10_000, resolve },
        )
          .then(
            () => 'delivered',
            (err: Error) => err.message,
          )
          .finally(() => settled++),
      );
      // Every name asked (A and AAAA each), none answered.
      while (blackHole.state.queries < 16 && Date.now() - started < 2000)
        await new Promise((r) => setTimeout(r, 20));
      expect(blackHole.state.queries).toBeGreaterThanOrEqual(16);
      // File I/O goes through the thread pool: it completes at once while the 8 names hang (getaddrinfo
      // would have held all 4 threads for the system resolver's timeout, seconds).
      const io = Date.now();
      await Promise.all(
        Array.from({ length: 8 }, async (_, i) => {
          const file = path.join(dir, `f${i}`);
          await fs.promises.writeFile(file, 'x');
          await fs.promises.readFile(file);
        }),
      );
      const ioMs = Date.now() - io;
      expect(settled).toBe(0); // the I/O ran while every lookup was still hanging
      expect(ioMs).toBeLessThan(1000);
      const outcomes = await Promise.all(attempts);
      expect(Date.now() - started).toBeLessThan(6000);
      for (const o of outcomes) expect(o).toMatch(/did not resolve within 3000 ms/);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
      await blackHole.close();
    }
  });

  it('takes a 101 answer as an answer (not 2xx), and never waits past its deadline', async () => {
    // Answers the POST with 101 Switching Protocols and keeps the connection open: the request was ended
    // without an error, so an attempt that waited for one never finished (its place and channel held for good).
    const sockets = new Set<net.Socket>();
    const server = net.createServer((s) => {
      sockets.add(s);
      s.once('data', () =>
        s.write('HTTP/1.1 101 Switching Protocols\r\nUpgrade: x\r\nConnection: Upgrade\r\n\r\n'),
      );
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    try {
      const url = `http://127.0.0.1:${(server.address() as net.AddressInfo).port}/x`;
      const outcome = await Promise.race([
        postWebhook(url, '{}', {}, { allowLoopback: true, timeoutMs: 1000 }),
        new Promise((r) => setTimeout(() => r('still waiting'), 3000)),
      ]);
      expect(outcome).toEqual({ status: 101 });
    } finally {
      for (const s of sockets) s.destroy();
      await new Promise((r) => server.close(r));
    }
  });
});

describe('webhook signatures', () => {
  it('derives a stable secret per channel and signs timestamp and body', () => {
    const a = channelSecret('key', 'channel-a');
    expect(a).toBe(channelSecret('key', 'channel-a'));
    expect(a).not.toBe(channelSecret('key', 'channel-b'));
    expect(a).not.toBe(channelSecret('other key', 'channel-a'));
    const header = signatureHeader(a, 1_700_000_000, '{"x":1}');
    expect(verifySignature(a, header, '{"x":1}', 1_700_000_010)).toBe(true);
    expect(verifySignature(a, header, '{"x":2}', 1_700_000_010)).toBe(false);
    expect(verifySignature(a, header, '{"x":1}', 1_700_000_400)).toBe(false);
    expect(verifySignature(a, 't=1700000000,v1=00', '{"x":1}', 1_700_000_000)).toBe(false);
    expect(verifySignature(a, 'garbage', '{"x":1}', 1_700_000_000)).toBe(false);
  });
});

describe('webhook configuration', () => {
  const prod = (env: NodeJS.ProcessEnv) => loadConfig({ NODE_ENV: 'production', ...env }).webhooks;
  const jwtSecret = 'j'.repeat(40);
  const { publicKey } = generateKeyPairSync('rsa', {
    modulusLength: 2048,
    publicKeyEncoding: { type: 'spki', format: 'pem' },
    privateKeyEncoding: { type: 'pkcs8', format: 'pem' },
  });

  it('outside production: a development key unless one is given', () => {
    expect(loadConfig({}).webhooks).toEqual({
      signingKey: DEV_WEBHOOK_KEY,
      usingDevKey: true,
      allowLoopback: false,
    });
    expect(loadConfig({ WEBHOOK_SIGNING_KEY: 'k', WEBHOOK_ALLOW_LOOPBACK: 'true' }).webhooks).toEqual({
      signingKey: 'k',
      usingDevKey: false,
      allowLoopback: true,
    });
  });

  it('in production: a strong key, or one derived from JWT_SECRET, or none; never loopback', () => {
    expect(prod({ JWT_SECRET: jwtSecret, WEBHOOK_SIGNING_KEY: 'w'.repeat(32) }).signingKey).toBe(
      'w'.repeat(32),
    );
    expect(() => prod({ JWT_SECRET: jwtSecret, WEBHOOK_SIGNING_KEY: 'short' })).toThrow(ConfigError);
    // White space around a key is not counted: 32 spaces, or a short key padded to 32 bytes, are refused.
    for (const padded of [' '.repeat(32), `short${' '.repeat(27)}\n`])
      expect(() => prod({ JWT_SECRET: jwtSecret, WEBHOOK_SIGNING_KEY: padded })).toThrow(ConfigError);
    expect(() => prod({ JWT_SECRET: jwtSecret, WEBHOOK_ALLOW_LOOPBACK: 'true' })).toThrow(ConfigError);
    const derived = prod({ JWT_SECRET: jwtSecret }).signingKey;
    expect(derived).toMatch(/^[0-9a-f]{64}$/);
    expect(derived).not.toBe(jwtSecret);
    expect(prod({ JWT_PUBLIC_KEY: publicKey }).signingKey).toBeNull();
  });

  it('in production with JWT_PUBLIC_KEY, refuses to derive webhook secrets from a weak JWT_SECRET left set', () => {
    for (const weak of ['secret', 'dev-only-secret-change-me', 'x'.repeat(31)])
      expect(() => prod({ JWT_PUBLIC_KEY: publicKey, JWT_SECRET: weak })).toThrow(/WEBHOOK_SIGNING_KEY/);
    expect(
      prod({ JWT_PUBLIC_KEY: publicKey, JWT_SECRET: 'short', WEBHOOK_SIGNING_KEY: 'w'.repeat(32) })
        .signingKey,
    ).toBe('w'.repeat(32));
    expect(prod({ JWT_PUBLIC_KEY: publicKey, JWT_SECRET: jwtSecret }).signingKey).toMatch(/^[0-9a-f]{64}$/);
  });
});
