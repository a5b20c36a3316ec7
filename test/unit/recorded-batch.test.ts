import { escapeLiteral } from 'pg';
import { mergeableInsert, quoteLiteral, recordingQueryable } from '../../src/db/recordedBatch';

describe('recorded batches (src/db/recordedBatch.ts)', () => {
  it('merges only plain INSERTs whose values cannot read anything', () => {
    const plain = `INSERT INTO notifications (id, user_id, unread, seq)
           VALUES ($1, $2, true, $3::numeric) ON CONFLICT (id) DO NOTHING`;
    expect(mergeableInsert(plain)).not.toBeNull();
    expect(mergeableInsert('INSERT INTO t (a, b) VALUES ($1, $2)')).not.toBeNull();
    for (const sql of [
      // a subquery sees the table as of the statement, not the rows merged before it
      `INSERT INTO sessions (id, payment_state) VALUES ($1, COALESCE((SELECT payment_state FROM sessions WHERE payment_id = $2 LIMIT 1), 'awaiting'))`,
      // DO UPDATE that reads the row it updates, or without a target of parameters
      `INSERT INTO email_deliveries (stream, attempts) VALUES ($1, $2) ON CONFLICT (stream) DO UPDATE SET status = 'sending', attempts = EXCLUDED.attempts`,
      `INSERT INTO t (id, n) VALUES ($1, $2) ON CONFLICT (id) DO UPDATE SET n = t.n + EXCLUDED.n`,
      `INSERT INTO t (id, n) VALUES ('k', $1) ON CONFLICT (id) DO UPDATE SET n = EXCLUDED.n`,
      `INSERT INTO t (id, n) VALUES ($1, $2) ON CONFLICT (id) DO UPDATE SET n = EXCLUDED.n WHERE t.n < 3`,
      'INSERT INTO t (a) VALUES ($1) RETURNING a',
      'INSERT INTO t (a) SELECT $1',
      'INSERT INTO t (a) VALUES (now())',
      'UPDATE t SET a = $1 WHERE b = $2',
    ])
      expect([sql, mergeableInsert(sql)]).toEqual([sql, null]);
  });

  it("quotes a parameter exactly as pg's escapeLiteral does", () => {
    const alphabet = ["'", '\\', 'a', 'é', '😀', '"', '\n', ' ', 'E', '\u0001'];
    let seed = 7;
    const random = () => (seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31) / 2 ** 31;
    const cases = ['', "'", '\\', "''\\\\'", '{"k":"it\'s \\"quoted\\""}', 'plain'];
    for (let i = 0; i < 2_000; i++)
      cases.push(
        Array.from(
          { length: Math.floor(random() * 12) },
          () => alphabet[Math.floor(random() * alphabet.length)],
        ).join(''),
      );
    for (const text of cases) expect([text, quoteLiteral(text)]).toEqual([text, escapeLiteral(text)]);
  });

  it('writes a run of the same INSERT as one multi-row INSERT, in order, and the rest as EXECUTEs', async () => {
    const { tx, take } = recordingQueryable();
    const insert = 'INSERT INTO t (a, b, c) VALUES ($1, $2::jsonb, true) ON CONFLICT DO NOTHING';
    const update = 'UPDATE t SET b = $2 WHERE a = $1';
    await tx.query(insert, ['x', '{"k":"it\'s"}']);
    await tx.query(insert, ['y', null]);
    await tx.query(update, ['x', 1]);
    await tx.query(insert, ['z', '[]']);
    const sql = take().split(';\n');
    expect(sql.filter((s) => !/^(SET|PREPARE|DEALLOCATE)/.test(s))).toEqual([
      `INSERT INTO t (a, b, c) VALUES ('x', '{"k":"it''s"}'::jsonb, true), ('y', NULL::jsonb, true) ON CONFLICT DO NOTHING`,
      expect.stringMatching(/^EXECUTE rebuild_\d+_0\('x', '1'\)$/),
      expect.stringMatching(/^EXECUTE rebuild_\d+_1\('z', '\[\]'\)$/),
    ]);
    expect(sql.filter((s) => s.startsWith('PREPARE'))).toHaveLength(2);
    expect(take()).toBe('');
  });

  it('merges an upsert (DO UPDATE SET col = EXCLUDED.col) only while its rows have different keys', async () => {
    const upsert = `INSERT INTO user_profiles (id, type, profile) VALUES ($1, $2, $3::jsonb)
           ON CONFLICT (id) DO UPDATE SET type = EXCLUDED.type, profile = EXCLUDED.profile`;
    expect(mergeableInsert(upsert)?.key?.(['a', 'client', '{}'])).toBe('["a"]');
    const { tx, take } = recordingQueryable();
    for (const [id, n] of [
      ['a', 1],
      ['b', 2],
      ['a', 3],
      ['c', 4],
    ] as const)
      await tx.query(upsert, [id, 'client', JSON.stringify({ n })]);
    const rows = take()
      .split(';\n')
      .filter((x) => x.startsWith('INSERT'))
      .map((x) => x.match(/\('\w'/g));
    // The second 'a' starts a new statement, after the first one has run.
    expect(rows).toEqual([
      ["('a'", "('b'"],
      ["('a'", "('c'"],
    ]);
  });
});
