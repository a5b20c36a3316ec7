import { left, right } from 'fp-ts/Either';
import { assertNever, type Decider } from '../../src/decider';
import type { AddressEvent, AddressFields } from './events';

export interface SavedAddress extends AddressFields {
  id: string;
  isDefault: boolean;
  addedAt: string;
}

/** Oldest first, as appended. */
export interface AddressBook {
  addresses: SavedAddress[];
}

export type AddressCommand =
  | {
      type: 'AddAddress';
      userId: string;
      addressId: string;
      fields: AddressFields;
      makeDefault: boolean;
      now: string;
    }
  | { type: 'RemoveAddress'; userId: string; addressId: string; now: string }
  | { type: 'MakeDefaultAddress'; userId: string; addressId: string };

const notYours = { code: 'address_not_found', message: 'no such address of yours' } as const;

/** A user keeps at most this many saved addresses. */
export const MAX_ADDRESSES = 100;

export const addressBook: Decider<AddressCommand, AddressEvent, AddressBook> = {
  initialState: () => ({ addresses: [] }),

  evolve(state, event) {
    switch (event.type) {
      case 'AddressAdded': {
        const { addressId, fields, addedAt } = event.data;
        return { addresses: [...state.addresses, { id: addressId, ...fields, isDefault: false, addedAt }] };
      }
      case 'DefaultAddressChanged':
        return {
          addresses: state.addresses.map((a) => ({ ...a, isDefault: a.id === event.data.addressId })),
        };
      case 'AddressRemoved':
        return { addresses: state.addresses.filter((a) => a.id !== event.data.addressId) };
      default:
        return assertNever(event);
    }
  },

  decide(command, state) {
    switch (command.type) {
      case 'AddAddress': {
        if (state.addresses.some((a) => a.id === command.addressId))
          return left({ code: 'conflict', message: 'an address with this id already exists' });
        if (state.addresses.length >= MAX_ADDRESSES)
          return left({
            code: 'address_limit_reached',
            message: `a user keeps at most ${MAX_ADDRESSES} addresses`,
          });
        const current = state.addresses.find((a) => a.isDefault)?.id ?? null;
        const events: AddressEvent[] = [
          {
            type: 'AddressAdded',
            data: {
              addressId: command.addressId,
              userId: command.userId,
              fields: command.fields,
              addedAt: command.now,
            },
          },
        ];
        // Exactly one default, always: the first address, or any address while none is default, or on request.
        if (command.makeDefault || current === null)
          events.push({
            type: 'DefaultAddressChanged',
            data: { addressId: command.addressId, userId: command.userId, previousId: current },
          });
        return right(events);
      }
      case 'RemoveAddress': {
        const removed = state.addresses.find((a) => a.id === command.addressId);
        if (!removed) return left(notYours);
        const events: AddressEvent[] = [
          {
            type: 'AddressRemoved',
            data: { addressId: removed.id, userId: command.userId, removedAt: command.now },
          },
        ];
        // Still exactly one default while any address is left: the newest remaining one takes it.
        const heir = removed.isDefault
          ? state.addresses.filter((a) => a.id !== removed.id).at(-1)
          : undefined;
        if (heir)
          events.push({
            type: 'DefaultAddressChanged',
            data: { addressId: heir.id, userId: command.userId, previousId: removed.id },
          });
        return right(events);
      }
      case 'MakeDefaultAddress': {
        const chosen = state.addresses.find((a) => a.id === command.addressId);
        if (!chosen) return left(notYours);
        if (chosen.isDefault) return right([]);
        const current = state.addresses.find((a) => a.isDefault)?.id ?? null;
        return right([
          {
            type: 'DefaultAddressChanged',
            data: { addressId: chosen.id, userId: command.userId, previousId: current },
          },
        ]);
      }
      default:
        return assertNever(command);
    }
  },
};
