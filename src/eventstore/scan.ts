import { START, type EventStore, type RecordedEvent } from './types';

/**
 * Finds events by a property the store does not index, reading the whole global log in pages (memory
 * bounded by one page, time linear in the log). EventStoreDB uses it for the auditors' look-ups by event id
 * and by correlation id: its `$by_correlation_id` system projection would need projections enabled on the
 * server and the `$correlationId` metadata key, and an audit query is rare enough to afford a scan.
 */
export async function scanLog(
  readAll: EventStore['readAll'],
  match: (e: RecordedEvent) => boolean,
  opts: { first?: boolean; pageSize?: number } = {},
): Promise<RecordedEvent[]> {
  const found: RecordedEvent[] = [];
  let from = START;
  for (;;) {
    const page = await readAll(from, opts.pageSize ?? 1000);
    if (page.length === 0) return found;
    for (const e of page)
      if (match(e)) {
        found.push(e);
        if (opts.first) return found;
      }
    from = page[page.length - 1]!.position;
  }
}
