/**
 * A bounded LRU of computed answers, per process, each valid under one version token (see
 * src/readModels/readVersions.ts) and for a span of time: the answer is served only to a reader that read
 * the same token and whose clock is in [computedAt, validUntil). Bounded by entries and by approximate
 * bytes (the caller's measure of each value, plus its key and token); the least recently used go first.
 */
export interface ReadCacheBounds {
  maxEntries: number;
  maxBytes: number;
}

interface Entry<V> {
  token: string;
  value: V;
  bytes: number;
  computedAt: number;
  validUntil: number;
}

export interface ReadCacheStats {
  entries: number;
  bytes: number;
  hits: number;
  misses: number;
  evictions: number;
}

export class ReadCache<V> {
  private readonly entries = new Map<string, Entry<V>>();
  private bytes = 0;
  private hits = 0;
  private misses = 0;
  private evictions = 0;

  constructor(private readonly bounds: ReadCacheBounds) {}

  /**
   * The value cached under `key` if it was computed under `token` (or the token `token(value)` names, when
   * the scopes depend on the value) and is still true at `now`.
   */
  get(key: string, token: string | undefined | ((v: V) => string | undefined), now: number): V | undefined {
    const e = this.entries.get(key);
    const want = typeof token === 'function' && e ? token(e.value) : token;
    if (!e || want === undefined || e.token !== want || now < e.computedAt || now >= e.validUntil) {
      this.misses++;
      return undefined;
    }
    this.hits++;
    // Most recently used last: delete and insert again.
    this.entries.delete(key);
    this.entries.set(key, e);
    return e.value;
  }

  /** The value under `key` whatever its token or time (for what never changes in it), not counted. */
  peek(key: string): V | undefined {
    return this.entries.get(key)?.value;
  }

  /**
   * Stores an answer computed at `computedAt` under `token`, true until `validUntil` (exclusive); `size`:
   * its bytes (buffers) or characters (strings, counted 2 bytes each), for the byte bound.
   */
  set(key: string, token: string, value: V, size: number, computedAt: number, validUntil: number): void {
    const bytes = size + 2 * (key.length + token.length) + 64;
    this.drop(key);
    if (bytes > this.bounds.maxBytes || validUntil <= computedAt || this.bounds.maxEntries < 1) return;
    this.entries.set(key, { token, value, bytes, computedAt, validUntil });
    this.bytes += bytes;
    while (this.entries.size > this.bounds.maxEntries || this.bytes > this.bounds.maxBytes) {
      const oldest = this.entries.keys().next().value as string;
      this.drop(oldest);
      this.evictions++;
    }
  }

  stats(): ReadCacheStats {
    return {
      entries: this.entries.size,
      bytes: this.bytes,
      hits: this.hits,
      misses: this.misses,
      evictions: this.evictions,
    };
  }

  private drop(key: string) {
    const e = this.entries.get(key);
    if (!e) return;
    this.entries.delete(key);
    this.bytes -= e.bytes;
  }
}

/**
 * A JSON answer encoded once, with one span (`placeholder`, e.g. `null`) where a per-caller value goes:
 * `fill` gives the answer for a value, the stored bytes themselves when the value is the placeholder.
 */
export interface HoledJson {
  bytes: Buffer;
  /** Where the placeholder starts in `bytes`, and its length. */
  at: number;
  length: number;
  placeholder: string;
}

/**
 * The text's bytes in memory of their own: a small `Buffer.from` is a slice of a shared 8 KB block, which a
 * cached slice keeps alive whole, so the cache's byte bound would count a fraction of what it holds.
 */
export function ownBuffer(text: string): Buffer {
  const bytes = Buffer.allocUnsafeSlow(Buffer.byteLength(text));
  bytes.write(text);
  return bytes;
}

/**
 * `JSON.stringify(body)` with the value of key `hole` (in `body`'s key order) replaced by `placeholder`,
 * encoded once so a cached answer is sent without encoding it again.
 */
export function holedJson(body: Record<string, unknown>, hole: string, placeholder: string): HoledJson {
  const before: Record<string, unknown> = {};
  const after: Record<string, unknown> = {};
  let seen = false;
  for (const [k, v] of Object.entries(body)) {
    if (k === hole) seen = true;
    else if (seen) after[k] = v;
    else before[k] = v;
  }
  const open = JSON.stringify(before).slice(0, -1);
  const close = JSON.stringify(after).slice(1);
  const head = `${open}${open.length > 1 ? ',' : ''}${JSON.stringify(hole)}:`;
  const tail = close === '}' ? '}' : `,${close}`;
  return {
    bytes: ownBuffer(head + placeholder + tail),
    at: Buffer.byteLength(head),
    length: Buffer.byteLength(placeholder),
    placeholder,
  };
}

/** The answer with `value` (JSON text) in the hole. */
export function fillHole(h: HoledJson, value: string): Buffer {
  if (value === h.placeholder) return h.bytes;
  return Buffer.concat([h.bytes.subarray(0, h.at), Buffer.from(value), h.bytes.subarray(h.at + h.length)]);
}
