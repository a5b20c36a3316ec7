import { randomBytes, randomUUID } from 'node:crypto';
import { sendForm, type FormPart } from '../support/multipart';
import { marketplace } from '../support/marketplace';
import { startTestSystem, type TestSystem } from '../support/system';

const now = new Date('2026-12-01T08:00:00Z');
let t: TestSystem;
let m: ReturnType<typeof marketplace>;
beforeAll(async () => {
  t = await startTestSystem({ clock: () => now });
  m = marketplace(t);
});
afterAll(() => t.close());

type Part = FormPart;
const png = (n = 500) => ({ bytes: randomBytes(n), type: 'image/png', filename: 'photo.png' });
const pdf = (n = 300) => ({ bytes: randomBytes(n), type: 'application/pdf', filename: 'licence.pdf' });

async function upload(token: string | null, parts: Part[]) {
  const { status, body, headers } = await sendForm(
    t.baseUrl,
    'POST',
    '/api/v1/storage/profile/media',
    token,
    parts,
  );
  return { status, body, mediaId: headers.get('x-media-id') };
}
const bytesAt = async (url: string) => {
  const res = await fetch(t.baseUrl + url);
  return { status: res.status, bytes: Buffer.from(await res.arrayBuffer()) };
};

describe('profile images and certificates (14 with kind)', () => {
  it('a coach adds pictures and certificates; they show on the public profile and can be listed and deleted', async () => {
    const coach = await m.coach();
    const media = await upload(coach.token, [{ name: 'file', ...png() }]);
    expect(media.status).toBe(200);
    expect(media.mediaId).toBeNull();

    const court = png(700);
    const thumb = png(100);
    const first = await upload(coach.token, [
      { name: 'kind', value: 'image' },
      { name: 'title', value: 'On court' },
      { name: 'description', value: 'Saturday group' },
      { name: 'file', ...court },
      { name: 'preview', ...thumb },
    ]);
    expect(first.status).toBe(200);
    // Still UserProfileOut; the profile media is untouched by a picture.
    expect(first.body).toMatchObject({ id: coach.id, type: 'coach', mediaUrl: media.body.mediaUrl });
    expect(first.mediaId).toMatch(/^[0-9a-f-]{36}$/);
    // An empty title box is no title: the picture is named after its file, as when none is sent.
    const second = await upload(coach.token, [
      { name: 'kind', value: 'image' },
      { name: 'title', value: ' ' },
      { name: 'file', ...png() },
    ]);
    const licence = pdf();
    const cert = await upload(coach.token, [
      { name: 'kind', value: 'certificate' },
      { name: 'title', value: 'Coaching licence B' },
      { name: 'file', ...licence },
    ]);
    expect(cert.status).toBe(200);

    const mine = await t.request('GET', '/api/v1/storage/profile/media', { token: coach.token });
    expect(mine.status).toBe(200);
    expect(mine.body).toEqual([
      {
        id: first.mediaId,
        kind: 'image',
        title: 'On court',
        description: 'Saturday group',
        contentType: 'image/png',
        originFilename: 'photo.png',
        url: expect.stringMatching(/^\/api\/v1\/storage\/files\/image_[0-9a-f-]{36}\.png$/),
        thumb: expect.stringMatching(/^\/api\/v1\/storage\/files\/mpreview_[0-9a-f-]{36}\.png$/),
        filesize: 700,
        status: 'approved',
        createdAt: now.toISOString(),
      },
      expect.objectContaining({ id: second.mediaId, kind: 'image', title: 'photo.png', thumb: '' }),
      expect.objectContaining({
        id: cert.mediaId,
        kind: 'certificate',
        title: 'Coaching licence B',
        contentType: 'application/pdf',
      }),
    ]);
    const certificates = await t.request('GET', '/api/v1/storage/profile/media?kind=certificate', {
      token: coach.token,
    });
    expect(certificates.body.map((i: { id: string }) => i.id)).toEqual([cert.mediaId]);
    expect((await bytesAt(mine.body[0].url)).bytes.equals(court.bytes)).toBe(true);
    expect((await bytesAt(mine.body[0].thumb)).bytes.equals(thumb.bytes)).toBe(true);
    expect((await bytesAt(mine.body[2].url)).bytes.equals(licence.bytes)).toBe(true);
    // A certificate opens in the browser's PDF viewer, which a CSP sandbox would stop; a picture stays
    // sandboxed (an SVG may carry a script).
    const certificateFile = await fetch(t.baseUrl + mine.body[2].url);
    expect(certificateFile.headers.get('content-type')).toBe('application/pdf');
    expect(certificateFile.headers.get('x-content-type-options')).toBe('nosniff');
    expect(certificateFile.headers.get('content-security-policy')).toBeNull();
    const pictureFile = await fetch(t.baseUrl + mine.body[0].url);
    expect(pictureFile.headers.get('content-security-policy')).toBe("default-src 'none'; sandbox");

    const strip = ({ kind: _k, createdAt: _c, ...fileBase }: Record<string, unknown>) => fileBase;
    const profile = await t.request('GET', `/api/v1/coach/${coach.id}/profile`);
    expect(profile.body.images).toEqual([strip(mine.body[0]), strip(mine.body[1])]);
    expect(profile.body.certificates).toEqual([strip(mine.body[2])]);

    // Deleting: only the owner; the files go with it.
    const path = `/api/v1/storage/profile/media/${first.mediaId}`;
    const stranger = await m.coach();
    const notYours = await t.request('DELETE', path, { token: stranger.token });
    expect(notYours.status).toBe(404);
    expect(notYours.body.error).toBe('media_not_found');
    const deleted = await t.request('DELETE', path, { token: coach.token });
    expect(deleted.status).toBe(200);
    expect(deleted.body).toEqual({ id: first.mediaId, status: 'deleted' });
    expect((await bytesAt(mine.body[0].url)).status).toBe(404);
    expect((await bytesAt(mine.body[0].thumb)).status).toBe(404);
    expect((await t.request('DELETE', path, { token: coach.token })).status).toBe(404);
    const after = await t.request('GET', `/api/v1/coach/${coach.id}/profile`);
    expect(after.body.images.map((i: { id: string }) => i.id)).toEqual([second.mediaId]);
    expect(after.body.certificates).toHaveLength(1);
  });

  it("a keyed upload sent again is answered as the first, with the new item's X-Media-Id", async () => {
    const coach = await m.coach();
    const key = randomUUID();
    const parts: Part[] = [
      { name: 'kind', value: 'certificate' },
      { name: 'file', ...pdf() },
    ];
    const send = async () => {
      const form = new FormData();
      for (const p of parts)
        if (p.bytes) form.append(p.name, new Blob([p.bytes], { type: p.type }), p.filename);
        else form.append(p.name, p.value ?? '');
      return fetch(`${t.baseUrl}/api/v1/storage/profile/media`, {
        method: 'POST',
        body: form,
        headers: { authorization: `Bearer ${coach.token}`, 'idempotency-key': key },
      });
    };
    const first = await send();
    expect(first.status).toBe(200);
    const firstId = first.headers.get('x-media-id');
    expect(firstId).toMatch(/^[0-9a-f-]{36}$/);
    const again = await send();
    expect(again.status).toBe(200);
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    expect(again.headers.get('x-media-id')).toBe(firstId);
    expect(await again.json()).toEqual(await first.json());
    const listed = (await t.request('GET', '/api/v1/storage/profile/media', { token: coach.token })).body;
    expect(listed.map((i: { id: string }) => i.id)).toEqual([firstId]);
  });

  it('a keyed upload run again after a crash does not put back a picture removed or media replaced since', async () => {
    const coach = await m.coach();
    const keyedUpload = async (key: string, parts: Part[]) => {
      const form = new FormData();
      for (const p of parts)
        if (p.bytes) form.append(p.name, new Blob([p.bytes], { type: p.type }), p.filename);
        else form.append(p.name, p.value ?? '');
      const res = await fetch(`${t.baseUrl}/api/v1/storage/profile/media`, {
        method: 'POST',
        body: form,
        headers: { authorization: `Bearer ${coach.token}`, 'idempotency-key': key },
      });
      return { status: res.status, body: (await res.json()) as any, mediaId: res.headers.get('x-media-id') };
    };
    // The process died before the answer was kept: the key is claimed with no answer, past its lease.
    const crashed = (key: string) =>
      t.system.deps.db.query(
        `UPDATE idempotency_keys SET status = NULL, response = NULL, created_at = now() - interval '1 hour'
         WHERE key = $1`,
        [key],
      );

    const pictureKey = randomUUID();
    const picture = [
      { name: 'kind', value: 'image' },
      { name: 'file', ...png() },
      { name: 'preview', ...png(90) },
    ];
    const added = await keyedUpload(pictureKey, picture);
    expect(added.status).toBe(200);
    const [item] = (await t.request('GET', '/api/v1/storage/profile/media', { token: coach.token })).body;
    const removed = await t.request('DELETE', `/api/v1/storage/profile/media/${added.mediaId}`, {
      token: coach.token,
    });
    expect(removed.status).toBe(200);
    await crashed(pictureKey);
    const again = await keyedUpload(pictureKey, picture);
    expect(again.status).toBe(200);
    expect(again.mediaId).toBe(added.mediaId);
    // Removed by its owner: its files stay gone and it is listed nowhere.
    expect((await bytesAt(item.url)).status).toBe(404);
    expect((await bytesAt(item.thumb)).status).toBe(404);
    expect((await t.request('GET', '/api/v1/storage/profile/media', { token: coach.token })).body).toEqual(
      [],
    );

    const mediaKey = randomUUID();
    const media = [
      { name: 'file', ...png() },
      { name: 'preview', ...png(80) },
    ];
    const first = await keyedUpload(mediaKey, media);
    expect(first.status).toBe(200);
    const newer = await upload(coach.token, [{ name: 'file', ...png(600) }]);
    expect(newer.status).toBe(200);
    expect((await bytesAt(first.body.mediaUrl)).status).toBe(404);
    await crashed(mediaKey);
    const retry = await keyedUpload(mediaKey, media);
    expect(retry.status).toBe(200);
    // The newer media stays the profile's; the replaced one's files stay gone.
    expect(retry.body.mediaUrl).toBe(newer.body.mediaUrl);
    expect((await bytesAt(first.body.mediaUrl)).status).toBe(404);
    expect((await bytesAt(first.body.mediaPreviewUrl)).status).toBe(404);
    expect((await bytesAt(newer.body.mediaUrl)).status).toBe(200);
  });

  it('refuses a wrong kind, a type the kind does not take, and a title on profile media', async () => {
    const client = await m.client();
    const badKind = await upload(client.token, [
      { name: 'kind', value: 'video' },
      { name: 'file', ...png() },
    ]);
    expect(badKind.status).toBe(422);
    expect(badKind.body.detail[0].loc).toEqual(['body', 'kind']);
    const pdfImage = await upload(client.token, [
      { name: 'kind', value: 'image' },
      { name: 'file', ...pdf() },
    ]);
    expect(pdfImage.status).toBe(415);
    expect(pdfImage.body.error).toBe('unsupported_media_type');
    const videoCert = await upload(client.token, [
      { name: 'kind', value: 'certificate' },
      { name: 'file', bytes: randomBytes(10), type: 'video/mp4', filename: 'x.mp4' },
    ]);
    expect(videoCert.status).toBe(415);
    const titled = await upload(client.token, [
      { name: 'title', value: 'x' },
      { name: 'file', ...png() },
    ]);
    expect(titled.status).toBe(422);
    expect(titled.body.detail[0].loc).toEqual(['body', 'title']);
    expect(
      (
        await upload(null, [
          { name: 'kind', value: 'image' },
          { name: 'file', ...png() },
        ])
      ).status,
    ).toBe(401);
    const list = await t.request('GET', '/api/v1/storage/profile/media?kind=x', { token: client.token });
    expect(list.status).toBe(422);
    expect((await t.request('GET', '/api/v1/storage/profile/media')).status).toBe(401);
    expect(
      (await t.request('DELETE', `/api/v1/storage/profile/media/${randomUUID()}`, { token: client.token }))
        .status,
    ).toBe(404);
  });
});

