import { Resolver } from 'node:dns/promises';
import http from 'node:http';
import https from 'node:https';
import net from 'node:net';

/**
 * Where a webhook may point. Users choose the URL and the service makes the request, so without a rule a
 * user could make us POST into our own network (SSRF). The rule: https only, to public addresses only,
 * checked at registration for literal IPs and at every delivery against what the name resolves to (the
 * connection uses exactly the checked address, so a DNS answer that changes in between cannot slip
 * through). `allowLoopback` (WEBHOOK_ALLOW_LOOPBACK, tests and local development) also admits http:// and
 * loopback/private addresses.
 */
// Two lists: a BlockList also matches IPv4 addresses against IPv4-mapped IPv6 rules.
const PRIVATE_V4 = new net.BlockList();
const PRIVATE_V6 = new net.BlockList();
for (const [addr, bits] of [
  ['0.0.0.0', 8],
  ['10.0.0.0', 8],
  ['100.64.0.0', 10],
  ['127.0.0.0', 8],
  ['169.254.0.0', 16],
  ['172.16.0.0', 12],
  ['192.0.0.0', 24],
  ['192.168.0.0', 16],
  ['198.18.0.0', 15],
  ['224.0.0.0', 3],
] as const) {
  PRIVATE_V4.addSubnet(addr, bits, 'ipv4');
  // The same ranges inside IPv6 forms that carry an IPv4 address and reach it: NAT64 (64:ff9b::/96, where
  // a DNS64 resolver gives 64:ff9b::a9fe:a9fe for 169.254.169.254), 6to4 (2002::/16) and IPv4-compatible.
  const [a, b, c, d] = addr.split('.').map(Number) as [number, number, number, number];
  const hex = `${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`;
  PRIVATE_V6.addSubnet(`64:ff9b::${hex}`, 96 + bits, 'ipv6');
  PRIVATE_V6.addSubnet(`2002:${hex}::`, 16 + bits, 'ipv6');
  PRIVATE_V6.addSubnet(`::${hex}`, 96 + bits, 'ipv6');
}
for (const [addr, bits] of [
  ['::', 127], // :: and ::1
  ['fc00::', 7],
  ['fe80::', 10],
  ['fec0::', 10], // site-local: the private range before fc00::/7, still routed where it is configured
  ['ff00::', 8],
  ['::ffff:0:0', 96], // IPv4-mapped in hex form; the dotted form is checked as the IPv4 address
  ['::ffff:0:0:0', 96], // IPv4-translated (SIIT): a stateless translator reaches the IPv4 address in it
  ['64:ff9b:1::', 48], // local-use NAT64: where the IPv4 address sits depends on the network
  ['2001::', 32], // Teredo: the IPv4 address is obfuscated
] as const)
  PRIVATE_V6.addSubnet(addr, bits, 'ipv6');

export function isPublicAddress(address: string): boolean {
  const family = net.isIP(address);
  if (family === 0) return false;
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address)?.[1];
  if (mapped) return !PRIVATE_V4.check(mapped, 'ipv4');
  return family === 4 ? !PRIVATE_V4.check(address, 'ipv4') : !PRIVATE_V6.check(address, 'ipv6');
}

/** Why `url` cannot be a webhook, or null when it can (the registration's check). */
export function webhookUrlProblem(url: string, allowLoopback: boolean): string | null {
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    return 'Input should be an https URL';
  }
  if (u.protocol !== 'https:' && !(allowLoopback && u.protocol === 'http:'))
    return 'Input should be an https URL';
  if (u.username || u.password) return 'The URL must not carry credentials';
  const host = u.hostname.replace(/^\[|\]$/g, '');
  // localhost, written fully qualified (a final dot) or not, and every name under it (RFC 6761: loopback).
  const name = host.replace(/\.$/, '');
  const local = name === 'localhost' || name.endsWith('.localhost');
  if (!allowLoopback && (local || (net.isIP(host) && !isPublicAddress(host))))
    return 'The URL must point to a public address';
  return null;
}

export class WebhookTargetError extends Error {
  override name = 'WebhookTargetError';
}

/** The answer of one delivery attempt. */
export interface PostResult {
  status: number;
}

/** A host name's addresses, as `dns.lookup` with `all: true` answers them. */
export type HostResolver = (hostname: string) => Promise<{ address: string; family: 4 | 6 }[]>;

/** Each DNS query waits this long for an answer, and is sent this many times (per server). */
const DNS_QUERY_TIMEOUT_MS = 2_000;
const DNS_TRIES = 2;
/** A name not resolved within this is a failed attempt (c-ares alone may take longer with several servers). */
export const DNS_DEADLINE_MS = 5_000;

/** A name under the RFC 6761 `localhost` zone (loopback by definition, never asked of DNS). */
const isLocalhostName = (host: string) => {
  const name = host.toLowerCase().replace(/\.$/, '');
  return name === 'localhost' || name.endsWith('.localhost');
};

/** An answer that says the name has no address of that family (rather than that asking failed). */
const noSuchAddress = (err: unknown) =>
  ['ENODATA', 'ENOTFOUND'].includes((err as NodeJS.ErrnoException).code ?? '');

