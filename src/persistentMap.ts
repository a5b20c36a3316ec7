/**
 * An immutable map from string keys: `set` and `delete` return a new map that shares all but one path with
 * the old one (a hash array mapped trie, 32 ways per level), so adding to a map of n entries costs
 * O(log32 n) instead of a copy of n. Folded states may never change in place (the kept folds and the
 * guesses of src/foldedStates.ts hold on to every version), and a native Map copied on every event made a
 * busy coach's inbox or calendar cost O(n) per new entry and O(n²) to fold cold.
 *
 * Iteration order is the trie's, not insertion order.
 */

const BITS = 5;
const MASK = 31;

interface Leaf<V> {
  kind: 'leaf';
  hash: number;
  key: string;
  value: V;
}
/** Entries whose keys hash alike (all 32 bits). */
interface Collision<V> {
  kind: 'collision';
  hash: number;
  leaves: Leaf<V>[];
}
interface Branch<V> {
  kind: 'branch';
  /** Bit i set: slot i holds `items[popcount(bitmap below i)]`. */
  bitmap: number;
  items: Item<V>[];
}
type Item<V> = Leaf<V> | Collision<V> | Branch<V>;

/** FNV-1a over the UTF-16 code units. */
function fnv1a(key: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < key.length; i++) {
    h ^= key.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return h >>> 0;
}

function popcount(x: number): number {
  x -= (x >>> 1) & 0x55555555;
  x = (x & 0x33333333) + ((x >>> 2) & 0x33333333);
  return (Math.imul((x + (x >>> 4)) & 0x0f0f0f0f, 0x01010101) >>> 24) & 63;
}

const slotOf = (hash: number, shift: number) => 1 << ((hash >>> shift) & MASK);
const EMPTY: Branch<never> = { kind: 'branch', bitmap: 0, items: [] };

/** Two items of different hashes under one new branch at `shift` (deeper while their slots agree). */
function pair<V>(a: Leaf<V> | Collision<V>, b: Leaf<V>, shift: number): Branch<V> {
  const ia = (a.hash >>> shift) & MASK;
  const ib = (b.hash >>> shift) & MASK;
  if (ia === ib) return { kind: 'branch', bitmap: 1 << ia, items: [pair(a, b, shift + BITS)] };
  // Items in slot order (compared as indexes: the bit of slot 31 is a negative number).
  return { kind: 'branch', bitmap: (1 << ia) | (1 << ib), items: ia < ib ? [a, b] : [b, a] };
}

function withItem<V>(node: Branch<V>, at: number, item: Item<V>): Branch<V> {
  const items = node.items.slice();
  items[at] = item;
  return { kind: 'branch', bitmap: node.bitmap, items };
}

/** The item with `leaf` set in it, and whether that added a key. */
function setIn<V>(item: Item<V>, leaf: Leaf<V>, shift: number): [Item<V>, boolean] {
  switch (item.kind) {
    case 'leaf':
      if (item.key === leaf.key) return [item.value === leaf.value ? item : leaf, false];
      if (item.hash === leaf.hash)
        return [{ kind: 'collision', hash: leaf.hash, leaves: [item, leaf] }, true];
      return [pair(item, leaf, shift), true];
    case 'collision': {
      if (item.hash !== leaf.hash) return [pair(item, leaf, shift), true];
      const i = item.leaves.findIndex((l) => l.key === leaf.key);
      const leaves = item.leaves.slice();
      if (i < 0) leaves.push(leaf);
      else leaves[i] = leaf;
      return [{ kind: 'collision', hash: item.hash, leaves }, i < 0];
    }
    case 'branch': {
      const bit = slotOf(leaf.hash, shift);
      const at = popcount(item.bitmap & (bit - 1));
      if (!(item.bitmap & bit)) {
        const items = item.items.slice();
        items.splice(at, 0, leaf);
        return [{ kind: 'branch', bitmap: item.bitmap | bit, items }, true];
      }
      const [child, added] = setIn(item.items[at]!, leaf, shift + BITS);
      return [child === item.items[at] ? item : withItem(item, at, child), added];
    }
  }
}

/** The item without `key` (null when nothing is left), or the item itself when the key is not in it. */
function deleteIn<V>(item: Item<V>, hash: number, key: string, shift: number): Item<V> | null {
  switch (item.kind) {
    case 'leaf':
      return item.key === key ? null : item;
    case 'collision': {
      if (item.hash !== hash) return item;
      const leaves = item.leaves.filter((l) => l.key !== key);
      if (leaves.length === item.leaves.length) return item;
      return leaves.length === 1 ? leaves[0]! : { kind: 'collision', hash, leaves };
    }
    case 'branch': {
      const bit = slotOf(hash, shift);
      if (!(item.bitmap & bit)) return item;
      const at = popcount(item.bitmap & (bit - 1));
      const child = deleteIn(item.items[at]!, hash, key, shift + BITS);
      if (child === item.items[at]) return item;
      if (child) {
        // A branch left with one leaf or collision hands it up, so equal maps keep one shape.
        if (child.kind !== 'branch' && item.items.length === 1 && shift > 0) return child;
        return withItem(item, at, child);
      }
      if (item.items.length === 1) return shift > 0 ? null : EMPTY;
      const items = item.items.slice();
      items.splice(at, 1);
      const rest: Branch<V> = { kind: 'branch', bitmap: item.bitmap & ~bit, items };
      return shift > 0 && items.length === 1 && items[0]!.kind !== 'branch' ? items[0]! : rest;
    }
  }
}

