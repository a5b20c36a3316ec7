/**
 * The peer for the HTTP figures: bare Koa + node-postgres, no auth, no events, no read models. POST
 * /book/:key inserts one row (a unique key per slot, as a booking table would have) and answers it; GET
 * /item/:key selects one row by primary key and answers it. Same pool size as the service (10).
 * GET /answer/:key does the same for a body the bench gave it over IPC ('answers'): the service's own
 * availability answers, so that the cost of an answer's size can be told apart from the service's.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import Koa from 'koa';
import Router from '@koa/router';
import { bodyParser } from '@koa/bodyparser';
import { Pool } from 'pg';

async function main() {
  const pool = new Pool({ connectionString: process.env.DATABASE_URL, max: 10 });
  await pool.query(`CREATE TABLE IF NOT EXISTS bare_bookings (
    id uuid PRIMARY KEY DEFAULT gen_random_uuid(), resource text NOT NULL, slot text NOT NULL,
    client text NOT NULL, body jsonb NOT NULL, UNIQUE (resource, slot))`);
  await pool.query(`CREATE TABLE IF NOT EXISTS bare_items (key text PRIMARY KEY, body jsonb NOT NULL)`);
  await pool.query(`CREATE TABLE IF NOT EXISTS bare_answers (key text PRIMARY KEY, body jsonb NOT NULL)`);
  await pool.query(
    `INSERT INTO bare_items SELECT 'item-' || i, jsonb_build_object('name', 'item ' || i, 'price', i, 'tags',
       jsonb_build_array('a', 'b'), 'description', repeat('x', 200)) FROM generate_series(0, 999) i
     ON CONFLICT DO NOTHING`,
  );
  const router = new Router();
  router.post('/book/:resource', async (ctx) => {
    const body = ctx.request.body as { slots: string[]; client: string };
    const res = await pool.query(
      'INSERT INTO bare_bookings (resource, slot, client, body) VALUES ($1, $2, $3, $4) RETURNING id, slot',
      [ctx.params.resource, body.slots[0], body.client, JSON.stringify(body)],
    );
    ctx.body = res.rows;
  });
  router.get('/item/:key', async (ctx) => {
    const res = await pool.query('SELECT body FROM bare_items WHERE key = $1', [ctx.params.key]);
    ctx.body = res.rows[0]?.body ?? {};
  });
  router.get('/answer/:key', async (ctx) => {
    const res = await pool.query('SELECT body FROM bare_answers WHERE key = $1', [ctx.params.key]);
    ctx.body = res.rows[0]?.body ?? {};
  });
  const app = new Koa();
  app.use(bodyParser());
  app.use(router.routes());
  const server = http.createServer(app.callback());
  server.keepAliveTimeout = 65_000;
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  process.on('message', (msg: { cmd: string; bodies?: unknown[] }) => {
    if (msg.cmd === 'answers') {
      const bodies = msg.bodies ?? [];
      void pool
        .query(
          `INSERT INTO bare_answers SELECT 'answer-' || (i - 1), b FROM unnest($1::jsonb[]) WITH ORDINALITY AS t(b, i)
           ON CONFLICT (key) DO UPDATE SET body = EXCLUDED.body`,
          [bodies.map((b) => JSON.stringify(b))],
        )
        .then(() => process.send!({ stored: bodies.length }));
    } else if (msg.cmd === 'stop') {
      server.close();
      void pool.end().then(() => process.exit(0));
    }
  });
  process.send!({ port: (server.address() as AddressInfo).port });
}

void main();
