import http from 'node:http';

/**
 * GET `path` with headers sent exactly as listed (name, value, name, value, ...), repeats included, which
 * fetch would fold into one: for what a proxy or a hostile client can send. Host is added first.
 */
export function getWithRawHeaders(
  baseUrl: string,
  path: string,
  headers: string[],
): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = http.request(`${baseUrl}${path}`, { headers: ['Host', new URL(baseUrl).host, ...headers] });
    req.on('response', (res) => {
      let body = '';
      res.on('data', (d: Buffer) => (body += d.toString()));
      res.on('end', () => resolve({ status: res.statusCode!, body }));
    });
    req.on('error', reject);
    req.end();
  });
}
