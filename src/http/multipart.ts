import fs from 'node:fs';
import fsp from 'node:fs/promises';
import path from 'node:path';
import { createHash } from 'node:crypto';
import { pipeline } from 'node:stream/promises';
import type { Context, Middleware } from 'koa';
import multer from '@koa/multer';
import { HttpError, ValidationError, type ValidationIssue } from './errors';
import { badText } from './hygiene';
import { honouringKey, idempotent } from './idempotency';
import type { Config } from '../config';
import type { Database } from '../db/database';

export type UploadedFile = multer.File;

export interface FilePart {
  /** Field name. */
  name: string;
  /** Accepted content types: `video/*`-style prefixes (ending in `/`) or exact types. */
  accept: string[];
  required?: boolean;
}

const accepts = (accept: string[], type: string) =>
  accept.some((a) => (a.endsWith('/') ? type.startsWith(a) : type === a));

/**
 * Browsers send a part's filename as raw UTF-8; busboy reads it as Latin-1 unless told ("Ãœber" for
 * "Über"). Multer passes the option on; its type definitions lack it.
 */
const UTF8_FILENAMES = { defParamCharset: 'utf8' };

/**
 * The name a part's `filename` leaves once its path is removed (`../x/a.mp4` and `C:\clips\a.mp4` are
 * `a.mp4`), or `''` when nothing is left (`..`, `.`, `clips/`). busboy strips paths itself unless told to
 * keep them, and multer then dropped a part left with no name without a word: a replace whose file was
 * named `..` answered 200 and replaced nothing. The path is kept (`preservePath`) and removed here instead,
 * so such a part is refused (422) rather than ignored.
 */
const KEEP_PATHS = { preservePath: true };
export function baseName(filename: string): string {
  const base = filename.slice(Math.max(filename.lastIndexOf('/'), filename.lastIndexOf('\\')) + 1);
  return base === '.' || base === '..' ? '' : base;
}

/** What `readMultipart` watches of busboy: the file parts, with their name as sent (or none). */
interface NamelessWatch extends NodeJS.WritableStream {
  on(
    event: 'file',
    listener: (name: string, stream: NodeJS.ReadableStream, info: { filename?: string }) => void,
  ): this;
}

const MULTIPART = Symbol('multipart');

/**
 * Marks an upload route (put it in the route's middleware list): the app lets multipart/form-data bodies
 * through to these routes only; every other route reads JSON (see `requireJsonBody`). `keyed`: the route
 * runs its work through `idempotentUpload`, so it honours `Idempotency-Key` (the OpenAPI document says so).
 */
export const multipartRoute = (opts: { keyed?: boolean } = {}): Middleware => {
  const mark = Object.assign<Middleware, { [MULTIPART]: true }>(async (_ctx, next) => next(), {
    [MULTIPART]: true,
  });
  return opts.keyed ? honouringKey(mark) : mark;
};

/** Whether a route's middleware stack holds `multipartRoute()`. */
export const takesMultipart = (stack: readonly unknown[]): boolean =>
  stack.some((mw) => (mw as { [MULTIPART]?: true } | null)?.[MULTIPART] === true);

/**
 * Reads a multipart/form-data request with @koa/multer: files go to temporary files under `tmpDir`
 * (never whole into memory), each at most `maxBytes`. Answers 415 `unsupported_media_type` for a body
 * that is not multipart or a file of a type not accepted, 413 `payload_too_large` beyond the limits,
 * 422 for an unknown, missing or empty file field, 400 for a malformed body. Text fields come back as strings.
 * The caller must call `cleanup()` (temporary files) in a `finally`.
 */
