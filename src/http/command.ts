import type { Context } from 'koa';
import { ConcurrencyConflictError, handleCommand } from '../commandHandler';
import type { Decider, DomainError, DomainEvent } from '../decider';
import type { AppDeps } from '../deps';
import type { EventMetadata } from '../eventstore/types';
import type { Principal } from './auth';
import { HttpError, ValidationError, busy } from './errors';

/**
 * Status of a domain error: `*_not_found` is 404, `forbidden` 403, `validation` 422 in the same
 * `{detail: [{loc, msg, type}]}` shape as a body the codecs refuse, every other refusal a 409.
 */
export function domainErrorToHttp(e: DomainError): HttpError | ValidationError {
  if (e.code.endsWith('_not_found')) return new HttpError(404, e.code, e.message);
  if (e.code === 'forbidden') return new HttpError(403, e.code, e.message);
  if (e.code === 'validation')
    return new ValidationError(
      (e.locs ?? [['body']]).map((loc) => ({ loc, msg: e.message, type: e.type ?? 'value_error' })),
    );
  return new HttpError(409, e.code, e.message);
}

/** Who did it and why, recorded with every event so an auditor can answer "who changed it". */
export function metadataOf(ctx: Context): EventMetadata {
  const p = ctx.state.principal as Principal | undefined;
  const requestId = ctx.state.requestId as string | undefined;
  const correlation = ctx.get('x-correlation-id');
  return {
    requestId,
    correlationId: /^[\w-]{1,100}$/.test(correlation) ? correlation : requestId,
    // The role the request acts in: a token holding auditor and admin approves a service as admin.
    ...(p ? { actor: { userId: p.userId, role: p.acting ?? p.roles[0] ?? 'user' } } : {}),
    // A keyed request's events are found again by a run of it after a crash (see src/http/idempotency.ts).
    ...(typeof ctx.state.idempotencyTag === 'string' ? { idempotencyTag: ctx.state.idempotencyTag } : {}),
  };
}

/**
 * Runs a command from an HTTP request: decides and appends, maps refusals to their status, and waits
 * (bounded) for the named projections so the caller's next GET sees its write.
 */
export async function runCommand<C, E extends DomainEvent, S>(
  deps: AppDeps,
  ctx: Context,
  streamName: string,
  decider: Decider<C, E, S>,
  command: C,
  waitFor: string[],
  /** What the events record: the request's own (`metadataOf`) unless given (a follow-up names its cause). */
  metadata: EventMetadata = metadataOf(ctx),
): Promise<{ events: E[]; eventIds: string[]; state: S }> {
  let outcome;
  try {
    outcome = await handleCommand(deps.store, streamName, decider, command, metadata);
  } catch (err) {
    if (err instanceof ConcurrencyConflictError)
      throw busy('the resource changed concurrently; retry the request');
    throw err;
  }
  if (!outcome.ok) throw domainErrorToHttp(outcome.error);
  // A command that decided nothing (done already, e.g. by a process manager a moment before) waits for the
  // state it saw, so the caller's next read shows it all the same.
  const position = outcome.position ?? outcome.observed;
  if (position && waitFor.length) {
    const caughtUp = await deps.runner.waitFor(position, deps.config.consistencyWaitMs, waitFor);
    if (!caughtUp) deps.log.warn('read model lagging behind a command', { stream: streamName, waitFor });
  }
  return { events: outcome.events, eventIds: outcome.eventIds, state: outcome.state };
}
