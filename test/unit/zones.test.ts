import { DateTime, Info } from 'luxon';
import { zoneOf } from '../../commands/calendar/zones';

const ZONES = [
  'Europe/Lisbon',
  'America/New_York',
  'America/St_Johns', // -03:30 with DST
  'Australia/Lord_Howe', // a DST shift of 30 minutes
  'Pacific/Chatham', // +12:45 with DST
  'Asia/Kathmandu', // +05:45
  'Europe/Berlin',
  'UTC',
];

describe('zones with remembered offsets', () => {
  it("convert exactly as luxon's own zones, minute by minute around every transition of 2026-2027", () => {
    const differences: string[] = [];
    let checked = 0;
    for (const name of ZONES) {
      const zone = zoneOf(name);
      const iana = Info.normalizeZone(name);
      const same = (ts: number) => {
        checked++;
        const plain = DateTime.fromMillis(ts, { zone: name }).toISO();
        const remembered = DateTime.fromMillis(ts, { zone }).toISO();
        if (plain !== remembered) differences.push(`${name} ${ts}: ${remembered}, luxon ${plain}`);
      };
      const hour = 3_600_000;
      for (let ts = Date.UTC(2026, 0, 1); ts < Date.UTC(2028, 0, 1); ts += hour) {
        if ((ts / hour) % 7 === 0) same(ts + 1_234_567); // an instant of every seventh hour
        if (iana.offset(ts) === iana.offset(ts + hour)) continue;
        // A transition within this hour: every minute of the three hours around it, and its edges.
        for (let m = ts - hour; m < ts + 2 * hour; m += 60_000) [m - 1, m, m + 29_999].forEach(same);
      }
    }
    expect(differences).toEqual([]);
    expect(checked).toBeGreaterThan(20_000);
  });

  it('parse local wall times (gaps and folds included) and format them as the plain zone does', () => {
    for (const name of ZONES) {
      const zone = zoneOf(name);
      for (
        let day = DateTime.fromISO('2026-03-01', { zone: name });
        day.year < 2027;
        day = day.plus({ days: 1 })
      ) {
        for (const time of ['00:00', '01:30', '02:00', '02:30', '03:00', '12:00', '23:45']) {
          const local = `${day.toISODate()}T${time}:00`;
          const a = DateTime.fromISO(local, { zone });
          const b = DateTime.fromISO(local, { zone: name });
          expect([
            local,
            a.toMillis(),
            a.toFormat('dd/MM/yyyy HH:mm ZZ'),
            a.getPossibleOffsets().map((x) => x.toMillis()),
          ]).toEqual([
            local,
            b.toMillis(),
            b.toFormat('dd/MM/yyyy HH:mm ZZ'),
            b.getPossibleOffsets().map((x) => x.toMillis()),
          ]);
        }
      }
    }
  });

  it('leaves an unknown zone to luxon (invalid, as before)', () => {
    expect(zoneOf('Mars/Olympus')).toBe('Mars/Olympus');
    expect(DateTime.fromISO('2026-01-01T10:00:00', { zone: zoneOf('Mars/Olympus') }).isValid).toBe(false);
  });
});
