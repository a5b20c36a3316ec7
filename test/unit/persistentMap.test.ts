import { inbox } from '../../commands/notifications/decider';
import { PersistentMap, PersistentSet } from '../../src/persistentMap';
import { toJsonSafe } from '../../queries/auditStreams';

/** A small deterministic random source, so a failure replays. */
function rng(seed: number) {
  let s = seed >>> 0;
  return () => {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    return s / 2 ** 32;
  };
}

const sorted = <V>(entries: Iterable<[string, V]>) => [...entries].sort(([a], [b]) => (a < b ? -1 : 1));

describe('PersistentMap', () => {
  const hashes: [string, ((k: string) => number) | undefined][] = [
    ['FNV-1a', undefined],
    ['keys colliding in groups (hash of the length)', (k) => k.length * 2654435761],
    ['every key colliding', () => 42],
    ['hashes equal but for the last bits', (k) => 0xfffffff0 | (k.charCodeAt(k.length - 1) & 3)],
  ];

  it.each(hashes)(
    'answers as a native Map after random sets and deletes (%s), and old versions never change',
    (_, hash) => {
      const random = rng(7);
      let map = PersistentMap.empty<number>(hash);
      const native = new Map<string, number>();
      const versions: { map: PersistentMap<number>; copy: [string, number][] }[] = [];
      for (let step = 0; step < 8000; step++) {
        const key = `k${Math.floor(random() * 1500)}`;
        if (random() < 0.3) {
          map = map.delete(key);
          native.delete(key);
        } else {
          const value = Math.floor(random() * 1000);
          map = map.set(key, value);
          native.set(key, value);
        }
        if (step % 97 === 0) versions.push({ map, copy: sorted(native) });
        if (step % 13 === 0) {
          expect(map.size).toBe(native.size);
          expect(map.get(key)).toBe(native.get(key));
          expect(map.has(key)).toBe(native.has(key));
        }
      }
      expect(sorted(map)).toEqual(sorted(native));
      expect([...map.keys()].sort()).toEqual([...native.keys()].sort());
      expect([...map.values()].sort()).toEqual([...native.values()].sort());
      for (let i = 0; i < 1500; i++) expect(map.get(`k${i}`)).toBe(native.get(`k${i}`));
      for (const v of versions) {
        expect(sorted(v.map)).toEqual(v.copy);
        expect(v.map.size).toBe(v.copy.length);
      }
    },
  );

  it('keeps falsy and undefined values apart from absent keys', () => {
    const map = PersistentMap.empty<unknown>().set('zero', 0).set('none', undefined).set('empty', '');
    expect([map.has('zero'), map.has('none'), map.has('empty'), map.has('other')]).toEqual([
      true,
      true,
      true,
      false,
    ]);
    expect(map.get('zero')).toBe(0);
    expect(map.delete('none').has('none')).toBe(false);
    expect(map.delete('other')).toBe(map);
  });

  it('returns itself when nothing changes, and empties back to size 0', () => {
    const value = { a: 1 };
    const one = PersistentMap.empty<object>().set('a', value);
    expect(one.set('a', value)).toBe(one);
    expect(one.delete('a').size).toBe(0);
    expect([...one.delete('a')]).toEqual([]);
  });

  it('serializes as the object of its entries, as a native Map does in audit answers', () => {
    expect(
      JSON.stringify(
        PersistentMap.of([
          ['b', 2],
          ['a', 1],
        ]),
      ),
    ).toMatch(/^\{("a":1,"b":2|"b":2,"a":1)\}$/);
  });
});

describe('PersistentSet', () => {
  it('adds, deletes and answers like a native Set, sharing nothing with earlier versions', () => {
    const a = PersistentSet.empty().add('x').add('y');
    const b = a.add('z').delete('x');
    expect([a.size, a.has('x'), a.has('z')]).toEqual([2, true, false]);
    expect([...b].sort()).toEqual(['y', 'z']);
    expect(a.add('x')).toBe(a);
    expect(JSON.stringify(b.delete('y'))).toBe('["z"]');
  });
});

describe('an inbox state in audit answers (persistent maps inside)', () => {
  it('serializes notifications as an object by id and causes as a list, as with native collections', () => {
    const created = (id: string, cause: string) => ({
      type: 'NotificationCreated' as const,
      data: {
        notificationId: id,
        userId: 'u1',
        type: 'session',
        contentType: 'session',
        contentId: 's1',
        message: 'hello',
        causationEventId: cause,
        createdAt: '2026-12-01T08:00:00.000Z',
      },
    });
    const state = [created('n1', 'c1'), created('n2', 'c2')].reduce(inbox.evolve, inbox.initialState());
    const read = inbox.evolve(state, {
      type: 'NotificationsRead',
      data: { userId: 'u1', notificationIds: ['n1'], at: '2026-12-01T09:00:00.000Z' },
    });
    const json = toJsonSafe(read) as { notifications: Record<string, { unread: boolean }>; causes: string[] };
    expect(Object.keys(json.notifications).sort()).toEqual(['n1', 'n2']);
    expect([json.notifications.n1!.unread, json.notifications.n2!.unread]).toEqual([false, true]);
    expect(json.causes.sort()).toEqual(['c1', 'c2']);
    // The state before the read is unchanged.
    expect(state.notifications.get('n1')!.unread).toBe(true);
  });
});
