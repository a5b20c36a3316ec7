import { ReadCache, fillHole, holedJson } from '../../src/readModels/readCache';

describe('ReadCache', () => {
  it('serves a value only under the token it was computed under, within its span of time', () => {
    const c = new ReadCache<string>({ maxEntries: 10, maxBytes: 10_000 });
    c.set('k', 'v1', 'answer', 12, 100, 200);
    expect(c.get('k', 'v1', 100)).toBe('answer');
    expect(c.get('k', 'v1', 199)).toBe('answer');
    expect(c.get('k', 'v2', 150)).toBeUndefined(); // another version
    expect(c.get('k', undefined, 150)).toBeUndefined(); // no version read
    expect(c.get('k', 'v1', 200)).toBeUndefined(); // true until 200, exclusive
    expect(c.get('k', 'v1', 99)).toBeUndefined(); // a clock before it was computed
    expect(c.get('k', (v) => (v === 'answer' ? 'v1' : 'x'), 150)).toBe('answer'); // token from the value
    expect(c.get('other', 'v1', 150)).toBeUndefined();
    expect(c.stats()).toMatchObject({ entries: 1, hits: 3, misses: 5 });
    // peek: the value whatever its token or time (what never changes in it), not counted.
    expect(c.peek('k')).toBe('answer');
    expect(c.peek('other')).toBeUndefined();
    expect(c.stats()).toMatchObject({ hits: 3, misses: 5 });
  });

  it('keeps at most maxEntries, dropping the least recently used', () => {
    const c = new ReadCache<number>({ maxEntries: 3, maxBytes: 1e9 });
    for (const k of ['a', 'b', 'c']) c.set(k, 't', 1, 1, 0, Infinity);
    expect(c.get('a', 't', 1)).toBe(1); // a is now the most recently used
    c.set('d', 't', 1, 1, 0, Infinity);
    expect(c.get('b', 't', 1)).toBeUndefined();
    expect(['a', 'c', 'd'].map((k) => c.get(k, 't', 1))).toEqual([1, 1, 1]);
    expect(c.stats()).toMatchObject({ entries: 3, evictions: 1 });
  });

  it('keeps at most maxBytes (its values, keys and tokens), and never stores a value larger than that', () => {
    const c = new ReadCache<string>({ maxEntries: 1000, maxBytes: 1000 });
    for (let i = 0; i < 20; i++) c.set(`key${i}`, 'tok', 'x', 100, 0, Infinity);
    const { bytes, entries } = c.stats();
    expect(bytes).toBeLessThanOrEqual(1000);
    expect(entries).toBeGreaterThan(0);
    expect(entries).toBeLessThan(20);
    expect(c.get('key19', 'tok', 1)).toBe('x'); // the newest stay
    expect(c.get('key0', 'tok', 1)).toBeUndefined();
    c.set('huge', 'tok', 'y', 5000, 0, Infinity);
    expect(c.get('huge', 'tok', 1)).toBeUndefined();
    expect(c.stats().bytes).toBeLessThanOrEqual(1000);
    // Storing a key again replaces it and its bytes.
    c.set('key19', 'tok2', 'z', 100, 0, Infinity);
    expect(c.get('key19', 'tok', 1)).toBeUndefined();
    expect(c.get('key19', 'tok2', 1)).toBe('z');
    expect(c.stats().bytes).toBeLessThanOrEqual(1000);
  });

  it('stores nothing already out of date', () => {
    const c = new ReadCache<string>({ maxEntries: 10, maxBytes: 1e6 });
    c.set('k', 't', 'v', 1, 100, 100);
    expect(c.stats().entries).toBe(0);
  });
});

describe('holedJson', () => {
  it('is JSON.stringify of the object with the per-caller value in its place', () => {
    const body = { a: 1, packages: null, b: ['é', { c: 'x"y' }] };
    const h = holedJson(body, 'packages', '[]');
    expect(fillHole(h, '[]').toString()).toBe(JSON.stringify({ ...body, packages: [] }));
    expect(fillHole(h, '[{"p":1}]').toString()).toBe(JSON.stringify({ ...body, packages: [{ p: 1 }] }));
    const first = holedJson({ distance: null, z: 2 }, 'distance', 'null');
    expect(fillHole(first, '1.5').toString()).toBe('{"distance":1.5,"z":2}');
    const last = holedJson({ a: 'ü', distance: null }, 'distance', 'null');
    expect(fillHole(last, '2').toString()).toBe('{"a":"ü","distance":2}');
    expect(fillHole(last, 'null')).toBe(last.bytes);
  });

  it('holds its bytes in memory of their own, not a slice of a shared block the cache would keep whole', () => {
    const small = holedJson({ a: 1, distance: null }, 'distance', 'null');
    expect(small.bytes.byteOffset).toBe(0);
    expect(small.bytes.buffer.byteLength).toBe(small.bytes.length);
    expect(small.bytes.toString()).toBe('{"a":1,"distance":null}');
  });
});
