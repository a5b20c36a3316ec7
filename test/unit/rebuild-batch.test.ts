import { mergeableInsert, recordingQueryable } from '../../src/rebuild/batch';

describe('rebuild batches (src/rebuild/batch.ts)', () => {
  it('merges only plain INSERTs whose values cannot read anything', () => {
    const plain = `INSERT INTO notifications (id, user_id, unread, seq)
           VALUES ($1, $2, true, $3::numeric) ON CONFLICT (id) DO NOTHING`;
    expect(mergeableInsert(plain)).not.toBeNull();
    expect(mergeableInsert('INSERT INTO t (a, b) VALUES ($1, $2)')).not.toBeNull();
    for (const sql of [
      // a subquery sees the table as of the statement, not the rows merged before it
      `INSERT INTO sessions (id, payment_state) VALUES ($1, COALESCE((SELECT payment_state FROM sessions WHERE payment_id = $2 LIMIT 1), 'awaiting'))`,
      // DO UPDATE refuses to touch a row twice in one statement
      `INSERT INTO user_profiles (id, profile) VALUES ($1, $2::jsonb) ON CONFLICT (id) DO UPDATE SET profile = EXCLUDED.profile`,
      'INSERT INTO t (a) VALUES ($1) RETURNING a',
      'INSERT INTO t (a) SELECT $1',
      'INSERT INTO t (a) VALUES (now())',
      'UPDATE t SET a = $1 WHERE b = $2',
    ])
      expect([sql, mergeableInsert(sql)]).toEqual([sql, null]);
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
});
