import { marketplace } from './marketplace';
import { startTestSystem, type TestSystem } from './system';

export type Marketplace = ReturnType<typeof marketplace>;

/**
 * The usual API test file: one test system on a settable clock, and the marketplace helper, started before
 * the file's tests and closed after them. The clock is back at `start` before each test; a test moves it
 * with `clock.set(iso)`.
 */
export function apiSuite(
  start: string,
  ready: (t: TestSystem, m: Marketplace) => void,
  /** Configuration the file's system starts with (e.g. a feature the test systems leave off). */
  env?: NodeJS.ProcessEnv,
) {
  const clock = {
    now: new Date(start),
    set(iso: string) {
      clock.now = new Date(iso);
    },
  };
  let system: TestSystem | undefined;
  beforeAll(async () => {
    system = await startTestSystem({ clock: () => clock.now, ...(env ? { env } : {}) });
    ready(system, marketplace(system));
  });
  afterAll(() => system?.close());
  beforeEach(() => clock.set(start));
  return clock;
}
