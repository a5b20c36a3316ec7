import { isLeft, isRight } from 'fp-ts/Either';
import { addressBook, MAX_ADDRESSES, type AddressCommand } from '../../commands/addresses/decider';
import type { AddressEvent, AddressFields } from '../../commands/addresses/events';

const user = '0b0e7a52-1c4c-4f3e-9d7e-5a2f8f6a0c11';
const fields: AddressFields = {
  lat: 52.52,
  lng: 13.405,
  zoom: 15,
  name: 'Home',
  address: 'Alexanderplatz 1',
  country: 'DE',
  state: 'BE',
  city: 'Berlin',
  line1: 'Alexanderplatz 1',
  line2: '',
  zip: '10178',
  details: '',
};
const add = (addressId: string, makeDefault = false): AddressCommand => ({
  type: 'AddAddress',
  userId: user,
  addressId,
  fields,
  makeDefault,
  now: '2026-11-22T10:00:00.000Z',
});
const added = (addressId: string): AddressEvent => ({
  type: 'AddressAdded',
  data: { addressId, userId: user, fields, addedAt: '2026-11-22T09:00:00.000Z' },
});
const defaulted = (addressId: string, previousId: string | null): AddressEvent => ({
  type: 'DefaultAddressChanged',
  data: { addressId, userId: user, previousId },
});

/** given past events, when a command, then new events (or a refusal). */
const given = (events: AddressEvent[]) => ({
  when: (command: AddressCommand) =>
    addressBook.decide(command, events.reduce(addressBook.evolve, addressBook.initialState())),
});

describe('address book decider', () => {
  it('makes the first address the default', () => {
    const result = given([]).when(add('a1'));
    expect(result).toEqual({
      _tag: 'Right',
      right: [
        {
          type: 'AddressAdded',
          data: { addressId: 'a1', userId: user, fields, addedAt: '2026-11-22T10:00:00.000Z' },
        },
        defaulted('a1', null),
      ],
    });
  });

  it('keeps the existing default when a later address does not ask for it', () => {
    const result = given([added('a1'), defaulted('a1', null)]).when(add('a2'));
    expect(isRight(result) && result.right.map((e) => e.type)).toEqual(['AddressAdded']);
  });

  it('moves the default when a new address asks for it, naming the previous one', () => {
    const result = given([added('a1'), defaulted('a1', null)]).when(add('a2', true));
    expect(isRight(result) && result.right[1]).toEqual(defaulted('a2', 'a1'));
  });

  it('makes a new address the default whenever the user has none', () => {
    const result = given([added('a1')]).when(add('a2'));
    expect(isRight(result) && result.right[1]).toEqual(defaulted('a2', null));
  });

  it('refuses an id that already exists', () => {
    const result = given([added('a1'), defaulted('a1', null)]).when(add('a1'));
    expect(isLeft(result) && result.left.code).toBe('conflict');
  });

  it(`refuses more than ${MAX_ADDRESSES} addresses`, () => {
    const history = Array.from({ length: MAX_ADDRESSES }, (_, i) => added(`a${i}`));
    const result = given(history).when(add('one-too-many'));
    expect(isLeft(result) && result.left.code).toBe('address_limit_reached');
  });

  it('evolves to exactly one default after any sequence of moves', () => {
    const state = [
      added('a1'),
      defaulted('a1', null),
      added('a2'),
      defaulted('a2', 'a1'),
      added('a3'),
    ].reduce(addressBook.evolve, addressBook.initialState());
    expect(state.addresses.filter((a) => a.isDefault).map((a) => a.id)).toEqual(['a2']);
  });

  const removeCmd = (addressId: string): AddressCommand => ({
    type: 'RemoveAddress',
    userId: user,
    addressId,
    now: '2026-11-29T10:00:00.000Z',
  });
  const removed = (addressId: string): AddressEvent => ({
    type: 'AddressRemoved',
    data: { addressId, userId: user, removedAt: '2026-11-29T10:00:00.000Z' },
  });
  const makeDefault = (addressId: string): AddressCommand => ({
    type: 'MakeDefaultAddress',
    userId: user,
    addressId,
  });
  const three = [added('a1'), defaulted('a1', null), added('a2'), added('a3')];

  it('removes an address that is not the default, and nothing else', () => {
    expect(given(three).when(removeCmd('a2'))).toEqual({ _tag: 'Right', right: [removed('a2')] });
  });

  it('passes a removed default to the newest address left', () => {
    expect(given(three).when(removeCmd('a1'))).toEqual({
      _tag: 'Right',
      right: [removed('a1'), defaulted('a3', 'a1')],
    });
    // The newest left, not the newest ever: a3 was removed before.
    const result = given([...three, removed('a3')]).when(removeCmd('a1'));
    expect(isRight(result) && result.right[1]).toEqual(defaulted('a2', 'a1'));
  });

  it('removes the last address without naming a default', () => {
    expect(given([added('a1'), defaulted('a1', null)]).when(removeCmd('a1'))).toEqual({
      _tag: 'Right',
      right: [removed('a1')],
    });
  });

  it('refuses to remove or choose an address the user does not have (unknown or removed)', () => {
    for (const command of [removeCmd('zz'), removeCmd('a2'), makeDefault('a2')]) {
      const result = given([...three, removed('a2')]).when(command);
      expect(isLeft(result) && result.left.code).toBe('address_not_found');
    }
  });

  it('moves the default on request, naming the previous one; the default it has already is no change', () => {
    expect(given(three).when(makeDefault('a2'))).toEqual({ _tag: 'Right', right: [defaulted('a2', 'a1')] });
    expect(given(three).when(makeDefault('a1'))).toEqual({ _tag: 'Right', right: [] });
  });

  it('evolves a removal out of the book and frees its place among the ' + MAX_ADDRESSES, () => {
    const full = Array.from({ length: MAX_ADDRESSES }, (_, i) => added(`a${i}`));
    const result = given([...full, removed('a7')]).when(add('one-more'));
    expect(isRight(result)).toBe(true);
  });
});
