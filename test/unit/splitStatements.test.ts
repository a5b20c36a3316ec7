import { splitStatements } from '../../src/db/migrate';
import { migrations } from '../../src/db/migrations';

describe('a migration split into statements', () => {
  it('splits at semicolons that end a line', () => {
    expect(splitStatements('CREATE TABLE a (x int);\nCREATE INDEX ON a (x);  \n')).toEqual([
      'CREATE TABLE a (x int)',
      '\nCREATE INDEX ON a (x)',
    ]);
  });

  it('keeps a dollar-quoted function body whole, semicolons and all', () => {
    const fn = `CREATE FUNCTION f() RETURNS void LANGUAGE plpgsql AS $$
BEGIN
  PERFORM 1;
END $$;
SELECT f();`;
    const parts = splitStatements(fn);
    expect(parts).toHaveLength(2);
    expect(parts[0]).toContain('PERFORM 1;\nEND $$');
    expect(parts[1]!.trim()).toBe('SELECT f()');
  });

  it('leaves semicolons inside a line alone', () => {
    expect(splitStatements("INSERT INTO t VALUES ('a;b');")).toEqual(["INSERT INTO t VALUES ('a;b')"]);
  });

  it('gives every migration its own version (a repeated one would be taken for applied and skipped)', () => {
    const versions = migrations.map((m) => m.version);
    expect(versions.filter((v, i) => versions.indexOf(v) !== i)).toEqual([]);
  });

  it('gives every released migration the statements it had before, function bodies whole', () => {
    for (const m of migrations) {
      const parts = splitStatements(m.sql);
      if (!m.sql.includes('$$')) expect(parts).toEqual(m.sql.split(/;\s*$/m).filter((s) => s.trim()));
      else for (const p of parts) expect(p.split('$$').length % 2).toBe(1);
    }
  });
});