describe('UserProfileOut.totalPayment', () => {
  it('sums the payments received, paid as a client and earned as a coach, in their currency', async () => {
    const coach = await m.coach();
    const serviceId = await m.offering(coach, { price: 40.4, priceCurrency: 'EUR' });
    const client = await m.client();
    const book = async (slot: string) => {
      const res = await t.request('POST', `/api/v1/service/${serviceId}`, {
        token: client.token,
        body: { slots: [slot] },
      });
      expect(res.status).toBe(200);
      return res.body[0].paymentId as string;
    };
    const pay = async (paymentId: string, status: string) => {
      const res = await t.request('POST', `/api/v1/payment/private/payment/${paymentId}/update`, {
        token: m.service(),
        body: { status },
      });
      expect(res.status).toBe(200);
    };
    const totals = async (who: { token: string }) => {
      const res = await upload(who.token, [{ name: 'file', ...png() }]);
      expect(res.status).toBe(200);
      return [res.body.totalPayment, res.body.totalPaymentCurrency];
    };
    const p1 = await book('2026-12-02T10:00:00');
    expect(await totals(client)).toEqual([0, '']); // awaiting: nothing received yet
    await pay(p1, 'checkout');
    await pay(p1, 'received');
    const p2 = await book('2026-12-03T10:00:00');
    await pay(p2, 'checkout');
    await pay(p2, 'received');
    await pay(p2, 'delivered');
    const p3 = await book('2026-12-04T10:00:00');
    await pay(p3, 'checkout');
    await pay(p3, 'received');
    await pay(p3, 'refund'); // paid back: not counted
    expect(await totals(client)).toEqual([81, 'EUR']); // 40.4 + 40.4, rounded to a whole unit
    expect(await totals(coach)).toEqual([81, 'EUR']);
    expect(await totals(await m.client())).toEqual([0, '']);

    // A free session booked later, of a coach pricing in another currency: nothing was paid, so it neither
    // counts nor names the currency. Before, the total became 0 USD, hiding the 81 EUR paid.
    const other = await m.coach();
    const free = await m.offering(other, { price: 0, priceCurrency: 'USD' });
    const res = await t.request('POST', `/api/v1/service/${free}`, {
      token: client.token,
      body: { slots: ['2026-12-07T10:00:00'] },
    });
    expect(res.status).toBe(200);
    expect(res.body[0].paymentState).toBe('received');
    expect(await totals(client)).toEqual([81, 'EUR']);
    expect(await totals(other)).toEqual([0, '']);
  });
});
