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
});
