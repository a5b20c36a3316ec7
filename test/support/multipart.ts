import { answerChecker, type AnswerCheck } from './openapiCheck';

/** One checker per running service: its /openapi.json, fetched once. */
const checkers = new Map<string, Promise<AnswerCheck>>();
const checkerOf = (baseUrl: string) => {
  let check = checkers.get(baseUrl);
  if (!check) {
    check = fetch(`${baseUrl}/openapi.json`).then(async (r) =>
      answerChecker((await r.json()) as Record<string, any>),
    );
    checkers.set(baseUrl, check);
  }
  return check;
};

/** One part of a multipart form: a file (`bytes`, with its type and name) or a text field (`value`). */
export type FormPart = { name: string; bytes?: Buffer; type?: string; filename?: string; value?: string };

/** A real multipart/form-data request (Node's FormData and Blob through fetch), its answer parsed. */
export async function sendForm(
  baseUrl: string,
  method: string,
  path: string,
  token: string | null,
  parts: FormPart[],
): Promise<{ status: number; body: any; headers: Headers }> {
  const form = new FormData();
  for (const p of parts)
    if (p.bytes) form.append(p.name, new Blob([p.bytes], { type: p.type }), p.filename ?? 'file');
    else form.append(p.name, p.value ?? '');
  const res = await fetch(baseUrl + path, {
    method,
    body: form,
    headers: token ? { authorization: `Bearer ${token}` } : {},
  });
  const text = await res.text();
  const body: unknown = text ? JSON.parse(text) : undefined;
  // An upload's answer must be what /openapi.json says, as every `t.request` answer (test/support/system.ts).
  (await checkerOf(baseUrl))(method, path, res.status, res.headers.get('content-type'), body);
  return { status: res.status, body, headers: res.headers };
}
