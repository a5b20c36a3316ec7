import { randomUUID } from 'node:crypto';
import { eventually } from '../support/marketplace';
import { type TestSystem } from '../support/system';
import { apiSuite, type Marketplace } from '../support/apiSuite';

let t: TestSystem;
let m: Marketplace;
const clock = apiSuite('2026-12-01T08:00:00Z', (system, market) => {
  t = system;
  m = market;
});

const BERLIN = { lat: 52.52, lng: 13.405 };
const POTSDAM = { lat: 52.3906, lng: 13.0645 }; // 27.19 km from BERLIN
const MUNICH = { lat: 48.1374, lng: 11.5755 }; // 504 km

const search = (query: string, token?: string) =>
  t.request('GET', `/api/v1/coaches?${query}`, token ? { token } : {});
const ids = (res: { body: { id: string }[] }) => res.body.map((c) => c.id);

/** A coach named `name` at `place` (default address) with approved services of `types` at `prices`. */
async function coachAt(
  name: string,
  place: { lat: number; lng: number } | null,
  offers: [string, number][],
  lastName = 'Search',
) {
  const coach = await m.coach();
  await t.request('PUT', `/api/v1/users/${coach.id}`, {
    token: m.service(),
    body: { firstName: name, lastName, type: 'coach', languages: ['de', 'en'] },
  });
  if (place)
    await t.request('POST', '/api/v1/nav/addreses', {
      token: coach.token,
      body: { ...place, name: 'Studio', address: `${name} Studio` },
    });
  for (const [type, price] of offers)
    await m.offering(coach, { name: `${type} with ${name}`, serviceTypes: [type], price });
  return coach;
}