/**
 * Every leaf under an item, pushed onto `out`. A plain recursion into one array: nested generators
 * (`yield*` per level) allocated a result object per leaf and level, and iterating a coach's calendar on
 * every booking made them a visible share of a booking's garbage.
 */
function leavesOf<V>(item: Item<V>, out: Leaf<V>[]): Leaf<V>[] {
  switch (item.kind) {
    case 'leaf':
      out.push(item);
      break;
    case 'collision':
      for (const l of item.leaves) out.push(l);
      break;
    case 'branch':
      for (const child of item.items) leavesOf(child, out);
  }
  return out;
}

export class PersistentMap<V> implements Iterable<[string, V]> {
  private constructor(
    private readonly root: Branch<V>,
    readonly size: number,
    private readonly hash: (key: string) => number,
  ) {}

  /** An empty map; `hash` only for tests (to make keys collide). */
  static empty<V>(hash: (key: string) => number = fnv1a): PersistentMap<V> {
    return new PersistentMap<V>(EMPTY, 0, hash);
  }

  static of<V>(entries: Iterable<[string, V]>): PersistentMap<V> {
    let map = PersistentMap.empty<V>();
    for (const [k, v] of entries) map = map.set(k, v);
    return map;
  }

  get(key: string): V | undefined {
    return this.leaf(key)?.value;
  }

  has(key: string): boolean {
    return this.leaf(key) !== undefined;
  }

  set(key: string, value: V): PersistentMap<V> {
    const leaf: Leaf<V> = { kind: 'leaf', hash: this.hash(key), key, value };
    const [root, added] = setIn(this.root, leaf, 0);
    return root === this.root
      ? this
      : new PersistentMap(root as Branch<V>, this.size + (added ? 1 : 0), this.hash);
  }

  delete(key: string): PersistentMap<V> {
    const root = deleteIn(this.root, this.hash(key), key, 0);
    return root === this.root
      ? this
      : new PersistentMap((root ?? EMPTY) as Branch<V>, this.size - 1, this.hash);
  }

  /** The entries, keys and values as arrays (the map is immutable: a snapshot is the map). */
  entries(): [string, V][] {
    return leavesOf(this.root, []).map((l) => [l.key, l.value]);
  }
  keys(): string[] {
    return leavesOf(this.root, []).map((l) => l.key);
  }
  values(): V[] {
    return leavesOf(this.root, []).map((l) => l.value);
  }
  [Symbol.iterator](): IterableIterator<[string, V]> {
    return this.entries()[Symbol.iterator]();
  }

  /** As a native Map serializes in audit answers: an object of its entries. */
  toJSON(): Record<string, V> {
    return Object.fromEntries(this.entries());
  }

  private leaf(key: string): Leaf<V> | undefined {
    const hash = this.hash(key);
    let item: Item<V> = this.root;
    for (let shift = 0; ; shift += BITS) {
      switch (item.kind) {
        case 'leaf':
          return item.key === key ? item : undefined;
        case 'collision':
          return item.hash === hash ? item.leaves.find((l) => l.key === key) : undefined;
        case 'branch': {
          const bit = slotOf(hash, shift);
          if (!(item.bitmap & bit)) return undefined;
          item = item.items[popcount(item.bitmap & (bit - 1))]!;
        }
      }
    }
  }
}

/** An immutable set of strings on a PersistentMap (see there); serializes as a list, as a native Set does. */
export class PersistentSet implements Iterable<string> {
  private constructor(private readonly map: PersistentMap<true>) {}

  static empty(): PersistentSet {
    return new PersistentSet(PersistentMap.empty<true>());
  }

  get size(): number {
    return this.map.size;
  }
  has(key: string): boolean {
    return this.map.has(key);
  }
  add(key: string): PersistentSet {
    const map = this.map.set(key, true);
    return map === this.map ? this : new PersistentSet(map);
  }
  delete(key: string): PersistentSet {
    const map = this.map.delete(key);
    return map === this.map ? this : new PersistentSet(map);
  }
  [Symbol.iterator](): IterableIterator<string> {
    return this.map.keys()[Symbol.iterator]();
  }
  toJSON(): string[] {
    return [...this];
  }
}
