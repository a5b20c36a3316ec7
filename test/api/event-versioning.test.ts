import fs from 'node:fs';
import path from 'node:path';
import { randomUUID } from 'node:crypto';
import type { Upcaster } from '../../src/eventstore/upcasting';
import { startTestSystem, type TestSystem } from '../support/system';

/**
 * A stored version-1 event of a real type (AddressAdded, fixture test/fixtures/address-added.v1.json) whose
 * shape changed: version 2 (today's shape) moved the fields under `fields` and renamed `createdAt` to
 * `addedAt`. With the upcaster registered, the decider, the projection and the audit all read version 2.
 */
const addressAddedV1toV2: Upcaster = {
  type: 'AddressAdded',
  from: 1,
  up: (data) => {
    const { address, createdAt, ...rest } = data as { address: unknown; createdAt: string };
    return { data: { ...rest, fields: address, addedAt: createdAt } };
  },
};

let t: TestSystem;
beforeAll(async () => {
  t = await startTestSystem({ upcasters: [addressAddedV1toV2] });
}, 120_000);
afterAll(() => t.close());

it('reads a stored v1 event as the current version in decider folds, projections and audits', async () => {
  const userId = randomUUID();
  const token = t.token(userId, ['client']);
  const fixture = JSON.parse(
    fs
      .readFileSync(path.join(__dirname, '../fixtures/address-added.v1.json'), 'utf8')
      .replace('USER_ID', userId),
  );
  // Stored as it was: an explicit schemaVersion is kept by the versioning wrapper.
  await t.system.deps.store.append(`addresses-${userId}`, [
    { type: fixture.type, data: fixture.data, metadata: fixture.metadata },
  ]);
  expect(await t.system.runner.waitFor(await t.system.deps.store.headPosition(), 5000)).toBe(true);

  // Projection: the read model has the v1 address.
  const listed = await t.request('GET', '/api/v1/nav/addreses', { token });
  expect(listed.status).toBe(200);
  expect(listed.body).toEqual([
    expect.objectContaining({ id: fixture.data.addressId, name: 'Home (v1)', lat: 52.52 }),
  ]);

  // Decider: folding the stream with the v1 event in it, a second address becomes the default.
  const added = await t.request('POST', '/api/v1/nav/addreses', {
    token,
    body: { lat: 48.1, lng: 11.6, name: 'Office', address: 'Marienplatz 8', isDefault: true },
  });
  expect(added.status).toBe(200);
  const after = await t.request('GET', '/api/v1/nav/addreses', { token });
  expect(after.body.map((a: { name: string; isDefault: boolean }) => [a.name, a.isDefault]).sort()).toEqual([
    ['Home (v1)', false],
    ['Office', true],
  ]);

  // Audit: the v1 event in today's shape, and the new one stamped with today's version.
  const audit = await t.request('GET', `/api/v1/audit/streams/addresses-${userId}`, {
    token: t.token(randomUUID(), ['auditor']),
  });
  const [first, ...rest] = audit.body.events;
  expect(first.data).toEqual({
    addressId: fixture.data.addressId,
    userId,
    fields: fixture.data.address,
    addedAt: '2025-01-01T10:00:00.000Z',
  });
  expect(first.metadata.schemaVersion).toBe(2);
  expect(rest.find((e: { type: string }) => e.type === 'AddressAdded').metadata.schemaVersion).toBe(2);
  expect(audit.body.state.addresses).toHaveLength(2);
  // The export matches a type by the name and shape answered (the v1 event among them), exactly as spelt.
  const exported = async (type: string) => {
    const res = await fetch(
      `${t.baseUrl}/api/v1/audit/events?stream_prefix=addresses-${userId}&type=${type}`,
      { headers: { authorization: `Bearer ${t.token(randomUUID(), ['auditor'])}` } },
    );
    expect(res.status).toBe(200);
    return (await res.text())
      .split('\n')
      .filter(Boolean)
      .map((l) => JSON.parse(l));
  };
  const lines = await exported('AddressAdded');
  expect(lines.map((l) => [l.type, l.metadata.schemaVersion])).toEqual([
    ['AddressAdded', 2],
    ['AddressAdded', 2],
  ]);
  expect(lines[0].data.fields).toEqual(fixture.data.address);
  expect(await exported('addressadded')).toEqual([]);
  // Stored untouched: upcasting happens on read only.
  if (t.system.deps.store.kind !== 'esdb') {
    const stored = await t.database.db.query<{ data: Record<string, unknown> }>(
      `SELECT data FROM es_events WHERE stream_name = $1 ORDER BY revision LIMIT 1`,
      [`addresses-${userId}`],
    );
    expect(stored.rows[0]!.data).toHaveProperty('address');
  }
});
