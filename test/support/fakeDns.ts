import dgram from 'node:dgram';
import type { AddressInfo } from 'node:net';

/** The 16 bytes of an IPv6 address written in any textual form without an embedded IPv4 part. */
function ipv6Bytes(address: string): Buffer {
  const [head, tail] = address.includes('::') ? address.split('::') : [address, undefined];
  const left = head ? head.split(':') : [];
  const right = tail ? tail.split(':') : [];
  const groups =
    tail === undefined ? left : [...left, ...Array(8 - left.length - right.length).fill('0'), ...right];
  const out = Buffer.alloc(16);
  groups.forEach((g, i) => out.writeUInt16BE(parseInt(g, 16), i * 2));
  return out;
}

/**
 * A DNS server on loopback UDP for a `node:dns` Resolver (`setServers([server])`): it answers A and AAAA
 * queries from `records` (a name it does not know is NXDOMAIN, a known name without records of the asked
 * type has no data), or, with `silent`, never answers at all: a black-hole zone. `queries` counts what came.
 */
export async function startFakeDns(opts: {
  records?: Record<string, { a?: string[]; aaaa?: string[] }>;
  silent?: boolean;
}) {
  const socket = dgram.createSocket('udp4');
  const state = { queries: 0 };
  socket.on('message', (msg, peer) => {
    state.queries++;
    if (opts.silent) return;
    // The question: labels from byte 12, then QTYPE and QCLASS.
    const labels: string[] = [];
    let at = 12;
    while (msg[at]! > 0) {
      labels.push(msg.subarray(at + 1, at + 1 + msg[at]!).toString('ascii'));
      at += msg[at]! + 1;
    }
    const questionEnd = at + 5;
    const qtype = msg.readUInt16BE(at + 1);
    const known = opts.records?.[labels.join('.').toLowerCase()];
    const rdata = !known
      ? []
      : qtype === 1
        ? (known.a ?? []).map((a) => Buffer.from(a.split('.').map(Number)))
        : qtype === 28
          ? (known.aaaa ?? []).map(ipv6Bytes)
          : [];
    const header = Buffer.alloc(12);
    msg.copy(header, 0, 0, 2); // the query's id
    header.writeUInt16BE(known ? 0x8180 : 0x8183, 2); // a response, recursion available; NXDOMAIN if unknown
    header.writeUInt16BE(1, 4);
    header.writeUInt16BE(rdata.length, 6);
    const answers = rdata.map((r) => {
      const rr = Buffer.alloc(12);
      rr.writeUInt16BE(0xc00c, 0); // the name: a pointer to the question's
      rr.writeUInt16BE(qtype, 2);
      rr.writeUInt16BE(1, 4); // IN
      rr.writeUInt32BE(60, 6);
      rr.writeUInt16BE(r.length, 10);
      return Buffer.concat([rr, r]);
    });
    socket.send(Buffer.concat([header, msg.subarray(12, questionEnd), ...answers]), peer.port, peer.address);
  });
  await new Promise<void>((r) => socket.bind(0, '127.0.0.1', r));
  return {
    state,
    server: `127.0.0.1:${(socket.address() as AddressInfo).port}`,
    close: () => new Promise<void>((r) => socket.close(() => r())),
  };
}
