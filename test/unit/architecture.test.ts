import { readFileSync, readdirSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';

/**
 * The layering the design promises, checked on the sources themselves: the write side imports nothing
 * from the read side's `queries/`, and no module imports itself through a cycle.
 */
const ROOT = resolve(__dirname, '../..');
const LAYERS = ['src', 'commands', 'queries', 'projections'];

function sources(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return sources(path);
    return path.endsWith('.ts') && !path.endsWith('.d.ts') ? [path] : [];
  });
}

const files = LAYERS.flatMap((l) => sources(join(ROOT, l)));
const known = new Set(files);
const rel = (path: string) => relative(ROOT, path).replace(/\\/g, '/');

/** Project files a file imports (static `import`/`export … from`, type-only ones included). */
function importsOf(file: string): string[] {
  const text = readFileSync(file, 'utf8');
  const specifiers = [...text.matchAll(/^\s*(?:import|export)\b[^'"]*?from\s+'([^']+)'/gm)].map((m) => m[1]!);
  return specifiers
    .filter((s) => s.startsWith('.'))
    .map((s) => resolve(dirname(file), s))
    .flatMap((p) => [`${p}.ts`, join(p, 'index.ts')].filter((c) => known.has(c)).slice(0, 1));
}

const graph = new Map(files.map((f) => [f, importsOf(f)]));

/** Strongly connected components with more than one file (or a file importing itself): the cycles. */
function cycles(): string[][] {
  let next = 0;
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const found: string[][] = [];
  const visit = (v: string) => {
    index.set(v, next);
    low.set(v, next++);
    stack.push(v);
    onStack.add(v);
    for (const w of graph.get(v) ?? []) {
      if (!index.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (onStack.has(w)) low.set(v, Math.min(low.get(v)!, index.get(w)!));
    }
    if (low.get(v) === index.get(v)) {
      const scc: string[] = [];
      let w: string;
      do {
        w = stack.pop()!;
        onStack.delete(w);
        scc.push(rel(w));
      } while (w !== v);
      if (scc.length > 1 || (graph.get(v) ?? []).includes(v)) found.push(scc.sort());
    }
  };
  for (const f of files) if (!index.has(f)) visit(f);
  return found;
}

/**
 * The only commands that read a read model, and why that is no decision: each builds a reply from it.
 * A new entry here needs the same kind of reason (see docs/architecture.md, "What decides where").
 */
const READ_MODEL_FOR_REPLIES_ONLY = [
  // The admin's e-mail retry decides on the delivery's ledger stream and answers the delivery's row.
  'commands/delivery/routes.ts -> src/readModels/emailDeliveries.ts',
  // Endpoint 14 answers UserProfileOut, whose sessionCount and totalPayment are read-model totals.
  'commands/users/media.ts -> src/readModels/payments.ts',
  'commands/users/media.ts -> src/readModels/users.ts',
];

describe('module layering', () => {
  it('finds the sources and their imports (the checks below are not vacuous)', () => {
    expect(files.length).toBeGreaterThan(50);
    const booking = graph.get(join(ROOT, 'commands/booking/routes.ts'))!.map(rel);
    expect(booking).toContain('commands/booking/decider.ts');
    expect(booking).toContain('src/resources/session.ts');
  });

  it('the write side (commands/) imports nothing from queries/', () => {
    const offending = files
      .filter((f) => rel(f).startsWith('commands/'))
      .flatMap((f) =>
        graph
          .get(f)!
          .filter((to) => rel(to).startsWith('queries/'))
          .map((to) => `${rel(f)} -> ${rel(to)}`),
      );
    expect(offending).toEqual([]);
  });

  it('the write side reads read models only to shape replies (the listed files), never to decide', () => {
    const readers = files
      .filter((f) => rel(f).startsWith('commands/'))
      .flatMap((f) =>
        graph
          .get(f)!
          .filter((to) => rel(to).startsWith('src/readModels/'))
          .map((to) => `${rel(f)} -> ${rel(to)}`),
      );
    expect(readers.sort()).toEqual(READ_MODEL_FOR_REPLIES_ONLY);
  });

  it('has no import cycles', () => {
    expect(cycles()).toEqual([]);
  });
});
