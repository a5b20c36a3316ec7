import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createOutboxMailer, outboxFileName, syncDirectory } from '../../src/mail/mailer';

const message = (i: number) => ({
  key: `event-${i}/user-${i}`,
  to: `user${i}@example.com`,
  subject: `Booking ${i}`,
  text: `Hello ${i}`,
  headers: {},
});

describe('the outbox mailer (real files in a temporary directory)', () => {
  let dir: string;
  beforeEach(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'outbox-'));
  });
  afterEach(() => fs.rmSync(dir, { recursive: true, force: true }));

  it('answers a send only after a directory fsync that saw the file under its final name', async () => {
    // Each directory fsync notes the entries it made durable, and when it finished.
    const syncs: { names: Set<string>; finished?: number }[] = [];
    let clock = 0;
    const watched = async (d: string) => {
      const sync: { names: Set<string>; finished?: number } = { names: new Set(fs.readdirSync(d)) };
      syncs.push(sync);
      await syncDirectory(d);
      sync.finished = clock++;
    };
    const mailer = createOutboxMailer(
      path.join(dir, 'outbox'),
      'Coaching <no-reply@coaching.local>',
      watched,
    );
    const sent = await Promise.all(
      Array.from({ length: 24 }, async (_, i) => {
        await mailer.send(message(i));
        return { i, answered: clock++ };
      }),
    );
    const files = fs.readdirSync(path.join(dir, 'outbox'));
    expect(files.filter((f) => f.endsWith('.eml'))).toHaveLength(24);
    expect(files.filter((f) => !f.endsWith('.eml'))).toEqual([]); // no temporary file left
    for (const { i, answered } of sent) {
      const name = outboxFileName(message(i).key);
      expect(fs.readFileSync(path.join(dir, 'outbox', name), 'utf8')).toContain(`Hello ${i}\r\n`);
      const covering = syncs.filter(
        (s) => s.names.has(name) && s.finished !== undefined && s.finished < answered,
      );
      expect(covering.length).toBeGreaterThan(0);
    }
  });

  it('fails the send (so the delivery is deferred, not recorded as sent) when the directory cannot be fsynced', async () => {
    const mailer = createOutboxMailer(path.join(dir, 'outbox'), 'Coaching <no-reply@coaching.local>', () =>
      Promise.reject(Object.assign(new Error('EIO: i/o error, fsync'), { code: 'EIO' })),
    );
    await expect(mailer.send(message(1))).rejects.toThrow('EIO');
  });
});
