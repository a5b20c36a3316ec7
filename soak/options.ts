/** The soak's options from its arguments and environment; a mistake is refused, not silently defaulted. */
export interface SoakOptions {
  kills: number;
  stores: ('postgres' | 'pglite')[];
  crash: 'service' | 'postgres';
}

const NAMES = ['kills', 'stores', 'crash'] as const;
type Name = (typeof NAMES)[number];

/** `--name value` and `--name=value`; SOAK_KILLS, SOAK_STORES and SOAK_CRASH where an option is not given. */
export function parseSoakOptions(args: string[], env: NodeJS.ProcessEnv): SoakOptions {
  const given: Partial<Record<Name, string>> = {};
  for (let i = 0; i < args.length; i++) {
    const match = /^--([^=]+)(?:=(.*))?$/.exec(args[i]!);
    const name = match?.[1] as Name | undefined;
    if (!match || !NAMES.includes(name!))
      throw new Error(`unknown argument ${args[i]} (--kills, --stores, --crash)`);
    const value = match[2] ?? args[++i];
    if (value === undefined || value === '') throw new Error(`--${name} needs a value`);
    given[name!] = value;
  }
  const raw = (name: Name, fallback: string) => given[name] ?? env[`SOAK_${name.toUpperCase()}`] ?? fallback;

  const kills = Number(raw('kills', '20'));
  if (!Number.isInteger(kills) || kills < 1)
    throw new Error(`--kills takes a whole number from 1, got ${raw('kills', '')}`);
  const stores = raw('stores', 'postgres,pglite').split(',');
  for (const s of stores)
    if (s !== 'postgres' && s !== 'pglite')
      throw new Error(`--stores takes postgres and/or pglite, got ${s}`);
  const crash = raw('crash', 'service');
  if (crash !== 'service' && crash !== 'postgres')
    throw new Error(`--crash is service or postgres, got ${crash}`);
  return { kills, stores: stores as SoakOptions['stores'], crash };
}
