/**
 * `outboxAdmin` mounted in a small Hono app of the test's own, the way a user mounts it, over a
 * real database; and a browser-like sign-in through its form.
 */
import { Hono } from 'hono';
import { expect } from 'vitest';
import { type OutboxAdminOptions, outboxAdmin } from '../../src/admin/index.js';
import { drainOnce } from '../../src/core/drain.js';
import { PermanentDeliveryError } from '../../src/core/errors.js';
import type { JsonValue } from '../../src/core/message.js';
import { pgExecutor } from '../../src/drivers/node-pg.js';
import { createOutbox } from '../../src/outbox.js';
import type { TestDatabase } from '../support/database.js';

export const ADMIN_TOKEN = 'admin-token-for-tests-0123456789';
export const KIND = 'demo.notify';
export const OTHER_KIND = 'demo.other';
export const outbox = createOutbox({ kinds: { [KIND]: true, [OTHER_KIND]: true } });

/** A client address the test picks per request, so throttling tests do not share a record. */
export const CLIENT_HEADER = 'x-test-client';

export function mountAdmin(
  database: TestDatabase,
  options: Partial<OutboxAdminOptions> & { at?: string } = {},
): Hono {
  const { at = '/admin', ...rest } = options;
  const app = new Hono();
  app.get('/host', (c) => c.text('the host app'));
  app.route(
    at,
    outboxAdmin({
      store: outbox.store(pgExecutor(database.pool)),
      token: ADMIN_TOKEN,
      clientAddress: (c) => c.req.header(CLIENT_HEADER),
      ...rest,
    }),
  );
  return app;
}

export function form(fields: Record<string, string>, headers: Record<string, string> = {}) {
  return {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded', ...headers },
    body: new URLSearchParams(fields).toString(),
  };
}

export interface SignedIn {
  /** The `Cookie` request header value. */
  cookie: string;
  /** The raw `Set-Cookie` the sign-in answered with. */
  setCookie: string;
  /** The CSRF token the signed-in page embeds in its forms. */
  csrf: string;
}

/** Signs in through the token form at `base`, then reads the CSRF token from the page. */
export async function signIn(app: Hono, base = '/admin', client = 'signer'): Promise<SignedIn> {
  const response = await app.request(
    `${base}/login`,
    form({ token: ADMIN_TOKEN }, { [CLIENT_HEADER]: client }),
  );
  expect(response.status).toBe(303);
  const setCookie = response.headers.get('set-cookie') ?? '';
  const cookie = setCookie.split(';')[0]!;
  const page = await (await app.request(base || '/', { headers: { cookie } })).text();
  const csrf = /name="csrf" value="([^"]+)"/.exec(page)?.[1];
  expect(csrf).toBeDefined();
  return { cookie, setCookie, csrf: csrf! };
}

/** Enqueues one message per error and drains just those, so each ends dead with that error. */
export async function deadMessages(
  database: TestDatabase,
  errors: string[],
  payload: (index: number) => JsonValue = (index) => ({ index }),
): Promise<{ ids: string[]; keys: string[] }> {
  const db = pgExecutor(database.pool);
  const keys = await outbox.enqueue(
    db,
    errors.map((_, index) => ({ kind: KIND, payload: payload(index) })),
  );
  await drainOnce({
    store: outbox.store(db),
    keys,
    senders: {
      [KIND]: async (message) => {
        throw new PermanentDeliveryError(errors[keys.indexOf(message.key)] ?? 'no');
      },
    },
  });
  const { rows } = await database.pool.query<{ id: string; state: string }>(
    'SELECT id::text, state FROM outbox.all_messages WHERE key = ANY($1::uuid[]) ORDER BY id',
    [keys],
  );
  expect(rows.map((row) => row.state)).toEqual(errors.map(() => 'dead'));
  return { ids: rows.map((row) => row.id), keys };
}

/** Enqueues messages of `kind` and delivers them; returns their keys in enqueue order. */
export async function deliveredMessages(
  database: TestDatabase,
  kind: string,
  count: number,
): Promise<string[]> {
  const db = pgExecutor(database.pool);
  const keys = await outbox.enqueue(
    db,
    Array.from({ length: count }, (_, index) => ({ kind, payload: { index } })),
  );
  const report = await drainOnce({
    store: outbox.store(db),
    keys,
    senders: { [kind]: async () => {} },
  });
  expect(report.delivered).toBe(count);
  return keys;
}

export async function stateOf(database: TestDatabase, id: string): Promise<string | undefined> {
  const { rows } = await database.pool.query<{ state: string }>(
    'SELECT state FROM outbox.all_messages WHERE id = $1',
    [id],
  );
  return rows[0]?.state;
}

/** The state of each of `ids` (messages and history), in the order given; `missing` for none. */
export async function statesOf(database: TestDatabase, ids: string[]): Promise<string[]> {
  const { rows } = await database.pool.query<{ id: string; state: string }>(
    'SELECT id::text, state FROM outbox.all_messages WHERE id = ANY($1::bigint[])',
    [ids],
  );
  return ids.map((id) => rows.find((row) => row.id === id)?.state ?? 'missing');
}
