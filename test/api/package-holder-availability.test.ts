import { type TestSystem } from '../support/system';
import { apiSuite, type Marketplace } from '../support/apiSuite';

let t: TestSystem;
let m: Marketplace;
apiSuite('2026-12-01T08:00:00Z', (system, market) => {
  t = system;
  m = market;
});

const slotsOf = (body: { slots: { slot: string }[] }) => body.slots.map((s) => s.slot);

/**
 * A package's holder books its remaining sessions up to the package's own expiration date. Availability
 * offers a package service's slots only up to the last day of a package bought now; once the coach shortened
 * `expiresInDays`, that day came before the holder's, and the holder was offered nothing it could book with
 * its `packageId`, though those sessions were owed and booked fine.
 */
describe("a package's holder sees the slots up to its package's expiration date", () => {
  it('after the coach shortened expiresInDays (6 and 11), still only to the holder', async () => {
    const { coach, client, serviceId, first } = await m.packageBought('2026-12-02T10:00:00');
    const packageId = first.groupId;
    expect(first.expirationDate).toBe('31/12/2026');
    const edited = await t.request('PUT', `/api/v1/coach/services/${serviceId}`, {
      token: coach.token,
      body: { expiresInDays: 2 },
    });
    expect(edited.status).toBe(200);

    const range = 'from_date=2026-12-14&to_date=2026-12-14';
    // A package bought now lasts until 03/12: nobody else is offered 14/12 (it would be package_expired).
    const anyone = await t.request('GET', `/api/v1/service/${serviceId}/availability?${range}`);
    expect(slotsOf(anyone.body)).toEqual([]);
    const other = await m.client();
    const stranger = await t.request('GET', `/api/v1/service/${serviceId}/availability?${range}`, {
      token: other.token,
    });
    expect(slotsOf(stranger.body)).toEqual([]);

    const holder = await t.request('GET', `/api/v1/service/${serviceId}/availability?${range}`, {
      token: client.token,
    });
    expect(holder.status).toBe(200);
    expect(holder.body.packages.map((p: { packageId: string }) => p.packageId)).toEqual([packageId]);
    expect(slotsOf(holder.body)).toContain('2026-12-14T10:00:00');
    // Asked again (an answer the cache may keep): the same for each of them.
    const again = await t.request('GET', `/api/v1/service/${serviceId}/availability?${range}`, {
      token: client.token,
    });
    expect(slotsOf(again.body)).toEqual(slotsOf(holder.body));
    const anyoneAgain = await t.request('GET', `/api/v1/service/${serviceId}/availability?${range}`);
    expect(slotsOf(anyoneAgain.body)).toEqual([]);

    const ofCoach = await t.request('GET', `/api/v1/coach/${coach.id}/availability?${range}`, {
      token: client.token,
    });
    expect(ofCoach.status).toBe(200);
    const listed = ofCoach.body.services.find((s: { service: { id: string } }) => s.service.id === serviceId);
    expect(slotsOf(listed)).toEqual(slotsOf(holder.body));
    const ofCoachAnyone = await t.request('GET', `/api/v1/coach/${coach.id}/availability?${range}`);
    expect(
      slotsOf(
        ofCoachAnyone.body.services.find((s: { service: { id: string } }) => s.service.id === serviceId),
      ),
    ).toEqual([]);

    // What is offered is what the holder books with its packageId.
    const booked = await t.request('POST', `/api/v1/service/${serviceId}`, {
      token: client.token,
      body: { slots: ['2026-12-14T10:00:00'], packageId },
    });
    expect(booked.status).toBe(200);
    const after = await t.request('GET', `/api/v1/service/${serviceId}/availability?${range}`, {
      token: client.token,
    });
    expect(slotsOf(after.body)).not.toContain('2026-12-14T10:00:00');
    expect(slotsOf(after.body).length).toBeGreaterThan(0);

    // Past the package's own last day, nothing is offered to it either.
    const beyond = await t.request(
      'GET',
      `/api/v1/service/${serviceId}/availability?from_date=2027-01-01&to_date=2027-01-05`,
      { token: client.token },
    );
    expect(slotsOf(beyond.body)).toEqual([]);
    // Once the package is used up it extends nothing.
    const last = await t.request('POST', `/api/v1/service/${serviceId}`, {
      token: client.token,
      body: { slots: ['2026-12-15T10:00:00'], packageId },
    });
    expect(last.status).toBe(200);
    const usedUp = await t.request('GET', `/api/v1/service/${serviceId}/availability?${range}`, {
      token: client.token,
    });
    expect(usedUp.body.packages).toEqual([]);
    expect(slotsOf(usedUp.body)).toEqual([]);
  });
});
