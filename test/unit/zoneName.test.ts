import { zoneName } from '../../src/zoneName';

describe('zoneName', () => {
  it.each([
    ['Europe/Berlin', 'Europe/Berlin'],
    ['europe/berlin', 'Europe/Berlin'],
    ['utc', 'UTC'],
    ['Etc/UTC', 'UTC'],
    ['US/Eastern', 'America/New_York'],
  ])('answers %s by its canonical name %s', (sent, stored) => {
    expect(zoneName(sent)).toBe(stored);
  });

  it.each([
    ['Europe/Kyiv', 'Europe/Kyiv'],
    ['europe/kiev', 'Europe/Kyiv'],
    ['Asia/Kolkata', 'Asia/Kolkata'],
    ['Asia/Calcutta', 'Asia/Kolkata'],
    ['ASIA/HO_CHI_MINH', 'Asia/Ho_Chi_Minh'],
    ['America/Argentina/Buenos_Aires', 'America/Argentina/Buenos_Aires'],
    ['America/Nuuk', 'America/Nuuk'],
    ['Pacific/Kanton', 'Pacific/Kanton'],
  ])('answers %s by the name IANA uses today (%s), not the one ICU kept', (sent, stored) => {
    expect(zoneName(sent)).toBe(stored);
  });

  it('knows every renamed zone under its current name (each is a zone the runtime accepts)', () => {
    for (const current of [
      'Africa/Asmara',
      'America/Atikokan',
      'Asia/Yangon',
      'Atlantic/Faroe',
      'Pacific/Chuuk',
    ])
      expect(zoneName(current)).toBe(current);
  });

  it('answers null for a zone the runtime does not know', () => {
    for (const sent of ['Europe/Nowhere', 'Berlin/Europe', '', '+01:00']) expect(zoneName(sent)).toBeNull();
  });
});
