import { parseSoakOptions } from '../../soak/options';

describe('npm run soak options', () => {
  it('defaults to 20 kills of the service on both stores', () => {
    expect(parseSoakOptions([], {})).toEqual({ kills: 20, stores: ['postgres', 'pglite'], crash: 'service' });
  });

  it('takes --name value and --name=value alike', () => {
    const expected = { kills: 3, stores: ['postgres'], crash: 'postgres' };
    expect(parseSoakOptions(['--kills', '3', '--stores', 'postgres', '--crash', 'postgres'], {})).toEqual(
      expected,
    );
    expect(parseSoakOptions(['--kills=3', '--stores=postgres', '--crash=postgres'], {})).toEqual(expected);
  });

  it('reads SOAK_KILLS, SOAK_STORES and SOAK_CRASH where the argument is not given', () => {
    expect(parseSoakOptions(['--kills=2'], { SOAK_KILLS: '9', SOAK_STORES: 'pglite' })).toEqual({
      kills: 2,
      stores: ['pglite'],
      crash: 'service',
    });
  });

  it('refuses what it would otherwise ignore or misread', () => {
    for (const [args, message] of [
      [['--kill', '3'], 'unknown argument --kill (--kills, --stores, --crash)'],
      [['3'], 'unknown argument 3 (--kills, --stores, --crash)'],
      [['--kills'], '--kills needs a value'],
      [['--kills='], '--kills needs a value'],
      [['--kills=three'], '--kills takes a whole number from 1, got three'],
      [['--kills=0'], '--kills takes a whole number from 1, got 0'],
      [['--stores=postgres,mysql'], '--stores takes postgres and/or pglite, got mysql'],
      [['--crash=eventstore'], '--crash is service or postgres, got eventstore'],
    ] as const)
      expect(() => parseSoakOptions([...args], {})).toThrow(new Error(message));
  });
});
