import type Router from '@koa/router';
import { addressCommands } from '../commands/addresses/routes';
import { addressQueries } from '../queries/addresses';
import type { AppDeps } from './deps';

/** Every command and query router of the API. */
export const routers = (deps: AppDeps): Router[] => [addressCommands(deps), addressQueries(deps)];
