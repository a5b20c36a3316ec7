import { renderEmail } from '../../commands/email/templates';

describe('e-mail templates', () => {
  it('gives the reason of a cancellation by the system in words, and a person’s reason as written', () => {
    const canceled = (reason: string) =>
      renderEmail({
        template: 'cancel',
        role: 'client',
        recipientName: 'Ada',
        serviceName: 'Tennis basics',
        slots: ['2026-12-02T10:00:00'],
        timezone: 'Europe/Berlin',
        reason,
      });
    expect(canceled('payment_canceled').text).toContain(
      'Reason: the payment was canceled or not made in time',
    );
    expect(canceled('payment_deleted').text).toContain('Reason: the payment was withdrawn');
    expect(canceled('payment_canceled').text).not.toContain('payment_canceled');
    expect(canceled('ill, sorry').text).toContain('Reason: ill, sorry');
    expect(canceled('ill, sorry').html).toContain('<p>Reason: ill, sorry</p>');
    // A person's reason that happens to name a property every object has is still shown as written.
    for (const reason of ['constructor', 'toString', '__proto__', 'hasOwnProperty'])
      expect(canceled(reason).text).toContain(`Reason: ${reason}\n`);
  });

  it('offers a link alone as the way to confirm ("Open:", not "Or open:" with nothing before it)', () => {
    const verify = (more: { code?: string; link?: string }) =>
      renderEmail({ template: 'verification', role: 'user', recipientName: 'Ada', ...more }).text;
    expect(verify({ link: 'https://app.example/v?t=1' })).toContain('\nOpen: https://app.example/v?t=1\n');
    expect(verify({ link: 'https://app.example/v?t=1' })).not.toContain('Or open');
    expect(verify({ code: '4815', link: 'https://app.example/v?t=1' })).toContain(
      'Your verification code: 4815\nOr open: https://app.example/v?t=1\n',
    );
  });

  it('gives no "Reason:" line for a reason of blanks only, as for none', () => {
    for (const template of ['cancel', 'decline', 'dispute'] as const) {
      const mail = renderEmail({ template, role: 'client', recipientName: 'Ada', reason: ' \t\n ' });
      expect(mail.text).not.toContain('Reason');
      expect(mail.html).not.toContain('Reason');
    }
  });

  it('keeps a name with line breaks on its line: no forged lines in the text part, the same words as the HTML part', () => {
    const mail = renderEmail({
      template: 'booking',
      role: 'client',
      recipientName: 'Zoë\r\nReason: forged',
      serviceName: 'Tennis\nYour coach approved it.\u2028Really',
      slots: ['2026-12-02T10:00:00'],
      timezone: 'Europe/Berlin',
    });
    expect(mail.text.split('\n')).toEqual([
      'Hello Zoë Reason: forged,',
      '',
      'Your booking of Tennis Your coach approved it. Really on 2026-12-02 10:00 (Europe/Berlin) is received and waits for the coach.',
      '',
    ]);
    expect(mail.subject).toBe('Booking received: Tennis Your coach approved it. Really');
    expect(mail.html).toContain('<p>Hello Zoë Reason: forged,</p>');
    expect(mail.html).not.toMatch(/[\r\n\u2028]/);
    // A name that is only blanks and breaks greets as an empty one does.
    expect(renderEmail({ template: 'verification', role: 'client', recipientName: '\r\n' }).text).toMatch(
      /^Hello there,\n/,
    );
  });
});
