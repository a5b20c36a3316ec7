import { ConfigError, loadConfig } from '../../src/config';

describe('numeric settings', () => {
  it('an empty value means the default, as for every other number (a blanked line in .env)', () => {
    const config = loadConfig({ PORT: '', CONSISTENCY_WAIT_MS: '', MAX_UPLOAD_BYTES: '' });
    expect(config.port).toBe(3000);
    expect(config.consistencyWaitMs).toBe(2000);
    expect(config.maxUploadBytes).toBe(200 * 1024 * 1024);
  });

  it('a value that is not a whole number is refused at start, not taken as no limit', () => {
    for (const [name, raw] of [
      ['MAX_UPLOAD_BYTES', '200MB'],
      ['MAX_UPLOAD_BYTES', '0'],
      ['CONSISTENCY_WAIT_MS', '2s'],
      ['PORT', 'http'],
      ['PORT', '70000'],
    ] as const)
      expect(() => loadConfig({ [name]: raw })).toThrow(ConfigError);
  });

  it('takes whole numbers', () => {
    const config = loadConfig({ PORT: '8080', CONSISTENCY_WAIT_MS: '0', MAX_UPLOAD_BYTES: '1048576' });
    expect(config).toMatchObject({ port: 8080, consistencyWaitMs: 0, maxUploadBytes: 1048576 });
  });
});

describe('SMTP_URL', () => {
  it('is checked at start: an smtp:// or smtps:// URL with a host, or the service does not start', () => {
    for (const good of [
      'smtp://127.0.0.1:2525',
      'smtps://user:p%40ss@mail.example.com:465?tls.rejectUnauthorized=false',
      'smtp://[::1]:25',
    ])
      expect(loadConfig({ SMTP_URL: good }).smtpUrl).toBe(good);
    expect(loadConfig({ SMTP_URL: '' }).smtpUrl).toBeUndefined(); // the outbox
    // Each of these sent every e-mail to localhost:587 (nodemailer's default), and the service started.
    for (const bad of [
      'smtp//mail.example.com:25',
      'mail.example.com',
      'localhost:25',
      'http://mail.example.com',
      'smtp://',
    ])
      expect(() => loadConfig({ SMTP_URL: bad })).toThrow(ConfigError);
  });

  it('does not show the value it refuses (it may hold the password)', () => {
    expect(() => loadConfig({ SMTP_URL: 'smtp//user:hunter2@mail.example.com' })).toThrow(
      expect.objectContaining({ message: expect.not.stringContaining('hunter2') }),
    );
  });
});
