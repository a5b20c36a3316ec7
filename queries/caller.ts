import type { Context } from 'koa';
import { principal, type Principal } from '../src/http/auth';

/** The caller of a public endpoint: null without a token; a token that is sent must be valid (else 401). */
export const optionalPrincipal = (ctx: Context): Principal | null =>
  ctx.get('authorization') ? principal(ctx) : null;
