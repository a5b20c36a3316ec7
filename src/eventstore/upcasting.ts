import { isCondition, type EventStore, type NewEvent, type RecordedEvent } from './types';

/**
 * Event versioning. Every event is stored with `metadata.schemaVersion` (the current version of its type
 * when written; an event stored without one is version 1). An upcaster turns version `from` of a type into
 * version `from + 1` (possibly renaming the type); reading applies them in a chain up to the current
 * version, so deciders, projections and audits only ever see the current shape. This happens in one place:
 * `withUpcasting` wraps the event store port (src/system.ts), so every adapter and every reader gets it.
 */
export interface Upcaster {
  type: string;
  from: number;
  up(data: unknown, metadata: RecordedEvent['metadata']): { type?: string; data: unknown };
}

export interface UpcasterRegistry {
  /** The version new events of this type are written with. */
  currentVersion(type: string): number;
  upcast(event: RecordedEvent): RecordedEvent;
}

export function createUpcasterRegistry(upcasters: Upcaster[]): UpcasterRegistry {
  const byKey = new Map(upcasters.map((u) => [`${u.type}@${u.from}`, u]));
  const current = new Map<string, number>();
  for (const u of upcasters) current.set(u.type, Math.max(current.get(u.type) ?? 1, u.from + 1));
  const currentVersion = (type: string) => current.get(type) ?? 1;
  return {
    currentVersion,
    upcast(event) {
      let version = Number(event.metadata.schemaVersion ?? 1);
      let { type, data } = event;
      for (let u = byKey.get(`${type}@${version}`); u; u = byKey.get(`${type}@${version}`)) {
        const next = u.up(data, event.metadata);
        type = next.type ?? type;
        data = next.data;
        version++;
      }
      if (type === event.type && data === event.data) return event;
      return { ...event, type, data, metadata: { ...event.metadata, schemaVersion: version } };
    },
  };
}

/**
 * PaymentCreated v1 to v2: until free services (price 0) had their payments created `received`, a free
 * booking's payment was created `awaiting` with a deadline, and canceled as unpaid when it passed. Read as
 * v2, such a payment stored before is `received` too: it is not expired, refunds nothing when its booking
 * is canceled, and shows received (run `npm run rebuild` after deploying so read models show it so).
 */
const freePaymentReceived: Upcaster = {
  type: 'PaymentCreated',
  from: 1,
  up: (data) => {
    const d = data as { price: number; status: string };
    return { data: d.price <= 0 && d.status === 'awaiting' ? { ...d, status: 'received' } : d };
  },
};

/** The upcasters of the service (docs/architecture.md says how to add one). */
export const UPCASTERS: Upcaster[] = [freePaymentReceived];

/** The port with versioning: writes stamp the current version, reads upcast. */
export function withUpcasting(store: EventStore, registry: UpcasterRegistry): EventStore {
  const stamp = (events: NewEvent[]) =>
    events.map((e) => ({
      ...e,
      metadata: {
        ...e.metadata,
        schemaVersion: e.metadata?.schemaVersion ?? registry.currentVersion(e.type),
      },
    }));
  const up = (e: RecordedEvent) => registry.upcast(e);
  return {
    ...store,
    kind: store.kind,
    append: (streamName, events, opts) => store.append(streamName, stamp(events), opts),
    ...(store.appendMany
      ? {
          appendMany: (appends) =>
            store.appendMany!(appends.map((a) => (isCondition(a) ? a : { ...a, events: stamp(a.events) }))),
        }
      : {}),
    readStream: async (streamName, opts) => {
      const res = await store.readStream(streamName, opts);
      return { ...res, events: res.events.map(up) };
    },
    readAll: async (from, limit) => (await store.readAll(from, limit)).map(up),
    subscribe: (opts) => store.subscribe({ ...opts, handler: (events) => opts.handler(events.map(up)) }),
    readEvent: async (id) => {
      const e = await store.readEvent(id);
      return e && up(e);
    },
    readCorrelated: async (id) => (await store.readCorrelated(id)).map(up),
  };
}
