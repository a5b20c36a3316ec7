import { IANAZone, Info, Zone, type ZoneOffsetFormat, type ZoneOffsetOptions } from 'luxon';

const QUARTER_HOUR = 15 * 60_000;
/** Quarter hours remembered per zone (a few weeks of them; cleared when full). */
const MAX_QUARTERS = 20_000;

/**
 * An IANA zone whose offsets are remembered per quarter hour. Luxon asks `Intl` for the offset of every
 * instant it converts (`formatToParts`, several microseconds each, several times per date), and slot
 * arithmetic converts many: it was a tenth of a booking's CPU. Offsets change only at transitions, and
 * modern ones fall on quarter hours; a quarter hour whose two ends differ holds a transition and is never
 * remembered (asked exactly each time), so the answers are luxon's own.
 *
 * A class because luxon's zone API is one (`Zone`); it reports itself as the IANA zone it wraps, so luxon
 * formats and compares it exactly as that zone.
 */
class RememberingZone extends Zone {
  private readonly inner: IANAZone;
  private readonly offsets = new Map<number, number>();

  constructor(name: string) {
    super();
    this.inner = IANAZone.create(name);
  }

  override get type(): string {
    return 'iana';
  }
  override get name(): string {
    return this.inner.name;
  }
  override get isUniversal(): boolean {
    return false;
  }
  override get isValid(): boolean {
    return this.inner.isValid;
  }
  override offsetName(ts: number, opts: ZoneOffsetOptions): string | null {
    return this.inner.offsetName(ts, opts);
  }
  override formatOffset(ts: number, format: ZoneOffsetFormat): string {
    return this.inner.formatOffset(ts, format);
  }
  override offset(ts: number): number {
    const quarter = Math.floor(ts / QUARTER_HOUR);
    const known = this.offsets.get(quarter);
    if (known !== undefined) return known;
    const start = this.inner.offset(quarter * QUARTER_HOUR);
    if (start !== this.inner.offset((quarter + 1) * QUARTER_HOUR - 1)) return this.inner.offset(ts);
    if (this.offsets.size >= MAX_QUARTERS) this.offsets.clear();
    this.offsets.set(quarter, start);
    return start;
  }
  override equals(other: Zone): boolean {
    return other.type === 'iana' && other.name === this.name;
  }
}

const zones = new Map<string, Zone>();

/**
 * The zone of a name for luxon: an IANA zone with remembered offsets, or the name itself for what luxon reads
 * otherwise ("UTC", fixed offsets, the system zone) or not at all (an invalid name stays invalid).
 */
export function zoneOf(name: string): Zone | string {
  let z = zones.get(name);
  if (!z) {
    const plain = Info.normalizeZone(name);
    if (plain.type !== 'iana' || !plain.isValid) return name;
    if (zones.size >= 1000) zones.clear();
    zones.set(name, (z = new RememberingZone(name)));
  }
  return z;
}
