import { beforeAll, describe, expect, it } from 'vitest';
import { createApp } from '../../examples/reference-service/app.js';
import { type AppDeps, ORDER_PLACED_KIND } from '../../examples/reference-service/app-deps.js';
import { migrations as appMigrations } from '../../examples/reference-service/migrations.generated.js';
import { PermanentDeliveryError } from '../../src/core/errors.js';
import type { BatchSqlExecutor, Statement } from '../../src/core/ports.js';
import { pgExecutor } from '../../src/drivers/node-pg.js';
import { createOutbox } from '../../src/outbox.js';
import { createDrainer } from '../../src/runtime/drainer.js';
import { migrate } from '../../src/store/migrate.js';
import { useTestDatabase } from '../support/database.js';
import { fakeClock, recordingSender } from '../support/drain-fixtures.js';
import { useDriver } from '../support/drivers.js';
import { waitFor } from '../support/wait-for.js';
import { post } from './json-request.js';

const database = useTestDatabase();
const outbox = createOutbox({ kinds: { [ORDER_PLACED_KIND]: true } });
const ADMIN_TOKEN = 'admin-token-for-tests';

beforeAll(async () => {
  await migrate(pgExecutor(database.pool), { schema: 'app', migrations: appMigrations });
});

async function rowCounts() {
  const { rows } = await database.pool.query(`
    SELECT (SELECT count(*)::int FROM app.users) AS users,
           (SELECT count(*)::int FROM app.orders) AS orders,
           (SELECT count(*)::int FROM outbox.all_messages) AS messages,
           (SELECT count(*)::int FROM app.idempotency_keys) AS idempotency_keys`);
  return rows[0] as { users: number; orders: number; messages: number; idempotency_keys: number };
}

let emailCounter = 0;
const uniqueEmail = () => `user${++emailCounter}-${Date.now()}@example.com`;

/** Places a failing statement right before the outbox write, inside the same batch. */
function faultBeforeOutboxWrite(db: BatchSqlExecutor): BatchSqlExecutor {
  return {
    query: (text, params) => db.query(text, params),
    batch(statements: readonly Statement[]) {
      const faulted = statements.flatMap((statement) =>
        statement.name === 'enqueueMessages'
          ? [{ name: 'injectedFault', text: 'SELECT 1 / 0', params: [] }, statement]
          : [statement],
      );
      return db.batch(faulted);
    },
  };
}

