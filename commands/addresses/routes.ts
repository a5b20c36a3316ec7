import Router from '@koa/router';
import type { AppDeps } from '../../src/deps';
import { authenticated, currentPrincipal } from '../../src/http/auth';
import { runCommand } from '../../src/http/command';
import { idempotent } from '../../src/http/idempotency';
import { decode } from '../../src/http/validation';
import { toAddressOut } from '../../src/resources/address';
import type Koa from 'koa';
import { AddressIdPath, CreateAddressBody } from './codecs';
import { addressBook, type AddressCommand } from './decider';
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
    await changeAddresses(deps, ctx, {
      type: 'AddAddress',
      userId,
      addressId: deps.newId(),
      fields,
      makeDefault: isDefault === true,
      now: deps.clock().toISOString(),
    });
  });

  // Added: removes one of the caller's addresses; when it was the default, the newest one left takes it.
  router.delete('/api/v1/nav/addreses/:address_id', authenticated(), idempotent(deps), async (ctx) => {
    const addressId = decode(AddressIdPath, ctx.params, 'path').address_id.toLowerCase();
    const { userId } = currentPrincipal(ctx);
    await changeAddresses(deps, ctx, {
      type: 'RemoveAddress',
      userId,
      addressId,
      now: deps.clock().toISOString(),
    });
  });

  // Added: makes one of the caller's addresses the default (the interface document only sets it on creation).
  router.put('/api/v1/nav/addreses/:address_id/default', authenticated(), async (ctx) => {
    const addressId = decode(AddressIdPath, ctx.params, 'path').address_id.toLowerCase();
    const { userId } = currentPrincipal(ctx);
    await changeAddresses(deps, ctx, { type: 'MakeDefaultAddress', userId, addressId });
  });
  return router;
}

/** Decides `command` on the caller's address book and answers the whole list, newest first, as GET does. */
async function changeAddresses(deps: AppDeps, ctx: Koa.Context, command: AddressCommand) {
  const { state } = await runCommand(deps, ctx, addressStream(command.userId), addressBook, command, [
    'addresses',
  ]);
  // Built from the write model: exact even if the read model is still catching up.
  ctx.body = [...state.addresses].reverse().map(toAddressOut);
}