export async function readMultipart(
  ctx: Context,
  opts: { tmpDir: string; maxBytes: number; files: FilePart[] },
): Promise<{
  fields: Record<string, string>;
  files: Record<string, UploadedFile>;
  cleanup(): Promise<void>;
}> {
  if (!ctx.is('multipart/form-data'))
    throw new HttpError(415, 'unsupported_media_type', 'send the upload as multipart/form-data');
  // An empty boundary (`boundary=`) is no boundary (RFC 2046: 1 to 70 characters), yet busboy reads the body
  // with it as holding no parts: a replace sent so answered 200 and changed nothing.
  const boundary = /;\s*boundary\s*=\s*(?:"([^"]*)"|([^;\s]*))/i.exec(ctx.get('content-type'));
  if (boundary && !(boundary[1] ?? boundary[2]))
    throw new HttpError(400, 'bad_request', 'malformed multipart body (the boundary is empty)');
  // A part of a file field without a file name typed application/octet-stream reaches multer as a file,
  // which it drops without a word: a replace answered 200 and replaced nothing. Those with bytes in them are
  // noted here (an empty one is a file input left empty, no file sent). Multer's types lack the option.
  const nameless = new Set<string>();
  const watchNameless = {
    streamHandler: (req: NodeJS.ReadableStream, busboy: NamelessWatch) => {
      busboy.on('file', (name, stream, info) => {
        if (!info.filename && opts.files.some((f) => f.name === name))
          stream.once('data', () => nameless.add(name));
      });
      req.pipe(busboy);
    },
  };
  const upload = multer({
    storage: multer.diskStorage({ destination: opts.tmpDir }),
    ...UTF8_FILENAMES,
    ...KEEP_PATHS,
    ...watchNameless,
    limits: {
      fileSize: opts.maxBytes,
      // No count of files: an extra one is an unknown or repeated field, 422 from `fields()` below (a
      // count made it a 413 once the known ones were in); `parts` bounds them all.
      fields: 20,
      fieldSize: 64 * 1024,
      parts: 30,
    },
    fileFilter: (_req, file, cb) => {
      const part = opts.files.find((f) => f.name === file.fieldname);
      if (part && !accepts(part.accept, file.mimetype.toLowerCase()))
        return cb(
          new HttpError(
            415,
            'unsupported_media_type',
            `${file.fieldname} must be ${part.accept.map((a) => (a.endsWith('/') ? `${a}*` : a)).join(' or ')}, got ${file.mimetype}`,
          ) as unknown as null,
          false,
        );
      cb(null, true);
    },
  });
  try {
    await upload.fields(opts.files.map((f) => ({ name: f.name, maxCount: 1 })))(ctx, async () => undefined);
  } catch (err) {
    throw multerErrorToHttp(err, opts.maxBytes);
  }
  const given = (ctx.request.files ?? {}) as Record<string, UploadedFile[]>;
  const files: Record<string, UploadedFile> = {};
  for (const [name, list] of Object.entries(given)) if (list[0]) files[name] = list[0];
  const cleanup = async () => {
    await Promise.all(Object.values(files).map((f) => fsp.rm(f.path, { force: true })));
  };
  // A file field that came as text: a part without a file name (busboy reads it so, and `filename=""` too
  // unless typed application/octet-stream). Empty (`form.append('preview', file ?? '')`), it is no file
  // sent, as an empty file input is; else the file's bytes were sent as text, which was answered "Extra
  // inputs are not permitted" at a field the endpoint takes, or 400 "not valid UTF-8". So is one dropped
  // above with bytes in it.
  const text = (ctx.request.body ?? {}) as Record<string, unknown>;
  const asText: ValidationIssue[] = [];
  for (const { name } of opts.files) {
    const sentAsText = Object.prototype.hasOwnProperty.call(text, name) && text[name] !== undefined;
    if (sentAsText && text[name] === '') delete text[name];
    else if (sentAsText || nameless.has(name))
      asText.push({
        loc: ['body', name],
        msg: 'Send the file as a file part, with a file name',
        type: 'value_error',
      });
  }
  if (asText.length) {
    await cleanup();
    throw new ValidationError(asText);
  }
  // Text that was not UTF-8 (or not in the charset its part names) reaches us decoded with U+FFFD in place
  // of each byte that could not be read: "René" sent in Latin-1 was stored as "Ren\ufffd" and answered 200.
  // The replacement character is the only trace busboy leaves, so it is refused wherever it stands (400, as
  // for a JSON body that is not UTF-8); a part naming a charset nothing can decode came back as no value.
  const unreadable = notUtf8(files, ctx.request.body);
  if (unreadable) {
    await cleanup();
    throw unreadable;
  }
  const missing = opts.files.filter((f) => f.required && !files[f.name]);
  if (missing.length) {
    await cleanup();
    throw new ValidationError(
      missing.map((f) => ({ loc: ['body', f.name], msg: 'Field required', type: 'missing' })),
    );
  }
  // A file name is stored (title, originFilename) like any text of the body, so the same hygiene applies
  // (`filename*=UTF-8''a%00b` carries a NUL, which PostgreSQL refuses: it was a 500).
  // An empty file is no video or picture: refused rather than listed with nothing to play or show.
  const badNames = Object.entries(files).flatMap(([name, f]): ValidationIssue[] => {
    f.originalname = baseName(f.originalname);
    if (!f.originalname)
      return [
        { loc: ['body', name], msg: 'The file name is empty once its path is removed', type: 'value_error' },
      ];
    if (f.size === 0) return [{ loc: ['body', name], msg: 'The file is empty', type: 'value_error' }];
    const msg = badText(f.originalname);
    return msg ? [{ loc: ['body', name], msg: `File name: ${msg}`, type: 'string_invalid_text' }] : [];
  });
  if (badNames.length) {
    await cleanup();
    throw new ValidationError(badNames);
  }
  // A field sent twice, or named with brackets (`title[en]`), arrives as an array or object: refused, not
  // dropped (a dropped `kind` fell back to its default and replaced the profile media).
  const fields: Record<string, string> = {};
  const notText: ValidationIssue[] = [];
  for (const [k, v] of Object.entries((ctx.request.body ?? {}) as Record<string, unknown>))
    if (typeof v === 'string') fields[k] = v;
    else
      notText.push({
        loc: ['body', k],
        msg: 'Input should be one text value (sent once, without brackets in its name)',
        type: 'invalid_string',
      });
  if (notText.length) {
    await cleanup();
    throw new ValidationError(notText);
  }
  return { fields, files, cleanup };
}

