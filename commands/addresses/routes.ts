import Router from '@koa/router';
import type { AppDeps } from '../../src/deps';
import { authenticated, currentPrincipal } from '../../src/http/auth';
import { runCommand } from '../../src/http/command';
import { idempotent } from '../../src/http/idempotency';
import { decode } from '../../src/http/validation';
import { toAddressOut } from '../../src/resources/address';
import { CreateAddressBody } from './codecs';
import { addressBook } from './decider';
import { addressStream } from './events';

export function addressCommands(deps: AppDeps): Router {
  const router = new Router();
  // 33. POST /api/v1/nav/addreses: answers the user's whole list, newest first, like GET.
  router.post('/api/v1/nav/addreses', authenticated(), idempotent(deps), async (ctx) => {
    const body = decode(CreateAddressBody, ctx.request.body, 'body');
    const { userId } = currentPrincipal(ctx);
    const { isDefault, ...given } = body;
    const fields = {
      zoom: 15,
      country: '',
      state: '',
      city: '',
      line1: '',
      line2: '',
      zip: '',
      details: '',
      ...given,
    };
    const { state } = await runCommand(
      deps,
      ctx,
      addressStream(userId),
      addressBook,
      {
        type: 'AddAddress',
        userId,
        addressId: deps.newId(),
        fields,
        makeDefault: isDefault === true,
        now: deps.clock().toISOString(),
      },
      ['addresses'],
    );
    // Built from the write model: exact even if the read model is still catching up.
    ctx.body = [...state.addresses].reverse().map(toAddressOut);
  });
  return router;
}
