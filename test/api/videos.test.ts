import fs from 'node:fs';
import { sendForm, type FormPart } from '../support/multipart';
import path from 'node:path';
import { randomBytes, randomUUID } from 'node:crypto';
import { fold } from '../../src/decider';
import { videoLibrary } from '../../commands/videos/decider';
import { videoStream, type VideoEvent } from '../../commands/videos/events';
import { startTestSystem, type TestSystem } from '../support/system';
import { tempDataDir, testS3 } from '../support/s3';

const LIMIT = 64 * 1024;

type Part = FormPart;
const mp4 = (n = 3000) => ({ bytes: randomBytes(n), type: 'video/mp4', filename: 'clip.mp4' });
const png = (n = 500) => ({ bytes: randomBytes(n), type: 'image/png', filename: 'thumb.png' });

const adapters: [string, () => Promise<{ env: Record<string, string>; close(): Promise<void> }>][] = [
  ['filesystem', async () => ({ env: {}, close: async () => undefined })],
  ['s3', testS3],
];

describe.each(adapters)('videos and profile media over HTTP (%s blob store)', (adapter, openStore) => {
  let t: TestSystem;
  let dataDir: { dir: string; close(): Promise<void> };
  let s3: { env: Record<string, string>; close(): Promise<void> };

  beforeAll(async () => {
    dataDir = await tempDataDir();
    s3 = await openStore();
    t = await startTestSystem({
      env: { DATA_DIR: dataDir.dir, MAX_UPLOAD_BYTES: String(LIMIT), ...s3.env },
    });
    expect(t.system.deps.blobs.kind).toBe(adapter);
  });
  afterAll(async () => {
    await t?.close();
    await s3?.close();
    await dataDir?.close();
  });

  const coach = () => {
    const id = randomUUID();
    return { id, token: t.token(id, ['coach']) };
  };

  const send = (method: string, url: string, token: string | null, parts: Part[]) =>
    sendForm(t.baseUrl, method, url, token, parts).then(({ status, body }) => ({ status, body }));
  const upload = (token: string, parts: Part[]) => send('POST', '/api/v1/storage/video', token, parts);
  const list = async (token: string) => {
    const res = await t.request('GET', '/api/v1/storage/videos', { token });
    expect(res.status).toBe(200);
    return res.body as { id: string; title: string; url: string; thumb: string }[];
  };
  const fetchBytes = async (url: string) => {
    const res = await fetch(t.baseUrl + url);
    return {
      status: res.status,
      type: res.headers.get('content-type'),
      bytes: Buffer.from(await res.arrayBuffer()),
    };
  };
  const writeModelOrder = async (userId: string) => {
    const { events } = await t.system.deps.store.readStream(videoStream(userId));
    return fold(
      videoLibrary,
      events.map((e) => ({ type: e.type, data: e.data }) as VideoEvent),
    ).videos.map((v) => v.videoId);
  };
  const uploadOk = async (token: string, title: string) => {
    const res = await upload(token, [
      { name: 'file', ...mp4(200) },
      { name: 'title', value: title },
    ]);
    expect(res.status).toBe(200);
    return res.body.id as string;
  };

  it('uploads a video with its preview, answers the FileBase and serves the same bytes', async () => {
    const c = coach();
    const file = mp4();
    const preview = png();
    const res = await upload(c.token, [
      { name: 'file', ...file },
      { name: 'preview', ...preview },
      { name: 'title', value: 'Serve drills' },
      { name: 'description', value: 'Slow motion' },
    ]);
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      id: expect.stringMatching(/^[0-9a-f-]{36}$/),
      title: 'Serve drills',
      description: 'Slow motion',
      contentType: 'video/mp4',
      originFilename: 'clip.mp4',
      url: expect.stringMatching(/^\/api\/v1\/storage\/files\/video_[0-9a-f-]{36}\.mp4$/),
      thumb: expect.stringMatching(/^\/api\/v1\/storage\/files\/preview_[0-9a-f-]{36}\.png$/),
      filesize: file.bytes.length,
      status: 'approved',
    });
    const video = await fetchBytes(res.body.url);
    expect(video.status).toBe(200);
    expect(video.type).toBe('video/mp4');
    expect(video.bytes.equals(file.bytes)).toBe(true);
    const thumb = await fetchBytes(res.body.thumb);
    expect(thumb.type).toBe('image/png');
    expect(thumb.bytes.equals(preview.bytes)).toBe(true);
    expect(await list(c.token)).toEqual([res.body]);
  });

  it('serves one byte range of a file (206) as players ask for it; 416 past its end; the whole file otherwise', async () => {
    const c = coach();
    const file = mp4();
    const res = await upload(c.token, [{ name: 'file', ...file }]);
    expect(res.status).toBe(200);
    const size = file.bytes.length;
    const ranged = (range: string) => fetch(t.baseUrl + res.body.url, { headers: { range } });

    const head = await ranged('bytes=0-9');
    expect(head.status).toBe(206);
    expect(head.headers.get('content-range')).toBe(`bytes 0-9/${size}`);
    expect(head.headers.get('content-length')).toBe('10');
    expect(head.headers.get('content-type')).toBe('video/mp4');
    expect(Buffer.from(await head.arrayBuffer()).equals(file.bytes.subarray(0, 10))).toBe(true);
    const tail = await ranged('bytes=-7');
    expect(tail.headers.get('content-range')).toBe(`bytes ${size - 7}-${size - 1}/${size}`);
    expect(Buffer.from(await tail.arrayBuffer()).equals(file.bytes.subarray(size - 7))).toBe(true);
    const rest = await ranged('bytes=100-');
    expect(Buffer.from(await rest.arrayBuffer()).equals(file.bytes.subarray(100))).toBe(true);

    // Checked against /openapi.json too (t.request), which must list the 416.
    const past = await t.request('GET', res.body.url, { headers: { range: `bytes=${size}-` } });
    expect(past.status).toBe(416);
    expect(past.headers.get('content-range')).toBe(`bytes */${size}`);
    expect(past.body).toEqual({
      error: 'range_not_satisfiable',
      message: expect.any(String),
      code: 416,
    });
    // Several ranges, or a header this server does not read: the whole file, and a note that ranges work.
    for (const range of ['bytes=0-1,5-6', 'bytes=9-3', 'pages=1-2']) {
      const whole = await ranged(range);
      expect([range, whole.status]).toEqual([range, 200]);
      expect(whole.headers.get('accept-ranges')).toBe('bytes');
      expect(Buffer.from(await whole.arrayBuffer()).equals(file.bytes)).toBe(true);
    }
  });

  it('answers the whole file (200) to a Range sent with If-Range: no validator of a file is ever given, so none matches', async () => {
    const c = coach();
    const file = mp4();
    const res = await upload(c.token, [{ name: 'file', ...file }]);
    expect(res.status).toBe(200);
    for (const ifRange of ['"abc"', 'W/"abc"', 'Wed, 21 Oct 2015 07:28:00 GMT']) {
      const whole = await fetch(t.baseUrl + res.body.url, {
        headers: { range: 'bytes=0-9', 'if-range': ifRange },
      });
      expect([ifRange, whole.status, whole.headers.get('content-range')]).toEqual([ifRange, 200, null]);
      expect(Buffer.from(await whole.arrayBuffer()).equals(file.bytes)).toBe(true);
    }
  });

  it("answers HEAD with the whole file's head (200, its length), a Range header or not: ranges are defined for GET only", async () => {
    const c = coach();
    const file = mp4();
    const res = await upload(c.token, [{ name: 'file', ...file }]);
    expect(res.status).toBe(200);
    for (const range of ['bytes=0-9', `bytes=${file.bytes.length}-`]) {
      const head = await fetch(t.baseUrl + res.body.url, { method: 'HEAD', headers: { range } });
      expect([range, head.status, head.headers.get('content-range')]).toEqual([range, 200, null]);
      expect(head.headers.get('content-length')).toBe(String(file.bytes.length));
      expect(head.headers.get('content-type')).toBe('video/mp4');
    }
  });

  it('defaults the title to the file name and the thumb to empty without a preview', async () => {
    const c = coach();
    const res = await upload(c.token, [{ name: 'file', ...mp4() }]);
    expect(res.body).toMatchObject({ title: 'clip.mp4', description: '', thumb: '' });
  });

  it("reads a title of only blanks (an HTML form's empty box) as none: the file name on upload, unchanged on replace", async () => {
    const c = coach();
    for (const blank of ['', '   ']) {
      const res = await upload(c.token, [
        { name: 'title', value: blank },
        { name: 'file', ...mp4() },
      ]);
      expect([res.status, res.body.title]).toEqual([200, 'clip.mp4']);
      const replaced = await send('PUT', `/api/v1/storage/video/${res.body.id}`, c.token, [
        { name: 'title', value: 'Serve' },
      ]);
      const kept = await send('PUT', `/api/v1/storage/video/${res.body.id}`, c.token, [
        { name: 'title', value: blank },
        { name: 'description', value: 'warm-up' },
      ]);
      expect(kept).toEqual({ status: 200, body: { ...replaced.body, description: 'warm-up' } });
      expect(kept.body.title).toBe('Serve');
    }
  });

  it('defaults the title to at most 200 characters of a longer file name, which a replace then accepts', async () => {
    const c = coach();
    const name = `${'ü'.repeat(150)}${'😀'.repeat(60)}.mp4`;
    const res = await upload(c.token, [{ name: 'file', ...mp4(), filename: name }]);
    expect(res.status).toBe(200);
    expect(res.body.originFilename).toBe(name);
    // 200 characters as every length counts them (code points: an emoji is one), not 200 UTF-16 units.
    expect(res.body.title).toBe(`${'ü'.repeat(150)}${'😀'.repeat(50)}`);
    const again = await send('PUT', `/api/v1/storage/video/${res.body.id}`, c.token, [
      { name: 'title', value: res.body.title },
    ]);
    expect(again).toEqual({ status: 200, body: res.body });
    const image = await send('POST', '/api/v1/storage/profile/media', c.token, [
      { name: 'file', ...png(), filename: name.replace('.mp4', '.png') },
      { name: 'kind', value: 'image' },
    ]);
    expect(image.status).toBe(200);
    const gallery = await t.request('GET', '/api/v1/storage/profile/media', { token: c.token });
    expect(gallery.body.map((i: { title: string }) => i.title)).toEqual([res.body.title]);
    // A name of 150 emoji is 150 characters: the whole name is the title, not its first 100 emoji.
    const emoji = `${'😀'.repeat(150)}.mp4`;
    const whole = await upload(c.token, [{ name: 'file', ...mp4(), filename: emoji }]);
    expect(whole.body.title).toBe(emoji);
  });

  it("names a stored file by a fresh uuid and the file's extension, lower-cased, or none if it is odd", async () => {
    const c = coach();
    const urlOf = async (filename: string) =>
      (await upload(c.token, [{ name: 'file', ...mp4(), filename }])).body.url as string;
    expect(await urlOf('Clip.MP4')).toMatch(/^\/api\/v1\/storage\/files\/video_[0-9a-f-]{36}\.mp4$/);
    for (const odd of ['clip.m p4', 'clip.mp4#x', 'clip.ändern', 'clip.abcdefghijk', 'clip'])
      expect([odd, await urlOf(odd)]).toEqual([
        odd,
        expect.stringMatching(/^\/api\/v1\/storage\/files\/video_[0-9a-f-]{36}$/),
      ]);
  });

  it('keeps a file name in UTF-8 as browsers send it (not read as Latin-1)', async () => {
    const c = coach();
    const name = 'Über mich – Aufschlag ✓.mp4';
    const res = await upload(c.token, [{ name: 'file', ...mp4(), filename: name }]);
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ title: name, originFilename: name });
    expect((await list(c.token))[0]).toMatchObject({ title: name });
  });

  /** A hand-written multipart body: a file part whose Content-Disposition ends with `disposition`. */
  async function sendRawFile(url: string, token: string, disposition: string, type: string) {
    const body = Buffer.from(
      `--b0undary\r\nContent-Disposition: form-data; name="file"; ${disposition}\r\n` +
        `Content-Type: ${type}\r\n\r\nabc\r\n--b0undary--\r\n`,
    );
    const res = await fetch(t.baseUrl + url, {
      method: 'POST',
      body,
      headers: { authorization: `Bearer ${token}`, 'content-type': 'multipart/form-data; boundary=b0undary' },
    });
    return { status: res.status, body: (await res.json()) as unknown };
  }

  it('answers 422, not 500, for a file name holding a NUL character, and keeps nothing', async () => {
    const c = coach();
    const nul = "filename*=UTF-8''a%00b.mp4";
    const refused = {
      status: 422,
      body: {
        detail: [{ loc: ['body', 'file'], msg: expect.stringContaining('NUL'), type: 'string_invalid_text' }],
      },
    };
    expect(await sendRawFile('/api/v1/storage/video', c.token, nul, 'video/mp4')).toEqual(refused);
    expect(await list(c.token)).toEqual([]);
    const asImage = `--b0undary\r\nContent-Disposition: form-data; name="kind"\r\n\r\nimage\r\n`;
    const res = await fetch(t.baseUrl + '/api/v1/storage/profile/media', {
      method: 'POST',
      body: Buffer.from(
        `${asImage}--b0undary\r\nContent-Disposition: form-data; name="file"; ${nul.replace('.mp4', '.png')}\r\n` +
          'Content-Type: image/png\r\n\r\nabc\r\n--b0undary--\r\n',
      ),
      headers: {
        authorization: `Bearer ${c.token}`,
        'content-type': 'multipart/form-data; boundary=b0undary',
      },
    });
    expect({ status: res.status, body: await res.json() }).toEqual(refused);
    expect(fs.readdirSync(path.join(dataDir.dir, 'uploads'))).toEqual([]);
  });

  it('answers 400 for a text field or file name whose bytes are not UTF-8 (1, 14 and the replace), and keeps nothing', async () => {
    const c = coach();
    const id = await uploadOk(c.token, 'kept');
    const before = await list(c.token);
    const blobs = () =>
      adapter === 'filesystem' ? fs.readdirSync(path.join(dataDir.dir, 'blobs', 'data')).length : 0;
    const blobsBefore = blobs();
    /** A hand-written multipart body from parts given as raw bytes (`latin1` strings keep each byte). */
    const sendRaw = async (method: string, url: string, parts: string[]) => {
      const body = Buffer.from(
        parts.map((p) => `--b0undary\r\n${p}\r\n`).join('') + '--b0undary--\r\n',
        'latin1',
      );
      const res = await fetch(t.baseUrl + url, {
        method,
        body,
        headers: {
          authorization: `Bearer ${c.token}`,
          'content-type': 'multipart/form-data; boundary=b0undary',
        },
      });
      return { status: res.status, body: (await res.json()) as unknown };
    };
    const file = (disposition = 'filename="clip.mp4"', type = 'video/mp4') =>
      `Content-Disposition: form-data; name="file"; ${disposition}\r\nContent-Type: ${type}\r\n\r\nabc`;
    const field = (name: string, value: string, type?: string) =>
      `Content-Disposition: form-data; name="${name}"\r\n${type ? `Content-Type: ${type}\r\n` : ''}\r\n${value}`;
    const notUtf8 = (where: string) => ({
      status: 400,
      body: {
        error: 'bad_request',
        message: expect.stringMatching(new RegExp(`${where}.*UTF-8`)),
        code: 400,
      },
    });
    // "René" in Latin-1 (the byte E9), sent where UTF-8 is read: it was stored as "Ren\ufffd".
    const cases: [string, string, string[], string][] = [
      ['POST', '/api/v1/storage/video', [file('filename="Ren\xe9.mp4"')], 'file'],
      ['POST', '/api/v1/storage/video', [file("filename*=UTF-8''Ren%E9.mp4")], 'file'],
      ['POST', '/api/v1/storage/video', [file(), field('title', 'Ren\xe9')], 'title'],
      [
        'POST',
        '/api/v1/storage/video',
        [file(), field('description', 'caf\xe9', 'text/plain; charset=utf-8')],
        'description',
      ],
      ['PUT', `/api/v1/storage/video/${id}`, [file(), field('title', 'Ren\xe9')], 'title'],
      ['PUT', `/api/v1/storage/video/${id}`, [file('filename="Ren\xe9.mp4"')], 'file'],
      [
        'POST',
        '/api/v1/storage/profile/media',
        [field('kind', 'image'), field('title', 'Ren\xe9'), file('filename="a.png"', 'image/png')],
        'title',
      ],
      [
        'POST',
        '/api/v1/storage/profile/media',
        [field('kind', 'image'), file('filename="Ren\xe9.png"', 'image/png')],
        'file',
      ],
    ];
    for (const [method, url, parts, where] of cases)
      expect([method, url, where, await sendRaw(method, url, parts)]).toEqual([
        method,
        url,
        where,
        notUtf8(where),
      ]);
    expect(await list(c.token)).toEqual(before);
    expect(blobs()).toBe(blobsBefore);
    expect(fs.readdirSync(path.join(dataDir.dir, 'uploads'))).toEqual([]);
    // UTF-8 sent as raw bytes, and a part that names its charset (Latin-1 here), are read as such.
    const ok = await sendRaw('POST', '/api/v1/storage/video', [
      file('filename="Ren\xc3\xa9.mp4"'),
      field('title', 'Ren\xe9', 'text/plain; charset=iso-8859-1'),
    ]);
    expect(ok).toMatchObject({ status: 200, body: { title: 'Ren\u00e9', originFilename: 'Ren\u00e9.mp4' } });
    // A charset the service cannot decode at all is refused, naming the field.
    expect(
      await sendRaw('POST', '/api/v1/storage/video', [
        file(),
        field('title', 'x', 'text/plain; charset=x-unknown'),
      ]),
    ).toEqual({
      status: 415,
      body: { error: 'unsupported_media_type', message: expect.stringContaining('title'), code: 415 },
    });
  });

  it('refuses a file whose name is only a path (`..`, `clips/`) with 422 rather than ignoring it; keeps the name of one with a path', async () => {
    const c = coach();
    const id = await uploadOk(c.token, 'kept');
    const before = await list(c.token);
    const emptyName = {
      status: 422,
      body: {
        detail: [
          {
            loc: ['body', 'file'],
            msg: 'The file name is empty once its path is removed',
            type: 'value_error',
          },
        ],
      },
    };
    for (const filename of ['..', '.', 'clips/', 'x/..', '/']) {
      // A replace whose file was dropped answered 200 and replaced nothing.
      const replaced = await send('PUT', `/api/v1/storage/video/${id}`, c.token, [
        { name: 'file', ...mp4(), filename },
      ]);
      expect([filename, replaced]).toEqual([filename, emptyName]);
      const uploaded = await upload(c.token, [{ name: 'file', ...mp4(), filename }]);
      expect([filename, uploaded]).toEqual([filename, emptyName]);
    }
    expect(await list(c.token)).toEqual(before);
    const withPath = await send('PUT', `/api/v1/storage/video/${id}`, c.token, [
      { name: 'file', ...mp4(), filename: '../x/a.mp4' },
      { name: 'preview', ...png(), filename: 'C:\\clips\\b.png' },
    ]);
    expect(withPath.status).toBe(200);
    expect(withPath.body.originFilename).toBe('a.mp4');
    expect(withPath.body.thumb).toMatch(/\/preview_[0-9a-f-]+\.png$/);
    expect(fs.readdirSync(path.join(dataDir.dir, 'uploads'))).toEqual([]);
  });

  it('refuses without a token (401), without the coach role (403), in the ErrorResponse shape', async () => {
    const noToken = await send('POST', '/api/v1/storage/video', null, [{ name: 'file', ...mp4() }]);
    expect(noToken).toEqual({
      status: 401,
      body: { error: 'unauthorized', message: expect.any(String), code: 401 },
    });
    const client = t.token(randomUUID(), ['client']);
    const asClient = await upload(client, [{ name: 'file', ...mp4() }]);
    expect(asClient).toEqual({
      status: 403,
      body: { error: 'forbidden', message: expect.any(String), code: 403 },
    });
    expect((await t.request('GET', '/api/v1/storage/videos', { token: client })).status).toBe(403);
  });

  it('refuses a file that is not a video, and a body that is not multipart, with 415', async () => {
    const c = coach();
    const res = await upload(c.token, [
      { name: 'file', bytes: randomBytes(100), type: 'text/plain', filename: 'a.txt' },
    ]);
    expect(res).toEqual({
      status: 415,
      body: { error: 'unsupported_media_type', message: 'file must be video/*, got text/plain', code: 415 },
    });
    const badPreview = await upload(c.token, [
      { name: 'file', ...mp4() },
      { name: 'preview', bytes: randomBytes(10), type: 'video/mp4', filename: 'p.mp4' },
    ]);
    expect(badPreview.status).toBe(415);
    const json = await t.request('POST', '/api/v1/storage/video', { token: c.token, body: { title: 'x' } });
    expect(json.status).toBe(415);
    expect(json.body).toMatchObject({ error: 'unsupported_media_type', code: 415 });
    expect(await list(c.token)).toEqual([]);
  });

  it('answers 400 for a malformed multipart body, also one whose boundary is empty (it read no parts)', async () => {
    const c = coach();
    const id = await uploadOk(c.token, 'kept');
    const before = await list(c.token);
    const body = Buffer.from(
      '--b0undary\r\nContent-Disposition: form-data; name="title"\r\n\r\nrenamed\r\n--b0undary--\r\n',
    );
    const malformed = {
      status: 400,
      body: { error: 'bad_request', message: expect.stringMatching(/^malformed multipart body/), code: 400 },
    };
    // A replace whose body was read as no parts answered 200 and renamed nothing.
    for (const [contentType, sent] of [
      ['multipart/form-data; boundary=', body],
      ['multipart/form-data; boundary=""', body],
      ['multipart/form-data', body],
      ['multipart/form-data; boundary=other', body],
      ['multipart/form-data; boundary=b0undary', Buffer.from('hello')],
    ] as const) {
      const res = await fetch(`${t.baseUrl}/api/v1/storage/video/${id}`, {
        method: 'PUT',
        body: sent,
        headers: { authorization: `Bearer ${c.token}`, 'content-type': contentType },
      });
      expect([contentType, { status: res.status, body: await res.json() }]).toEqual([contentType, malformed]);
    }
    expect(await list(c.token)).toEqual(before);
  });

  it('refuses a file over the size limit with 413 and keeps no part of it', async () => {
    const c = coach();
    const res = await upload(c.token, [{ name: 'file', ...mp4(LIMIT + 1) }]);
    expect(res).toEqual({
      status: 413,
      body: { error: 'payload_too_large', message: `file is larger than ${LIMIT} bytes`, code: 413 },
    });
    expect(fs.readdirSync(path.join(dataDir.dir, 'uploads'))).toEqual([]);
    expect((await upload(c.token, [{ name: 'file', ...mp4(LIMIT) }])).status).toBe(200);
  });

  it('answers 422 for a missing, unknown or empty file or a title over 200 characters', async () => {
    const c = coach();
    const missing = await upload(c.token, [{ name: 'title', value: 'no file' }]);
    expect(missing).toEqual({
      status: 422,
      body: { detail: [{ loc: ['body', 'file'], msg: 'Field required', type: 'missing' }] },
    });
    const unknown = await upload(c.token, [
      { name: 'file', ...mp4() },
      { name: 'extra', ...png() },
    ]);
    expect(unknown.status).toBe(422);
    expect(unknown.body.detail[0].loc).toEqual(['body', 'extra']);
    // Also after every known file was sent (it was a 413 "too many files" then).
    const third = await upload(c.token, [
      { name: 'file', ...mp4() },
      { name: 'preview', ...png() },
      { name: 'extra', ...png() },
    ]);
    expect(third.status).toBe(422);
    expect(third.body.detail[0]).toMatchObject({ loc: ['body', 'extra'], type: 'extra_forbidden' });
    // A known file sent twice is refused too, rather than one of the two being kept.
    const twice = await upload(c.token, [
      { name: 'file', ...mp4() },
      { name: 'file', ...mp4() },
    ]);
    expect(twice.status).toBe(422);
    expect(twice.body.detail).toEqual([
      { loc: ['body', 'file'], msg: 'Unexpected file field', type: 'extra_forbidden' },
    ]);
    expect(fs.readdirSync(path.join(dataDir.dir, 'uploads'))).toEqual([]);
    const long = await upload(c.token, [
      { name: 'file', ...mp4() },
      { name: 'title', value: 'x'.repeat(201) },
    ]);
    expect(long.status).toBe(422);
    expect(long.body.detail[0].loc).toEqual(['body', 'title']);
    // An empty file (or preview) is nothing to play or show.
    for (const parts of [
      [{ name: 'file', ...mp4(0) }],
      [
        { name: 'file', ...mp4() },
        { name: 'preview', ...png(0) },
      ],
    ]) {
      const empty = await upload(c.token, parts);
      expect(empty.status).toBe(422);
      expect(empty.body.detail[0]).toMatchObject({
        loc: ['body', parts.at(-1)!.name],
        msg: 'The file is empty',
      });
    }
    expect(fs.readdirSync(path.join(dataDir.dir, 'uploads'))).toEqual([]);
    expect(await list(c.token)).toEqual([]);
  });

  it('reads a file field sent as empty text as no file, and answers 422 at the field for one sent with bytes but no file name', async () => {
    const c = coach();
    // `form.append('preview', previewFile ?? '')`: an empty text where a file may be is no file sent.
    const noPreview = await upload(c.token, [
      { name: 'file', ...mp4() },
      { name: 'preview', value: '' },
    ]);
    expect(noPreview).toMatchObject({ status: 200, body: { thumb: '' } });
    const id = noPreview.body.id as string;
    const kept = await send('PUT', `/api/v1/storage/video/${id}`, c.token, [
      { name: 'file', value: '' },
      { name: 'title', value: 'renamed' },
    ]);
    expect(kept).toEqual({ status: 200, body: { ...noPreview.body, title: 'renamed' } });
    const media = await send('POST', '/api/v1/storage/profile/media', c.token, [
      { name: 'file', ...png() },
      { name: 'preview', value: '' },
    ]);
    expect(media).toMatchObject({ status: 200, body: { mediaPreviewUrl: '' } });
    // The bytes sent as a text part (no file name; a client that left it out): refused at the field, not
    // "Extra inputs are not permitted" at a field the endpoint takes, nor 400 "not valid UTF-8".
    const asText = (name: string) => [
      {
        loc: ['body', name],
        msg: 'Send the file as a file part, with a file name',
        type: 'value_error',
      },
    ];
    const raw = async (method: string, url: string, part: Buffer) => {
      const res = await fetch(t.baseUrl + url, {
        method,
        body: Buffer.concat([Buffer.from('--b0undary\r\n'), part, Buffer.from('\r\n--b0undary--\r\n')]),
        headers: {
          authorization: `Bearer ${c.token}`,
          'content-type': 'multipart/form-data; boundary=b0undary',
        },
      });
      return { status: res.status, body: (await res.json()) as unknown };
    };
    const bytes = randomBytes(300);
    // So is a part without a file name typed application/octet-stream, which was dropped without a word (a
    // replace answered 200 and replaced nothing); only an empty one is a file input left empty.
    for (const type of ['video/mp4', 'application/octet-stream'])
      for (const disposition of ['', '; filename=""'])
        for (const [method, url] of [
          ['POST', '/api/v1/storage/video'],
          ['PUT', `/api/v1/storage/video/${id}`],
          ['POST', '/api/v1/storage/profile/media'],
        ] as const)
          expect([
            method,
            url,
            type,
            disposition,
            await raw(
              method,
              url,
              Buffer.concat([
                Buffer.from(
                  `Content-Disposition: form-data; name="file"${disposition}\r\nContent-Type: ${type}\r\n\r\n`,
                ),
                bytes,
              ]),
            ),
          ]).toEqual([method, url, type, disposition, { status: 422, body: { detail: asText('file') } }]);
    const emptyInput = await raw(
      'PUT',
      `/api/v1/storage/video/${id}`,
      Buffer.from(
        'Content-Disposition: form-data; name="file"; filename=""\r\nContent-Type: application/octet-stream\r\n\r\n' +
          '\r\n--b0undary\r\nContent-Disposition: form-data; name="title"\r\n\r\nbrowser',
      ),
    );
    expect(emptyInput).toEqual({ status: 200, body: { ...kept.body, title: 'browser' } });
    const textPreview = await upload(c.token, [
      { name: 'file', ...mp4() },
      { name: 'preview', value: 'thumb.png' },
    ]);
    expect(textPreview).toEqual({ status: 422, body: { detail: asText('preview') } });
    expect((await list(c.token)).map((v) => v.id)).toEqual([id]);
    expect(fs.readdirSync(path.join(dataDir.dir, 'uploads'))).toEqual([]);
  });

  it('answers 422 for a text field sent twice or with brackets, rather than dropping it', async () => {
    const c = coach();
    const twice = await upload(c.token, [
      { name: 'file', ...mp4() },
      { name: 'title', value: 'first' },
      { name: 'title', value: 'second' },
    ]);
    expect(twice.status).toBe(422);
    expect(twice.body.detail).toEqual([expect.objectContaining({ loc: ['body', 'title'] })]);
    const bracketed = await upload(c.token, [
      { name: 'file', ...mp4() },
      { name: 'description[en]', value: 'Serve drills' },
    ]);
    expect(bracketed.status).toBe(422);
    expect(bracketed.body.detail).toEqual([expect.objectContaining({ loc: ['body', 'description'] })]);
    expect(await list(c.token)).toEqual([]);
    // Profile media: `kind` sent twice must not fall back to the default and replace the profile media.
    const media = await send('POST', '/api/v1/storage/profile/media', c.token, [
      { name: 'file', ...png() },
      { name: 'kind', value: 'image' },
      { name: 'kind', value: 'image' },
    ]);
    expect(media.status).toBe(422);
    const profile = await send('POST', '/api/v1/storage/profile/media', c.token, [
      { name: 'file', ...png() },
      { name: 'kind', value: 'certificate' },
    ]);
    expect(profile.body.mediaUrl).toBe('');
    expect(fs.readdirSync(path.join(dataDir.dir, 'uploads'))).toEqual([]);
  });

  it('honours Idempotency-Key on uploads: a retry replays the first answer, another file is refused', async () => {
    const c = coach();
    const keyed = async (url: string, key: string, parts: Part[]) => {
      const form = new FormData();
      for (const p of parts)
        if (p.bytes) form.append(p.name, new Blob([p.bytes], { type: p.type }), p.filename ?? 'file');
        else form.append(p.name, p.value ?? '');
      const res = await fetch(t.baseUrl + url, {
        method: 'POST',
        body: form,
        headers: { authorization: `Bearer ${c.token}`, 'idempotency-key': key },
      });
      return {
        status: res.status,
        body: (await res.json()) as any,
        replayed: res.headers.get('idempotent-replayed'),
      };
    };
    const file = mp4();
    const key = randomUUID();
    const first = await keyed('/api/v1/storage/video', key, [{ name: 'file', ...file }]);
    expect(first).toMatchObject({ status: 200, replayed: null });
    const retry = await keyed('/api/v1/storage/video', key, [{ name: 'file', ...file }]);
    expect(retry).toEqual({ ...first, replayed: 'true' });
    const other = await keyed('/api/v1/storage/video', key, [{ name: 'file', ...mp4() }]);
    expect(other).toMatchObject({ status: 422, body: { error: 'idempotency_key_reused' } });
    expect((await list(c.token)).map((v) => v.id)).toEqual([first.body.id]);
    // The text fields in another order are the same form: replayed, not 422.
    const titled = mp4();
    const titledKey = randomUUID();
    const titledFirst = await keyed('/api/v1/storage/video', titledKey, [
      { name: 'title', value: 'Serve' },
      { name: 'description', value: 'Drills' },
      { name: 'file', ...titled },
    ]);
    expect(titledFirst.status).toBe(200);
    const titledRetry = await keyed('/api/v1/storage/video', titledKey, [
      { name: 'file', ...titled },
      { name: 'description', value: 'Drills' },
      { name: 'title', value: 'Serve' },
    ]);
    expect(titledRetry).toEqual({ ...titledFirst, replayed: 'true' });
    expect(await list(c.token)).toHaveLength(2);

    const image = png();
    const mediaKey = randomUUID();
    const parts = [
      { name: 'file', ...image },
      { name: 'kind', value: 'image' },
    ];
    expect(await keyed('/api/v1/storage/profile/media', mediaKey, parts)).toMatchObject({ status: 200 });
    expect(await keyed('/api/v1/storage/profile/media', mediaKey, parts)).toMatchObject({
      status: 200,
      replayed: 'true',
    });
    const gallery = await t.request('GET', '/api/v1/storage/profile/media', { token: c.token });
    expect(gallery.body).toHaveLength(1);
  });

  it('runs a keyed upload again after a crash with the first answer, also when the video was deleted since', async () => {
    const c = coach();
    const key = randomUUID();
    const file = mp4();
    const keyed = async () => {
      const form = new FormData();
      form.append('file', new Blob([file.bytes], { type: file.type }), file.filename ?? 'file');
      const res = await fetch(t.baseUrl + '/api/v1/storage/video', {
        method: 'POST',
        body: form,
        headers: { authorization: `Bearer ${c.token}`, 'idempotency-key': key },
      });
      return { status: res.status, body: (await res.json()) as any };
    };
    const first = await keyed();
    expect(first.status).toBe(200);
    expect(
      (await t.request('DELETE', `/api/v1/storage/video/${first.body.id}`, { token: c.token })).status,
    ).toBe(200);
    // The process died before the answer was kept: the key is claimed with no answer, past its lease.
    await t.system.deps.db.query(
      `UPDATE idempotency_keys SET status = NULL, response = NULL, created_at = now() - interval '1 hour'
       WHERE key = $1`,
      [key],
    );
    const retry = await keyed();
    expect(retry).toEqual(first);
    expect(await list(c.token)).toEqual([]);
    // The file it stored again for the run is nobody's: gone again.
    expect((await fetchBytes(first.body.url)).status).toBe(404);
  });

  it('runs a keyed upload again after a crash without putting back the file and preview replaced since', async () => {
    const c = coach();
    const key = randomUUID();
    const file = mp4();
    const preview = png();
    const keyed = async () => {
      const form = new FormData();
      form.append('file', new Blob([file.bytes], { type: file.type }), file.filename);
      form.append('preview', new Blob([preview.bytes], { type: preview.type }), preview.filename);
      const res = await fetch(t.baseUrl + '/api/v1/storage/video', {
        method: 'POST',
        body: form,
        headers: { authorization: `Bearer ${c.token}`, 'idempotency-key': key },
      });
      return { status: res.status, body: (await res.json()) as any };
    };
    const first = await keyed();
    expect(first.status).toBe(200);
    const replaced = await send('PUT', `/api/v1/storage/video/${first.body.id}`, c.token, [
      { name: 'file', ...mp4(1500) },
      { name: 'preview', ...png(60) },
    ]);
    expect(replaced.status).toBe(200);
    expect((await fetchBytes(first.body.url)).status).toBe(404);
    await t.system.deps.db.query(
      `UPDATE idempotency_keys SET status = NULL, response = NULL, created_at = now() - interval '1 hour'
       WHERE key = $1`,
      [key],
    );
    const retry = await keyed();
    expect(retry.status).toBe(200);
    // The video as it is now; the replaced file and preview stay gone (the owner replaced them).
    expect(retry.body).toEqual(replaced.body);
    expect(await list(c.token)).toEqual([replaced.body]);
    expect((await fetchBytes(first.body.url)).status).toBe(404);
    expect((await fetchBytes(first.body.thumb)).status).toBe(404);
    expect((await fetchBytes(replaced.body.url)).status).toBe(200);
  });

  it('reorders to an exact permutation, and names missing, unknown and duplicated ids otherwise', async () => {
    const c = coach();
    const a = await uploadOk(c.token, 'a');
    const b = await uploadOk(c.token, 'b');
    const d = await uploadOk(c.token, 'd');
    expect((await list(c.token)).map((v) => v.title)).toEqual(['a', 'b', 'd']);
    const ok = await t.request('PUT', '/api/v1/storage/videos/order', {
      token: c.token,
      body: { order: [d, a, b] },
    });
    expect(ok.status).toBe(200);
    expect(ok.body.map((v: { title: string }) => v.title)).toEqual(['d', 'a', 'b']);
    expect(await list(c.token)).toEqual(ok.body);

    const stranger = randomUUID();
    const bad = await t.request('PUT', '/api/v1/storage/videos/order', {
      token: c.token,
      body: { order: [d, d, stranger] },
    });
    expect(bad.status).toBe(422);
    expect(bad.body).toEqual({
      detail: [{ loc: ['body', 'order'], msg: expect.any(String), type: 'value_error' }],
    });
    expect(bad.body.detail[0].msg).toContain(`missing: ${a}, ${b}`);
    expect(bad.body.detail[0].msg).toContain(`unknown: ${stranger}`);
    expect(bad.body.detail[0].msg).toContain(`duplicated: ${d}`);
    const shape = await t.request('PUT', '/api/v1/storage/videos/order', {
      token: c.token,
      body: { order: 'x' },
    });
    expect(shape.status).toBe(422);
    expect(shape.body.detail[0].loc).toEqual(['body', 'order']);
    // An order of another type is told what is expected (it was "order lists at most 1000 ids").
    for (const order of ['x', null, { a: 1 }, Array(1001).fill(a)]) {
      const wrong = await t.request('PUT', '/api/v1/storage/videos/order', {
        token: c.token,
        body: { order },
      });
      expect(wrong.body).toEqual({
        detail: [
          {
            loc: ['body', 'order'],
            msg: 'Input should be a list of your video ids, at most 1000',
            type: 'invalid_order',
          },
        ],
      });
    }
    expect((await list(c.token)).map((v) => v.title)).toEqual(['d', 'a', 'b']);
  });

  it('replaces the file and preview: new bytes served, old blobs gone, place in the list kept', async () => {
    const c = coach();
    const first = await uploadOk(c.token, 'first');
    const before = (await list(c.token))[0]!;
    const second = await uploadOk(c.token, 'second');
    const file = { bytes: randomBytes(1234), type: 'video/webm', filename: 'new.webm' };
    const preview = png(77);
    const res = await send('PUT', `/api/v1/storage/video/${first}`, c.token, [
      { name: 'file', ...file },
      { name: 'preview', ...preview },
    ]);
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({
      id: first,
      title: 'first',
      contentType: 'video/webm',
      originFilename: 'new.webm',
      filesize: 1234,
      status: 'approved',
    });
    expect((await fetchBytes(res.body.url)).bytes.equals(file.bytes)).toBe(true);
    expect((await fetchBytes(res.body.thumb)).bytes.equals(preview.bytes)).toBe(true);
    const old = await fetchBytes(before.url);
    expect(old.status).toBe(404);
    expect(JSON.parse(old.bytes.toString())).toEqual({
      error: 'file_not_found',
      message: 'no such file',
      code: 404,
    });
    expect((await list(c.token)).map((v) => v.id)).toEqual([first, second]);

    const titled = await send('PUT', `/api/v1/storage/video/${first}`, c.token, [
      { name: 'title', value: 'renamed' },
    ]);
    expect(titled.body).toEqual({ ...res.body, title: 'renamed' });
  });

  it("never shows or changes another user's videos: 404 video_not_found, and no new blob is kept", async () => {
    const owner = coach();
    const other = coach();
    const id = await uploadOk(owner.token, 'mine');
    expect(await list(other.token)).toEqual([]);
    const blobsBefore =
      adapter === 'filesystem' ? fs.readdirSync(path.join(dataDir.dir, 'blobs', 'data')).length : 0;
    const replace = await send('PUT', `/api/v1/storage/video/${id}`, other.token, [
      { name: 'file', ...mp4() },
    ]);
    expect(replace).toEqual({
      status: 404,
      body: { error: 'video_not_found', message: `you have no video ${id}`, code: 404 },
    });
    if (adapter === 'filesystem')
      expect(fs.readdirSync(path.join(dataDir.dir, 'blobs', 'data'))).toHaveLength(blobsBefore);
    const del = await t.request('DELETE', `/api/v1/storage/video/${id}`, { token: other.token });
    expect(del.body).toEqual({ error: 'video_not_found', message: `you have no video ${id}`, code: 404 });
    const reorder = await t.request('PUT', '/api/v1/storage/videos/order', {
      token: other.token,
      body: { order: [id] },
    });
    expect(reorder.status).toBe(422);
    expect((await list(owner.token)).map((v) => v.id)).toEqual([id]);
  });

  it('deletes a video: {id, status: deleted}, its blobs removed, then 404', async () => {
    const c = coach();
    const res = await upload(c.token, [
      { name: 'file', ...mp4() },
      { name: 'preview', ...png() },
    ]);
    const del = await t.request('DELETE', `/api/v1/storage/video/${res.body.id}`, { token: c.token });
    expect(del).toMatchObject({ status: 200, body: { id: res.body.id, status: 'deleted' } });
    expect((await fetchBytes(res.body.url)).status).toBe(404);
    expect((await fetchBytes(res.body.thumb)).status).toBe(404);
    expect(await list(c.token)).toEqual([]);
    expect(
      (await t.request('DELETE', `/api/v1/storage/video/${res.body.id}`, { token: c.token })).status,
    ).toBe(404);
    expect((await t.request('DELETE', '/api/v1/storage/video/not-a-uuid', { token: c.token })).status).toBe(
      422,
    );
  });

  it('keeps the stored order a permutation of the videos under concurrent uploads, deletes and reorders', async () => {
    const c = coach();
    const initial = await Promise.all(Array.from({ length: 6 }, (_, i) => uploadOk(c.token, `v${i}`)));
    const urlOf = new Map((await list(c.token)).map((v) => [v.id, v.url]));
    const current = async () => (await list(c.token)).map((v) => v.id);
    const uploads: Promise<number>[] = [];
    const others: Promise<number>[] = [];
    for (let i = 0; i < 8; i++) {
      uploads.push(upload(c.token, [{ name: 'file', ...mp4(100) }]).then((r) => r.status));
      if (i < 3)
        others.push(
          t
            .request('DELETE', `/api/v1/storage/video/${initial[i]}`, { token: c.token })
            .then((r) => r.status),
        );
      others.push(
        current().then(async (ids) => {
          const r = await t.request('PUT', '/api/v1/storage/videos/order', {
            token: c.token,
            body: { order: [...ids].reverse() },
          });
          return r.status;
        }),
      );
    }
    expect(await Promise.all(uploads)).toEqual(Array(8).fill(200));
    const statuses = await Promise.all(others);
    // Deletes succeed; a reorder either applies or is refused (the list changed under it); never a 500.
    expect(statuses.slice(0, 6).filter((s) => s === 200).length).toBeGreaterThanOrEqual(3);
    expect(statuses.every((s) => [200, 409, 422].includes(s))).toBe(true);

    const finalIds = await current();
    // The read model agrees with the write model, and the order is a permutation of the surviving videos.
    expect(finalIds).toEqual(await writeModelOrder(c.id));
    expect(new Set(finalIds).size).toBe(finalIds.length);
    expect(finalIds).toHaveLength(3 + 8);
    for (const id of initial.slice(0, 3)) expect(finalIds).not.toContain(id);
    for (const id of initial.slice(3)) expect(finalIds).toContain(id);
    // A permutation of exactly these is accepted.
    const reversed = [...finalIds].reverse();
    const last = await t.request('PUT', '/api/v1/storage/videos/order', {
      token: c.token,
      body: { order: reversed },
    });
    expect(last.status).toBe(200);
    expect(await current()).toEqual(reversed);
    // Blobs: the deleted videos' files are gone, every listed file is served.
    for (const id of initial.slice(0, 3)) expect((await fetchBytes(urlOf.get(id)!)).status).toBe(404);
    for (const v of await list(c.token)) expect((await fetchBytes(v.url)).status).toBe(200);
  });

  it('14: stores profile media for any user and answers UserProfileOut', async () => {
    const id = randomUUID();
    const token = t.token(id, ['client']);
    const file = png(900);
    const res = await send('POST', '/api/v1/storage/profile/media', token, [{ name: 'file', ...file }]);
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      id,
      gender: '',
      birthDate: null,
      timezone: 'UTC',
      firstName: '',
      lastName: '',
      description: '',
      languages: [],
      experience: 0,
      requiresParking: false,
      type: 'guest',
      username: '',
      phone: '',
      email: '',
      verifiedPhone: false,
      verifiedEmail: false,
      available: true,
      verified: false,
      avatarUrl: '',
      mediaType: 'image',
      mediaUrl: expect.stringMatching(/^\/api\/v1\/storage\/files\/media_[0-9a-f-]{36}\.png$/),
      mediaPreviewUrl: '',
      sessionCount: 0,
      totalPayment: 0,
      totalPaymentCurrency: '',
      profileCompletion: 9,
    });
    expect((await fetchBytes(res.body.mediaUrl)).bytes.equals(file.bytes)).toBe(true);
    const pdf = await send('POST', '/api/v1/storage/profile/media', token, [
      { name: 'file', bytes: randomBytes(10), type: 'application/pdf', filename: 'cv.pdf' },
    ]);
    expect(pdf.status).toBe(415);
    const anon = await send('POST', '/api/v1/storage/profile/media', null, [{ name: 'file', ...file }]);
    expect(anon.status).toBe(401);
  });

  it("14 and 13: a coach's media and videos appear on the public coach profile; old media is deleted", async () => {
    const c = coach();
    const svc = t.token(randomUUID(), ['service']);
    const put = await t.request('PUT', `/api/v1/users/${c.id}`, {
      token: svc,
      body: { firstName: 'Ana', lastName: 'Lima', email: `a${c.id.slice(0, 6)}@example.com`, type: 'coach' },
    });
    expect(put.status).toBe(200);
    const first = await send('POST', '/api/v1/storage/profile/media', c.token, [{ name: 'file', ...mp4() }]);
    const clip = mp4(2222);
    const preview = png();
    const media = await send('POST', '/api/v1/storage/profile/media', c.token, [
      { name: 'file', ...clip },
      { name: 'preview', ...preview },
    ]);
    expect(media.status).toBe(200);
    expect(media.body).toMatchObject({ id: c.id, type: 'coach', firstName: 'Ana', mediaType: 'video' });
    expect((await fetchBytes(first.body.mediaUrl)).status).toBe(404);
    expect((await fetchBytes(media.body.mediaPreviewUrl)).bytes.equals(preview.bytes)).toBe(true);
    const v1 = await uploadOk(c.token, 'one');
    const v2 = await uploadOk(c.token, 'two');
    await t.request('PUT', '/api/v1/storage/videos/order', { token: c.token, body: { order: [v2, v1] } });
    const profile = await t.request('GET', `/api/v1/coach/${c.id}/profile`);
    expect(profile.status).toBe(200);
    expect(profile.body).toMatchObject({
      mediaType: 'video',
      mediaUrl: media.body.mediaUrl,
      mediaPreviewUrl: media.body.mediaPreviewUrl,
    });
    expect(profile.body.videos).toEqual(await list(c.token));
    expect(profile.body.videos.map((v: { id: string }) => v.id)).toEqual([v2, v1]);
  });
});

describe('temporary files of a process that died mid-upload', () => {
  it('a start removes the uploads and half-written blobs left long ago, not fresh ones', async () => {
    const dataDir = await tempDataDir();
    try {
      const uploads = path.join(dataDir.dir, 'uploads');
      const blobTmp = path.join(dataDir.dir, 'blobs', 'tmp');
      const old = new Date(Date.now() - 7 * 60 * 60 * 1000);
      for (const dir of [uploads, blobTmp]) {
        fs.mkdirSync(dir, { recursive: true });
        fs.writeFileSync(path.join(dir, 'left-by-a-crash'), randomBytes(1000));
        fs.utimesSync(path.join(dir, 'left-by-a-crash'), old, old);
        fs.writeFileSync(path.join(dir, 'being-written'), randomBytes(10));
      }
      const t = await startTestSystem({ env: { DATA_DIR: dataDir.dir } });
      try {
        expect(fs.readdirSync(uploads)).toEqual(['being-written']);
        expect(fs.readdirSync(blobTmp)).toEqual(['being-written']);
      } finally {
        await t.close();
      }
    } finally {
      await dataDir.close();
    }
  });
});