const REPLACEMENT = '\ufffd';

/** The 400 (or 415, for a charset that cannot be decoded) for a form whose text is not UTF-8, or null. */
function notUtf8(files: Record<string, UploadedFile>, body: unknown): HttpError | null {
  const refuse = (what: string) =>
    new HttpError(
      400,
      'bad_request',
      `${what} is not valid UTF-8 (or holds U+FFFD, the character bytes that cannot be read become): send the form's text and file names in UTF-8`,
    );
  for (const [name, f] of Object.entries(files))
    if (f.originalname.includes(REPLACEMENT)) return refuse(`the name of the file in ${name}`);
  for (const [k, v] of Object.entries((body ?? {}) as Record<string, unknown>)) {
    if (v === undefined)
      return new HttpError(
        415,
        'unsupported_media_type',
        `${k} names a charset the service cannot read (send the form's text in UTF-8)`,
      );
    if (typeof v === 'string' && v.includes(REPLACEMENT)) return refuse(k);
  }
  return null;
}

function multerErrorToHttp(err: unknown, maxBytes: number): Error {
  if (err instanceof HttpError) return err;
  const e = err as { name?: string; code?: string; field?: string; message?: string };
  if (e?.name === 'MulterError') {
    switch (e.code) {
      case 'LIMIT_FILE_SIZE':
        return new HttpError(
          413,
          'payload_too_large',
          `${e.field ?? 'a file'} is larger than ${maxBytes} bytes`,
        );
      case 'LIMIT_FIELD_VALUE':
      case 'LIMIT_PART_COUNT':
      case 'LIMIT_FIELD_COUNT':
      case 'LIMIT_FILE_COUNT':
        return new HttpError(413, 'payload_too_large', `the upload is too large (${e.message})`);
      case 'LIMIT_UNEXPECTED_FILE':
        return new ValidationError([
          { loc: ['body', e.field ?? ''], msg: 'Unexpected file field', type: 'extra_forbidden' },
        ]);
      default:
        return new HttpError(400, 'bad_request', `malformed multipart body (${e.message})`);
    }
  }
  // busboy's parse errors (truncated body, bad boundary) are the client's.
  if (e instanceof Error && !('status' in e) && !/^E[A-Z]+$/.test((e as { code?: string }).code ?? ''))
    return new HttpError(400, 'bad_request', `malformed multipart body (${e.message})`);
  return err as Error;
}

const sha256Of = async (file: string) => {
  const hash = createHash('sha256');
  await pipeline(fs.createReadStream(file), hash);
  return hash.digest('hex');
};

/**
 * `Idempotency-Key` for an upload route: runs `run` (the rest of the route, after `readMultipart`) under
 * the key as `idempotent` does for JSON commands. The request the key stands for is the form: its text
 * fields and each file's name, type, size and SHA-256 (a multipart body is read only by the route, so the
 * middleware cannot hash it). Ids made inside `run` are the key's, so a retry after a crash names the
 * same video and the same blobs.
 */
export async function idempotentUpload(
  deps: { db: Database; config: Pick<Config, 'idempotencyLeaseMs'> },
  ctx: Context,
  form: { fields: Record<string, string>; files: Record<string, UploadedFile> },
  run: () => Promise<void>,
): Promise<void> {
  if (!ctx.get('idempotency-key')) return run();
  const files: Record<string, unknown> = {};
  for (const [name, f] of Object.entries(form.files).sort(([a], [b]) => a.localeCompare(b)))
    files[name] = { name: f.originalname, type: f.mimetype, size: f.size, sha256: await sha256Of(f.path) };
  ctx.request.body = { fields: form.fields, files };
  await idempotent(deps)(ctx, run);
}

/** Where uploads wait until they are stored: DATA_DIR/uploads. */
export const uploadTmpDir = (dataDir: string) => path.join(dataDir, 'uploads');
