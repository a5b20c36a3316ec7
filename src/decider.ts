import type { Either } from 'fp-ts/Either';

/** A domain event as deciders see it: the stored event's type and data. */
export interface DomainEvent<T extends string = string, D = unknown> {
  type: T;
  data: D;
}

/** A business rule said no. The HTTP layer maps `code` to a status (see src/http/domainErrors.ts). */
export interface DomainError {
  code: string;
  message: string;
  /**
   * For `validation`: where in the request each failing part is (FastAPI `loc`s, e.g. `["body", "slots"]`;
   * `["body"]` when unset) and the `type` of the detail entries (`value_error` when unset).
   */
  locs?: (string | number)[][];
  type?: string;
}

/** Pure write-side logic of one aggregate: no I/O, clock and ids come in through the command. */
export interface Decider<C, E extends DomainEvent, S> {
  initialState: () => S;
  evolve: (state: S, event: E) => S;
  decide: (command: C, state: S) => Either<DomainError, E[]>;
}

export const fold = <E extends DomainEvent, S>(
  d: Pick<Decider<never, E, S>, 'initialState' | 'evolve'>,
  events: E[],
): S => events.reduce(d.evolve, d.initialState());

/** For exhaustive switches: a new union member that is not handled fails to compile. */
export function assertNever(x: never): never {
  throw new Error(`unhandled case: ${JSON.stringify(x)}`);
}