describe.each(['neon-ws', 'neon-http'] as const)('reference service through %s', (driverName) => {
  const driver = useDriver(driverName, database);
  const app = (overrides: Partial<AppDeps> = {}) =>
    createApp({ db: driver.db, outbox, adminToken: ADMIN_TOKEN, ...overrides });

  it('POST /signups writes the user and the welcome email in one transaction', async () => {
    const email = uniqueEmail();
    const response = await app().request('/signups', post({ email, name: 'Ada' }));
    expect(response.status).toBe(201);
    const body = await response.json();
    expect(body.user).toMatchObject({ email, name: 'Ada' });
    const { rows } = await database.pool.query(
      'SELECT kind, payload FROM outbox.all_messages WHERE key = $1',
      [body.messageKeys[0]],
    );
    expect(rows[0]).toMatchObject({ kind: 'email', payload: { to: [email] } });
  });

  it('a fault between the domain insert and the outbox insert leaves neither row', async () => {
    const before = await rowCounts();
    const email = uniqueEmail();
    const response = await app({ db: faultBeforeOutboxWrite(driver.db) }).request(
      '/signups',
      post({ email, name: 'Grace' }),
    );
    expect(response.status).toBe(500);
    const body = await response.json();
    expect(body).toEqual({ error: 'internal error', requestId: expect.any(String) });
    expect(JSON.stringify(body)).not.toMatch(/division|SELECT/i);
    expect(await rowCounts()).toEqual(before);
  });

  it('rejects bad input with a 400 naming the field, and writes nothing', async () => {
    const before = await rowCounts();
    const cases: [unknown, (string | number)[]][] = [
      [{ email: 'not-an-email', name: 'X' }, ['email']],
      [{ email: uniqueEmail() }, ['name']],
    ];
    for (const [body, path] of cases) {
      const response = await app().request('/signups', post(body));
      expect(response.status).toBe(400);
      const json = await response.json();
      expect(json.issues.map((issue: { path: unknown }) => issue.path)).toContainEqual(path);
    }
    const badItems = await app().request(
      '/orders',
      post({
        userId: crypto.randomUUID(),
        items: [{ sku: 'A', qty: 0, unitPriceCents: 1 }],
      }),
    );
    expect(badItems.status).toBe(400);
    expect((await badItems.json()).issues[0].path).toEqual(['items', 0, 'qty']);
    const malformed = await app().request('/signups', post('{"email": '));
    expect(malformed.status).toBe(400);
    expect((await malformed.json()).error).toMatch(/JSON/i);
    const huge = await app().request(
      '/signups',
      post({ email: uniqueEmail(), name: 'x'.repeat(70_000) }),
    );
    expect(huge.status).toBe(413);
    expect(await rowCounts()).toEqual(before);
  });

  it('answers 404 JSON for an unknown route, and 409 naming the field for a taken email', async () => {
    const missing = await app().request('/nope');
    expect(missing.status).toBe(404);
    expect(await missing.json()).toMatchObject({ error: expect.stringMatching(/no route/) });

    const email = uniqueEmail();
    await app().request('/signups', post({ email, name: 'First' }));
    const before = await rowCounts();
    const again = await app().request('/signups', post({ email, name: 'Second' }));
    expect(again.status).toBe(409);
    expect((await again.json()).issues[0].path).toEqual(['email']);
    expect(await rowCounts()).toEqual(before);
  });

  it('POST /orders writes the order, its items, an email and a webhook per subscriber', async () => {
    const endpoint = await app().request(
      '/webhook-endpoints',
      post(
        { url: 'https://hooks.example.com/orders', events: ['order.created'] },
        { authorization: `Bearer ${ADMIN_TOKEN}` },
      ),
    );
    expect(endpoint.status).toBe(201);
    const { endpoint: created, secret } = await endpoint.json();
    expect(secret).toMatch(/^whsec_/);

    const signup = await app().request('/signups', post({ email: uniqueEmail(), name: 'Lin' }));
    const { user } = await signup.json();
    const order = await app().request(
      '/orders',
      post({
        userId: user.id,
        items: [
          { sku: 'BOOK-1', qty: 2, unitPriceCents: 1500 },
          { sku: 'PEN-9', qty: 1, unitPriceCents: 250 },
        ],
      }),
    );
    expect(order.status).toBe(201);
    const body = await order.json();
    expect(body.order.totalCents).toBe(3250);
    const { rows } = await database.pool.query(
      'SELECT kind, payload, ordering_key FROM outbox.all_messages WHERE key = ANY($1::uuid[]) ORDER BY id',
      [body.messageKeys],
    );
    expect(rows.map((row) => row.kind)).toContain('email');
    const webhook = rows.find((row) => row.payload.endpointId === created.id);
    expect(webhook).toMatchObject({
      kind: 'webhook',
      ordering_key: `webhook-endpoint:${created.id}`,
      payload: { event: 'order.created', url: 'https://hooks.example.com/orders' },
    });
    expect(JSON.stringify(webhook?.payload)).not.toContain(secret);
    const items = await database.pool.query(
      'SELECT count(*)::int AS n FROM app.order_items WHERE order_id = $1',
      [body.order.id],
    );
    expect(items.rows[0].n).toBe(2);

    const unknown = await app().request(
      '/orders',
      post({
        userId: crypto.randomUUID(),
        items: [{ sku: 'A', qty: 1, unitPriceCents: 1 }],
      }),
    );
    expect(unknown.status).toBe(422);
    expect((await unknown.json()).issues[0].path).toEqual(['userId']);
  });

  it('with orderEvents on, an order also writes its order.placed event, keyed by customer; off, none', async () => {
    const signup = await app().request('/signups', post({ email: uniqueEmail(), name: 'Ola' }));
    const { user } = await signup.json();
    const kindsWritten = async (orderEvents: boolean) => {
      const order = await app({ orderEvents }).request(
        '/orders',
        post({ userId: user.id, items: [{ sku: 'MUG', qty: 1, unitPriceCents: 800 }] }),
      );
      expect(order.status).toBe(201);
      const body = await order.json();
      const { rows } = await database.pool.query(
        'SELECT kind, payload, ordering_key FROM outbox.all_messages WHERE key = ANY($1::uuid[]) ORDER BY id',
        [body.messageKeys],
      );
      return { order: body.order, rows };
    };
    const on = await kindsWritten(true);
    expect(on.rows.find((row) => row.kind === ORDER_PLACED_KIND)).toEqual({
      kind: ORDER_PLACED_KIND,
      payload: { order: on.order },
      ordering_key: `user:${user.id}`,
    });
    const off = await kindsWritten(false);
    expect(off.rows.map((row) => row.kind)).toContain('email');
    expect(off.rows.map((row) => row.kind)).not.toContain(ORDER_PLACED_KIND);
  });

  it('replays an Idempotency-Key with the first response and writes nothing', async () => {
    const key = crypto.randomUUID();
    const body = { email: uniqueEmail(), name: 'Replay' };
    const first = await app().request('/signups', post(body, { 'idempotency-key': key }));
    expect(first.status).toBe(201);
    const firstBody = await first.json();
    const before = await rowCounts();
    const second = await app().request('/signups', post(body, { 'idempotency-key': key }));
    expect(second.status).toBe(201);
    expect(second.headers.get('idempotent-replayed')).toBe('true');
    expect(await second.json()).toEqual(firstBody);
    expect(await rowCounts()).toEqual(before);

    const conflict = await app().request(
      '/signups',
      post({ ...body, name: 'Different' }, { 'idempotency-key': key }),
    );
    expect(conflict.status).toBe(422);
    expect((await conflict.json()).issues[0].path).toEqual(['Idempotency-Key']);
    expect(await rowCounts()).toEqual(before);
  });

  it('lets an Idempotency-Key be used again once it has expired', async () => {
    const clock = fakeClock();
    const timed = app({ clock, idempotencyTtlMs: 60_000 });
    const key = crypto.randomUUID();
    const first = await timed.request(
      '/signups',
      post({ email: uniqueEmail(), name: 'Early' }, { 'idempotency-key': key }),
    );
    expect(first.status).toBe(201);
    clock.advance(61_000);
    const later = await timed.request(
      '/signups',
      post({ email: uniqueEmail(), name: 'Late' }, { 'idempotency-key': key }),
    );
    expect(later.status).toBe(201);
    expect(later.headers.get('idempotent-replayed')).toBeNull();
    expect((await later.json()).user.name).toBe('Late');
  });

  it('kicks a drain after commit, so the message leaves within the request lifetime', async () => {
    const sender = recordingSender();
    const kicked = app({
      drain: createDrainer({
        store: outbox.store(driver.db),
        senders: { email: sender.send, webhook: sender.send },
      }),
    });
    const response = await kicked.request('/signups', post({ email: uniqueEmail(), name: 'Kick' }));
    const { messageKeys } = await response.json();
    // No schedule runs here: only the kick can deliver it. Wait for its settle to commit.
    const stateOf = async () =>
      (
        await database.pool.query('SELECT state FROM outbox.all_messages WHERE key = $1', [
          messageKeys[0],
        ])
      ).rows[0]?.state;
    await waitFor('the kick to settle the message', async () => (await stateOf()) === 'delivered');
    expect(await stateOf()).toBe('delivered');
    expect(sender.calls.map((call) => call.key)).toEqual([messageKeys[0]]);
  });

  it('kicks only after the commit, and the kick sends what the commit wrote', async () => {
    const sender = recordingSender();
    // Which writes had committed when each kick began. A kick that started before its request's
    // transaction committed would find nothing due and leave the message to the schedule.
    let committed = 0;
    const committedAtKick: number[] = [];
    const observed: BatchSqlExecutor = {
      query: (text, params) => driver.db.query(text, params),
      async batch(statements) {
        const results = await driver.db.batch(statements);
        committed += 1;
        return results;
      },
    };
    const drain = createDrainer({
      store: outbox.store(driver.db),
      senders: { email: sender.send, webhook: sender.send },
    });
    const kicked = app({
      db: observed,
      drain: (request) => {
        committedAtKick.push(committed);
        return drain(request);
      },
    });
    const response = await kicked.request('/signups', post({ email: uniqueEmail(), name: 'Slow' }));
    expect(response.status).toBe(201);
    const { messageKeys } = await response.json();
    expect(committedAtKick).toEqual([1]);
    await waitFor('the kick to send the message', () => sender.delivered.includes(messageKeys[0]));
  });
});

