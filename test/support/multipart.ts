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
  return { status: res.status, body: text ? JSON.parse(text) : undefined, headers: res.headers };
}
