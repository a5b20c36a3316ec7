import { coalesced } from '../../src/db/coalesce';

/** A look-up that records each batch it is asked, answering `key * 10`. */
function recordingLookup(fail?: (keys: number[]) => boolean) {
  const batches: number[][] = [];
  const get = coalesced<number, number>(
    async (keys) => {
      batches.push(keys);
      if (fail?.(keys)) throw new Error(`refused ${keys.join(',')}`);
      return keys.map((k) => k * 10);
    },
    String,
    3,
  );
  return { batches, get };
}

describe('coalesced look-ups', () => {
  it('answers every look-up of one turn from one batch, each distinct key asked once', async () => {
    const { batches, get } = recordingLookup();
    const answers = await Promise.all([get(1), get(2), get(1), get(3)]);
    expect(answers).toEqual([10, 20, 10, 30]);
    expect(batches).toEqual([[1, 2, 3]]);
  });

  it('never joins a batch already sent: a later look-up goes in a batch of its own', async () => {
    const { batches, get } = recordingLookup();
    const first = get(1);
    await new Promise((r) => setImmediate(r)); // the first batch is sent
    const second = get(1);
    expect(await Promise.all([first, second])).toEqual([10, 10]);
    expect(batches).toEqual([[1], [1]]);
  });

  it('splits a turn with more keys than a batch holds into several batches', async () => {
    const { batches, get } = recordingLookup();
    expect(await Promise.all([1, 2, 3, 4, 5].map(get))).toEqual([10, 20, 30, 40, 50]);
    expect(batches).toEqual([
      [1, 2, 3],
      [4, 5],
    ]);
  });

  it('fails every caller of a failed batch, and only them', async () => {
    const { get } = recordingLookup((keys) => keys.includes(4));
    const results = await Promise.allSettled([1, 2, 3, 4, 5, 4].map(get));
    expect(results.map((r) => r.status)).toEqual([
      'fulfilled',
      'fulfilled',
      'fulfilled',
      'rejected',
      'rejected',
      'rejected',
    ]);
    expect((results[3] as PromiseRejectedResult).reason).toEqual(new Error('refused 4,5'));
  });

  it('fails its callers when the answers do not match the keys', async () => {
    const get = coalesced<number, number>(async () => [1], String);
    await expect(Promise.all([get(1), get(2)])).rejects.toThrow('one answer per key');
  });
});