describe('admin API', () => {
  const driver = useDriver('node-pg', database);
  const app = (overrides: Partial<AppDeps> = {}) =>
    createApp({ db: driver.db, outbox, adminToken: ADMIN_TOKEN, ...overrides });
  const routes: [string, string][] = [
    ['GET', '/admin/stats'],
    ['GET', '/admin/messages?state=dead'],
    ['POST', '/admin/messages/1/retry'],
    ['POST', '/admin/messages/retry-dead'],
    ['DELETE', '/admin/messages/1'],
    ['POST', '/admin/drain'],
    ['GET', '/admin/metrics'],
  ];

  it.each(routes)(
    '%s %s answers 401 without a token and with a wrong one',
    async (method, path) => {
      const none = await app().request(path, { method });
      expect(none.status).toBe(401);
      const wrong = await app().request(path, {
        method,
        headers: { authorization: 'Bearer nope' },
      });
      expect(wrong.status).toBe(401);
    },
  );

  it('is absent (404) when no admin token is configured', async () => {
    const response = await app({ adminToken: undefined }).request('/admin/stats', {
      headers: { authorization: `Bearer ${ADMIN_TOKEN}` },
    });
    expect(response.status).toBe(404);
  });

  it('serves stats, lists, retries, discards, drains and metrics with the token', async () => {
    const auth = { authorization: `Bearer ${ADMIN_TOKEN}` };
    const store = outbox.store(driver.db);
    const [doomed, other] = await outbox.enqueue(driver.db, [
      { kind: 'webhook', payload: { url: 'https://example.com/a', body: {} } },
      { kind: 'webhook', payload: { url: 'https://example.com/b', body: {} } },
    ]);
    const failing = recordingSender((message) => {
      if (message.key === doomed) throw new PermanentDeliveryError('410 Gone');
    });
    const drain = createDrainer({ store, senders: { webhook: failing.send } });
    const admin = app({ drain });

    const drained = await admin.request('/admin/drain', { method: 'POST', headers: auth });
    expect(drained.status).toBe(200);
    expect((await drained.json()).report).toMatchObject({ dead: 1 });

    const stats = await (await admin.request('/admin/stats', { headers: auth })).json();
    expect(stats.stats.dead).toBeGreaterThanOrEqual(1);
    expect(stats.lastHour.dead).toBeGreaterThanOrEqual(1);

    const list = await (
      await admin.request('/admin/messages?state=dead&limit=10', { headers: auth })
    ).json();
    const dead = list.messages.find((message: { key: string }) => message.key === doomed);
    expect(dead).toBeDefined();
    const badState = await admin.request('/admin/messages?state=sent', { headers: auth });
    expect(badState.status).toBe(400);
    expect((await badState.json()).issues[0].path).toEqual(['state']);

    const retried = await admin.request(`/admin/messages/${dead.id}/retry`, {
      method: 'POST',
      headers: auth,
    });
    expect(await retried.json()).toEqual({ id: dead.id, retried: true });
    const notDead = await admin.request(`/admin/messages/${dead.id}/retry`, {
      method: 'POST',
      headers: auth,
    });
    expect(notDead.status).toBe(409);

    const deliveredId = (await store.list({ state: 'delivered' })).messages.find(
      (m) => m.key === other,
    )?.id;
    const discarded = await admin.request(`/admin/messages/${deliveredId}`, {
      method: 'DELETE',
      headers: auth,
    });
    expect(await discarded.json()).toMatchObject({ discarded: true, state: 'delivered' });
    const gone = await admin.request(`/admin/messages/${deliveredId}`, {
      method: 'DELETE',
      headers: auth,
    });
    expect(gone.status).toBe(404);

    const retryAll = await admin.request('/admin/messages/retry-dead', {
      method: 'POST',
      headers: auth,
    });
    expect(retryAll.status).toBe(200);

    const metrics = await admin.request('/admin/metrics', { headers: auth });
    expect(metrics.headers.get('content-type')).toMatch(/text\/plain/);
    const text = await metrics.text();
    expect(text).toMatch(/^outbox_messages\{state="pending"\} \d+$/m);
    expect(text).toMatch(/^outbox_lag_seconds \d+\.\d{3}$/m);
    expect(text).toMatch(/^outbox_attempts_failed_total\{kind="[a-z.]+"\} [1-9]\d*$/m);
  });
});