/**
 * Resolves receivers' host names by asking DNS (A and AAAA, through c-ares: `servers`, else those of
 * /etc/resolv.conf), not with `dns.lookup`: that is getaddrinfo on libuv's 4-thread pool, and a receiver
 * pointed at a zone that never answers held a thread for the system resolver's whole timeout, so a few
 * such channels stalled every file read and write of the process (the mail outbox, uploads). c-ares waits
 * on the event loop; each name gets `deadlineMs` in all. /etc/hosts is not read: `localhost` and the names
 * under it are loopback (RFC 6761), as there.
 */
export function createHostResolver(opts: { servers?: string[]; deadlineMs?: number } = {}): HostResolver {
  const deadlineMs = opts.deadlineMs ?? DNS_DEADLINE_MS;
  return async (hostname) => {
    const literal = net.isIP(hostname);
    if (literal) return [{ address: hostname, family: literal as 4 | 6 }];
    if (isLocalhostName(hostname))
      return [
        { address: '127.0.0.1', family: 4 },
        { address: '::1', family: 6 },
      ];
    // One resolver per name, so its queries can be cancelled at the deadline without touching others'.
    const resolver = new Resolver({ timeout: DNS_QUERY_TIMEOUT_MS, tries: DNS_TRIES });
    if (opts.servers) resolver.setServers(opts.servers);
    const family = (v: 4 | 6) =>
      (v === 4 ? resolver.resolve4(hostname) : resolver.resolve6(hostname)).then(
        (addresses) => addresses.map((address) => ({ address, family: v })),
        (err: unknown) => (noSuchAddress(err) ? [] : Promise.reject(err)),
      );
    let timer: NodeJS.Timeout | undefined;
    const deadline = new Promise<never>((_, reject) => {
      timer = setTimeout(() => {
        resolver.cancel();
        reject(new Error(`${hostname} did not resolve within ${deadlineMs} ms`));
      }, deadlineMs);
    });
    try {
      const answers = await Promise.race([Promise.allSettled([family(4), family(6)]), deadline]);
      const addresses = answers.flatMap((a) => (a.status === 'fulfilled' ? a.value : []));
      // An address of one family is enough when asking for the other failed; both failed is the error.
      const failed = answers.find((a): a is PromiseRejectedResult => a.status === 'rejected');
      if (!addresses.length && failed)
        throw failed.reason instanceof Error ? failed.reason : new Error(String(failed.reason));
      return addresses;
    } finally {
      clearTimeout(timer);
    }
  };
}

const defaultResolver = createHostResolver();

/**
 * POSTs `body` to `url` with `headers`, answered within `timeoutMs` (resolving, connecting, sending and the
 * status line together), and reads nothing of the answer but its status. Rejects on network errors,
 * timeouts, names that do not resolve (within `resolve`'s own bound) and addresses the policy refuses.
 */
export function postWebhook(
  url: string,
  body: string,
  headers: Record<string, string>,
  opts: { allowLoopback: boolean; timeoutMs: number; resolve?: HostResolver },
): Promise<PostResult> {
  const problem = webhookUrlProblem(url, opts.allowLoopback);
  if (problem) return Promise.reject(new WebhookTargetError(problem));
  const u = new URL(url);
  const resolve = opts.resolve ?? defaultResolver;
  // Node 20 connects with happy eyeballs and then asks for every address (`options.all`), trying each: all
  // of them are checked, and the answer takes the form asked for.
  const lookup: net.LookupFunction = (hostname, options, callback) => {
    resolve(hostname).then(
      (all) => {
        const addresses = options.family ? all.filter((a) => a.family === options.family) : all;
        if (!addresses.length) return callback(new Error(`${hostname} has no address`), '', 0);
        if (!opts.allowLoopback && all.some((a) => !isPublicAddress(a.address)))
          return callback(new WebhookTargetError(`${hostname} resolves to a non-public address`), '', 0);
        if (options.all) return callback(null, addresses);
        callback(null, addresses[0]!.address, addresses[0]!.family);
      },
      (err: unknown) => callback(err instanceof Error ? err : new Error(String(err)), '', 0),
    );
  };
  const client = u.protocol === 'https:' ? https : http;
  return new Promise<PostResult>((resolve, reject) => {
    // One deadline for the whole exchange: a receiver trickling its answer a byte at a time is never idle
    // long enough for a socket timeout, and would hold the dispatcher's pass (everyone's webhooks) forever.
    // It settles the attempt itself: a request already ended without an error (see 'upgrade') emits none.
    const deadline = setTimeout(() => {
      const err = new Error(`no answer within ${opts.timeoutMs} ms`);
      req.destroy(err);
      reject(err);
    }, opts.timeoutMs);
    const req = client.request(
      u,
      {
        method: 'POST',
        headers: { ...headers, 'content-length': Buffer.byteLength(body).toString() },
        lookup,
        agent: false,
      },
      (res) => {
        // The status is the answer; the body is not read (the connection is not reused either).
        clearTimeout(deadline);
        resolve({ status: res.statusCode ?? 0 });
        res.destroy();
      },
    );
    // A 101 answer is an answer (not 2xx: tried again); without this handler Node drops the connection and
    // the request ends with neither a response nor an error.
    req.on('upgrade', (res, socket) => {
      clearTimeout(deadline);
      resolve({ status: res.statusCode ?? 0 });
      socket.destroy();
    });
    req.on('error', (err) => {
      clearTimeout(deadline);
      reject(err);
    });
    req.end(body);
  });
}
