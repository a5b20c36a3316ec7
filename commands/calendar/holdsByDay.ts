import { PersistentMap, PersistentSet } from '../../src/persistentMap';
import { instantsOf, type Reservation } from './slots';

/**
 * A calendar's active holds by the UTC dates their busy time (the session and the coach's travel before and
 * after it) touches: a booking compares the holds of the days around its slot only, instead of every hold
 * of the coach's history, so its cost does not grow with the calendar. Pure, like the decider it serves.
 */
export type HoldsByDay = PersistentMap<PersistentSet>;

const DAY_MS = 86_400_000;
const dateKey = (day: number) => new Date(day * DAY_MS).toISOString().slice(0, 10);

/** The UTC days (epoch day numbers) a hold's busy time touches: from start less travel to end plus travel. */
function daysOf(r: Reservation): [number, number] {
  const { s, e } = instantsOf(r);
  const travel = (r.travelMinutes ?? 0) * 60_000;
  const first = Math.floor((s - travel) / DAY_MS);
  return [first, Math.max(first, Math.floor((e + travel - 1) / DAY_MS))];
}

export function indexHold(index: HoldsByDay, r: Reservation): HoldsByDay {
  const [first, last] = daysOf(r);
  for (let d = first; d <= last; d++) {
    const key = dateKey(d);
    index = index.set(key, (index.get(key) ?? PersistentSet.empty()).add(r.sessionId));
  }
  return index;
}

export function unindexHold(index: HoldsByDay, r: Reservation): HoldsByDay {
  const [first, last] = daysOf(r);
  for (let d = first; d <= last; d++) {
    const key = dateKey(d);
    const ids = index.get(key)?.delete(r.sessionId);
    if (ids) index = ids.size ? index.set(key, ids) : index.delete(key);
  }
  return index;
}

/**
 * Every active hold whose busy time may touch [from, to) (epoch ms): those indexed under the UTC days of
 * the span, each once. A superset of what overlaps the span; the slot arithmetic filters exactly.
 */
export function holdsAround<R extends Reservation>(
  reservations: PersistentMap<R>,
  index: HoldsByDay,
  from: number,
  to: number,
): R[] {
  const seen = new Set<string>();
  const out: R[] = [];
  for (let d = Math.floor(from / DAY_MS); d <= Math.floor((to - 1) / DAY_MS); d++)
    for (const id of index.get(dateKey(d)) ?? []) {
      if (seen.has(id)) continue;
      seen.add(id);
      const r = reservations.get(id);
      if (r) out.push(r);
    }
  return out;
}
