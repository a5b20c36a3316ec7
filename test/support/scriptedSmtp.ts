import net from 'node:net';

/** An SMTP stage a scripted server can refuse. `eod`: the reply to the message's data (after the dot). */
export type SmtpStage = 'greeting' | 'ehlo' | 'mail' | 'rcpt' | 'data' | 'eod';

export interface SmtpScript {
  /** Answer this stage with `code` instead of a success. */
  refuse?: { stage: SmtpStage; code: number };
  /** Close the connection after taking the message's data, before answering it (the message is kept). */
  dropAfterData?: boolean;
}

const header = (raw: string, name: string) =>
  new RegExp(`^${name}:[ \\t]*(.*)$`, 'im').exec(raw.split('\r\n\r\n')[0] ?? '')?.[1]?.trim() ?? '';

/**
 * A minimal SMTP server over a plain socket whose replies are scripted per stage (test/support/smtp.ts, the
 * `smtp-server` package, answers the greeting, EHLO and the end of data itself). It keeps every message
 * whose data it took (also one it then dropped the connection on, as a real relay may).
 */
export async function startScriptedSmtp() {
  let script: SmtpScript = {};
  const kept: { messageId: string; key: string }[] = [];
  const sockets = new Set<net.Socket>();
  const server = net.createServer((socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
    socket.on('error', () => undefined);
    const reply = (stage: SmtpStage, ok: string) =>
      socket.write(
        script.refuse?.stage === stage ? `${script.refuse.code} refused at ${stage}\r\n` : `${ok}\r\n`,
      );
    reply('greeting', '220 scripted ESMTP');
    let inData = false;
    let buffer = '';
    socket.on('data', (chunk: Buffer) => {
      buffer += chunk.toString('utf8');
      for (;;) {
        if (inData) {
          const end = buffer.indexOf('\r\n.\r\n');
          if (end < 0) return;
          const raw = buffer.slice(0, end);
          buffer = buffer.slice(end + 5);
          inData = false;
          if (script.refuse?.stage !== 'eod')
            kept.push({ messageId: header(raw, 'Message-ID'), key: header(raw, 'X-Idempotency-Key') });
          if (script.dropAfterData) return void socket.destroy();
          reply('eod', '250 queued');
          continue;
        }
        const eol = buffer.indexOf('\r\n');
        if (eol < 0) return;
        const verb = buffer.slice(0, 4).toUpperCase();
        buffer = buffer.slice(eol + 2);
        if (verb === 'EHLO' || verb === 'HELO') reply('ehlo', '250 scripted');
        else if (verb === 'MAIL') reply('mail', '250 ok');
        else if (verb === 'RCPT') reply('rcpt', '250 ok');
        else if (verb === 'DATA') {
          inData = script.refuse?.stage !== 'data';
          reply('data', '354 go ahead');
        } else if (verb === 'QUIT') socket.end('221 bye\r\n');
        else socket.write('250 ok\r\n');
      }
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  const { port } = server.address() as net.AddressInfo;
  return {
    url: `smtp://127.0.0.1:${port}`,
    kept,
    /** Sets the script and closes every open connection, so the next message starts from the greeting. */
    async play(next: SmtpScript) {
      script = next;
      for (const s of sockets) s.destroy();
      await new Promise((r) => setTimeout(r, 50));
    },
    close: () =>
      new Promise<void>((r) => {
        for (const s of sockets) s.destroy();
        server.close(() => r());
      }),
  };
}