describe('GET /api/v1/coaches (added): clients find coaches', () => {
  const tag = randomUUID().slice(0, 8); // service types of this run only
  let anna: { id: string; token: string };
  let ben: { id: string; token: string };
  let cleo: { id: string; token: string };
  beforeAll(async () => {
    anna = await coachAt('Anna', BERLIN, [
      [`tennis-${tag}`, 40],
      [`padel-${tag}`, 70],
    ]);
    ben = await coachAt('Ben', POTSDAM, [[`tennis-${tag}`, 30]]);
    cleo = await coachAt('Cleo', MUNICH, [[`yoga-${tag}`, 55]]);
    // A coach whose only service waits for review is not listed.
    const hidden = await coachAt('Hidden', BERLIN, []);
    await t.request('POST', '/api/v1/coach/services', {
      token: hidden.token,
      body: {
        name: 'x',
        price: 1,
        priceCurrency: 'EUR',
        sessionMinutesDuration: 60,
        serviceTypes: [`tennis-${tag}`],
      },
    });
    // Nor is a coach changed to a client, though its approved service stays approved.
    const former = await coachAt('Former', BERLIN, [[`tennis-${tag}`, 35]]);
    const changed = await t.request('PUT', `/api/v1/users/${former.id}`, {
      token: m.service(),
      body: { type: 'client' },
    });
    expect(changed.status).toBe(200);
  });

  it('lists coaches of a service type with their card: prices over its approved services of that type, all types, rating', async () => {
    const res = await search(`serviceType=TENNIS-${tag}`);
    expect(res.status).toBe(200);
    expect(ids(res).sort()).toEqual([anna.id, ben.id].sort());
    expect(res.body.find((c: { id: string }) => c.id === anna.id)).toEqual({
      id: anna.id,
      firstName: 'Anna',
      lastName: 'Search',
      avatarUrl: '',
      languages: { de: true, en: true },
      experience: 0,
      verified: false,
      rating: null,
      sessionCount: 0,
      serviceTypes: [`padel-${tag}`, `tennis-${tag}`],
      minPrice: 40,
      maxPrice: 40,
      priceCurrency: 'EUR',
      distance: null,
    });
  });

  it('finds by a part of the name or of a service name, case-insensitively, with wildcards taken literally', async () => {
    expect(ids(await search(`q=ann&serviceType=tennis-${tag}`))).toEqual([anna.id]);
    expect(ids(await search(`q=${encodeURIComponent(`YOGA-${tag} with`)}`))).toEqual([cleo.id]);
    expect(ids(await search(`q=%25&serviceType=tennis-${tag}`))).toEqual([]);
    expect(ids(await search(`q=_nna&serviceType=tennis-${tag}`))).toEqual([]);
  });

  it('matches text however its accents are encoded (composed é or e with a combining accent)', async () => {
    // Zoë's name is stored decomposed (as some keyboards send it), Chloë's composed; each found either way.
    const last = `Nfc${tag}`;
    const zoe = await coachAt('Zoe\u0308', null, [[`ballet-${tag}`, 30]], last);
    const chloe = await coachAt('Chlo\u00eb', null, [[`Café-${tag}`.normalize('NFD'), 30]], last);
    expect(ids(await search(`q=${encodeURIComponent(`zo\u00eb ${last}`)}`))).toEqual([zoe.id]);
    expect(ids(await search(`q=${encodeURIComponent(`CHLOE\u0308 ${last}`)}`))).toEqual([chloe.id]);
    expect(ids(await search(`serviceType=${encodeURIComponent(`CAF\u00c9-${tag}`)}`))).toEqual([chloe.id]);
  });

  it("measures distance from lat/lng (or the caller's default address), filters by radius and sorts by it", async () => {
    const near = await search(`lat=${BERLIN.lat}&lng=${BERLIN.lng}&radiusKm=100&sort=distance&q=Search`);
    expect(near.status).toBe(200);
    expect(near.body.map((c: { id: string; distance: number }) => [c.id, c.distance])).toEqual([
      [anna.id, 0],
      [ben.id, 27.19],
    ]);
    // The radius is compared with the distance as shown: Ben, shown at 27.19 km (27.1912...), is within 27.19.
    const edge = await search(`lat=${BERLIN.lat}&lng=${BERLIN.lng}&radiusKm=27.19&sort=distance&q=Search`);
    expect(edge.body.map((c: { id: string; distance: number }) => [c.id, c.distance])).toEqual([
      [anna.id, 0],
      [ben.id, 27.19],
    ]);
    expect(ids(await search(`lat=${BERLIN.lat}&lng=${BERLIN.lng}&radiusKm=27.18&q=Search`))).toEqual([
      anna.id,
    ]);
    const all = await search(`lat=${BERLIN.lat}&lng=${BERLIN.lng}&sort=distance&q=Search`);
    expect(ids(all)).toEqual([anna.id, ben.id, cleo.id]);
    // A client with a default address in Munich, no lat/lng: distances from there.
    const client = await m.client();
    await t.request('POST', '/api/v1/nav/addreses', {
      token: client.token,
      body: { ...MUNICH, name: 'Home', address: 'Marienplatz' },
    });
    const fromHome = await search(`sort=distance&q=Search`, client.token);
    expect(ids(fromHome)).toEqual([cleo.id, ben.id, anna.id]);
    expect(fromHome.body[0].distance).toBe(0);
  });

  it('filters by a price it can be had for and sorts by the lowest price', async () => {
    expect(ids(await search(`maxPrice=35&q=Search`))).toEqual([ben.id]);
    // Any price a service can have, as a client prints it (more than 6 decimals, an exponent), is a maxPrice.
    expect(ids(await search(`maxPrice=30.0000001&q=Search`))).toEqual([ben.id]);
    expect(ids(await search(`maxPrice=1e-7&q=Search`))).toEqual([]);
    const near = await search(`lat=${POTSDAM.lat}&lng=${POTSDAM.lng}&radiusKm=0.0000001&q=Search`);
    expect([near.status, ids(near)]).toEqual([200, [ben.id]]);
    expect(ids(await search(`sort=price&q=Search`))).toEqual([ben.id, anna.id, cleo.id]);
  });

  it('with serviceType or q, the price filter, the price order and the card prices are those of the services that match', async () => {
    // Dora's squash costs 90, her golf 15; Emil's squash 60. Squash up to 70 is Emil's only.
    const last = `Price${tag}`;
    const dora = await coachAt(
      'Dora',
      null,
      [
        [`squash-${tag}`, 90],
        [`golf-${tag}`, 15],
      ],
      last,
    );
    const emil = await coachAt('Emil', null, [[`squash-${tag}`, 60]], last);
    expect(ids(await search(`serviceType=squash-${tag}&maxPrice=70`))).toEqual([emil.id]);
    expect(ids(await search(`q=squash-${tag}&maxPrice=70`))).toEqual([emil.id]);
    const bySquash = await search(`serviceType=squash-${tag}&sort=price`);
    expect(
      bySquash.body.map((c: { id: string; minPrice: number; maxPrice: number }) => [
        c.id,
        c.minPrice,
        c.maxPrice,
      ]),
    ).toEqual([
      [emil.id, 60, 60],
      [dora.id, 90, 90],
    ]);
    // The card still lists every type the coach offers; by her name, all her services count.
    expect(bySquash.body[1].serviceTypes).toEqual([`golf-${tag}`, `squash-${tag}`]);
    expect(ids(await search(`q=${last}&maxPrice=20`))).toEqual([dora.id]);
    expect((await search(`q=Dora ${last}`)).body[0]).toMatchObject({ minPrice: 15, maxPrice: 90 });
  });

  it('orders by rating by default, the unrated last; pages with limit and offset', async () => {
    // Cleo gets a 5 from a client whose session she completed (the review path a client takes).
    const rated = await m.client();
    const serviceId = await m.offering(cleo, { name: `extra-${tag}`, serviceTypes: [`yoga-${tag}`] });
    const booked = await t.request('POST', `/api/v1/service/${serviceId}`, {
      token: rated.token,
      body: { slots: ['2026-12-02T10:00:00'] },
    });
    const sessionId = booked.body[0].id as string;
    const act = (token: string, action: string, body?: unknown) =>
      t.request('POST', `/api/v1/session/${sessionId}/${action}`, { token, body });
    expect((await act(cleo.token, 'approve')).status).toBe(200);
    clock.set('2026-12-02T10:05:00Z');
    expect((await act(cleo.token, 'complete')).status).toBe(200);
    expect((await act(rated.token, 'review', { rating: 5 })).status).toBe(200);
    const ranked = await eventually(
      () => search('q=Search'),
      (r) => r.body[0]?.rating === 5,
    );
    expect(ids(ranked)[0]).toBe(cleo.id);
    expect(ranked.body[0]).toMatchObject({ rating: 5, sessionCount: 1 });
    expect(ids(await search('q=Search&limit=1&offset=1'))).toEqual([ids(ranked)[1]]);
  });

  it("lists a card's serviceTypes in the order the profile (13) has them, whatever the letters", async () => {
    // Upper and lower case, a letter past U+FFFF and one just below it: orders that differ between a
    // database's collation, code points and JavaScript's UTF-16 units.
    const types = [`b-${tag}`, `A-${tag}`, `\u{1F3BE}-${tag}`, `\uFF21-${tag}`, `\u00e9-${tag}`];
    const coach = await coachAt('Ordered', null, [], `Types${tag}`);
    await m.offering(coach, { name: `mixed-${tag}`, serviceTypes: types });
    const profile = await t.request('GET', `/api/v1/coach/${coach.id}/profile`);
    const card = await search(`q=Types${tag}`);
    expect(ids(card)).toEqual([coach.id]);
    expect(new Set(card.body[0].serviceTypes)).toEqual(new Set(types));
    expect(card.body[0].serviceTypes).toEqual(profile.body.serviceTypes);
  });

  it('answers 422 at the parameter for what it cannot use', async () => {
    for (const [query, loc, msg] of [
      ['lat=52.5', 'lng', 'lat and lng go together'],
      [
        'radiusKm=10',
        'radiusKm',
        'a distance needs a place: give lat and lng, or a token of a user with a default address',
      ],
      [
        'sort=distance',
        'sort',
        'a distance needs a place: give lat and lng, or a token of a user with a default address',
      ],
      ['radiusKm=-1&lat=1&lng=1', 'radiusKm', 'Input should be a number from 0 to 20000'],
      ['maxPrice=cheap', 'maxPrice', 'Input should be a number from 0 to 1000000'],
      ['sort=name', 'sort', undefined],
      ['limit=0', 'limit', undefined],
      [`q=${'x'.repeat(101)}`, 'q', undefined],
    ] as const) {
      const res = await search(query);
      expect([query, res.status, res.body.detail[0].loc]).toEqual([query, 422, ['query', loc]]);
      if (msg) expect(res.body.detail[0].msg).toBe(msg);
    }
  });
});
