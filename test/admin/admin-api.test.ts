/** The admin JSON API of `outboxAdmin`, mounted in a test's own Hono app over a real database. */
import { describe, expect, it } from 'vitest';
import { PermanentDeliveryError } from '../../src/core/errors.js';
import { MAX_MESSAGE_ID } from '../../src/core/message-id.js';
import { pgExecutor } from '../../src/drivers/node-pg.js';
import { createDrainer } from '../../src/runtime/drainer.js';
import { useTestDatabase } from '../support/database.js';
import { recordingSender } from '../support/drain-fixtures.js';
import {
  ADMIN_TOKEN,
  deadMessages,
  deliveredMessages,
  KIND,
  mountAdmin,
  OTHER_KIND,
  outbox,
} from './admin-harness.js';

const database = useTestDatabase();
const auth = { authorization: `Bearer ${ADMIN_TOKEN}` };

const routes: [string, string][] = [
  ['GET', '/admin/stats'],
  ['GET', '/admin/messages?state=dead'],
  ['GET', '/admin/messages/1'],
  ['GET', '/admin/messages/by-key/00000000-0000-4000-8000-000000000000'],
  ['POST', '/admin/messages/1/retry'],
  ['POST', '/admin/messages/retry-dead'],
  ['DELETE', '/admin/messages/1'],
  ['POST', '/admin/drain'],
  ['GET', '/admin/metrics'],
];

describe('the admin API', () => {
  it.each(routes)(
    '%s %s answers 401 without a token and with a wrong one',
    async (method, path) => {
      const app = mountAdmin(database);
      const none = await app.request(path, { method });
      expect(none.status).toBe(401);
      expect(none.headers.get('www-authenticate')).toContain('Bearer');
      const wrong = await app.request(path, {
        method,
        headers: { authorization: 'Bearer nope', 'x-test-client': `wrong-${method}-${path}` },
      });
      expect(wrong.status).toBe(401);
    },
  );

  it('does not exist (404) when no admin token is configured, not even the dashboard', async () => {
    const app = mountAdmin(database, { token: undefined });
    expect((await app.request('/admin/stats', { headers: auth })).status).toBe(404);
    expect((await app.request('/admin')).status).toBe(404);
    expect((await app.request('/admin/login', { method: 'POST' })).status).toBe(404);
    // The host app's own routes are untouched.
    expect(await (await app.request('/host')).text()).toBe('the host app');
  });

  it('admin JSON replies carry no-store and nosniff', async () => {
    const app = mountAdmin(database);
    const replies = [
      await app.request('/admin/stats', { headers: auth }),
      await app.request('/admin/messages?state=nope', { headers: auth }),
      await app.request('/admin/messages/999999', { headers: auth }),
      await app.request('/admin/stats'),
      await mountAdmin(database, { token: undefined }).request('/admin/stats'),
    ];
    expect(replies.map((reply) => reply.status)).toEqual([200, 400, 404, 401, 404]);
    for (const reply of replies) {
      expect(reply.headers.get('content-type')).toMatch(/^application\/json/);
      expect(reply.headers.get('cache-control')).toBe('no-store');
      expect(reply.headers.get('x-content-type-options')).toBe('nosniff');
      expect(reply.headers.get('content-security-policy')).toContain("default-src 'none'");
    }
    // Mounted, the admin app adds nothing to the host app's other replies.
    const host = await app.request('/host');
    expect(host.headers.get('cache-control')).toBeNull();
    expect(host.headers.get('content-security-policy')).toBeNull();
  });

  it('an id past bigint is a 400', async () => {
    const app = mountAdmin(database);
    const pastBigint = (MAX_MESSAGE_ID + 1n).toString();
    for (const [method, path] of [
      ['GET', `/admin/messages/${pastBigint}`],
      ['POST', `/admin/messages/${pastBigint}/retry`],
      ['DELETE', `/admin/messages/${pastBigint}`],
      ['GET', '/admin/messages/99999999999999999999999'],
      ['GET', '/admin/messages/1e3'],
    ] as const) {
      const response = await app.request(path, { method, headers: auth });
      expect(response.status, `${method} ${path}`).toBe(400);
      expect((await response.json()).issues[0].path).toEqual(['id']);
    }
    // The largest bigint itself is a well-formed id: simply not there.
    const largest = await app.request(`/admin/messages/${MAX_MESSAGE_ID}`, { headers: auth });
    expect(largest.status).toBe(404);
  });

  it('find a message by key and see it whole', async () => {
    const app = mountAdmin(database);
    const {
      ids: [id],
      keys: [key],
    } = await deadMessages(database, ['410 Gone: the receiver deleted this hook'], () => ({
      to: 'a@example.com',
      nested: { list: [1, 2, 3] },
    }));
    const response = await app.request(`/admin/messages/by-key/${key}`, { headers: auth });
    expect(response.status).toBe(200);
    const { message } = await response.json();
    expect(message).toMatchObject({
      id,
      key,
      kind: KIND,
      state: 'dead',
      attempts: 1,
      payload: { to: 'a@example.com', nested: { list: [1, 2, 3] } },
      lastError: expect.stringContaining('410 Gone: the receiver deleted this hook'),
    });
    for (const field of ['dueAt', 'createdAt', 'deadAt']) {
      expect(Number.isNaN(Date.parse(message[field])), field).toBe(false);
    }
    expect(message).toHaveProperty('claimedAt', null);
    const byId = await (await app.request(`/admin/messages/${id}`, { headers: auth })).json();
    expect(byId.message).toEqual(message);

    const unknown = await app.request(
      '/admin/messages/by-key/00000000-0000-4000-8000-000000000000',
      { headers: auth },
    );
    expect(unknown.status).toBe(404);
    const notUuid = await app.request('/admin/messages/by-key/not-a-key', { headers: auth });
    expect(notUuid.status).toBe(400);
    expect((await notUuid.json()).issues[0].path).toEqual(['key']);
  });

  it('list delivered messages page by page, filtered by kind', async () => {
    const app = mountAdmin(database);
    const wanted = await deliveredMessages(database, OTHER_KIND, 7);
    await deliveredMessages(database, KIND, 3);
    const seen: string[] = [];
    let cursor: string | null = null;
    let pages = 0;
    do {
      const query = new URLSearchParams({ state: 'delivered', kind: OTHER_KIND, limit: '3' });
      if (cursor) query.set('cursor', cursor);
      const response = await app.request(`/admin/messages?${query}`, { headers: auth });
      expect(response.status).toBe(200);
      const page = (await response.json()) as {
        messages: { key: string; kind: string; state: string }[];
        nextCursor: string | null;
      };
      expect(page.messages.every((m) => m.kind === OTHER_KIND && m.state === 'delivered')).toBe(
        true,
      );
      seen.push(...page.messages.map((m) => m.key));
      cursor = page.nextCursor;
      pages += 1;
    } while (cursor);
    expect(pages).toBe(3);
    expect(seen.sort()).toEqual([...wanted].sort());

    const pastBigint = btoa(`2020-01-01T00:00:00.000Z|${MAX_MESSAGE_ID + 1n}`);
    for (const cursor of ['bm9wZQ', pastBigint]) {
      const forged = await app.request(`/admin/messages?state=delivered&cursor=${cursor}`, {
        headers: auth,
      });
      expect(forged.status, cursor).toBe(400);
      expect((await forged.json()).issues[0].path).toEqual(['cursor']);
    }
  });

  it('serves stats, lists, retries, discards, drains and metrics with the token', async () => {
    const db = pgExecutor(database.pool);
    const store = outbox.store(db);
    const [doomed, other] = await outbox.enqueue(db, [
      { kind: KIND, payload: { n: 1 } },
      { kind: KIND, payload: { n: 2 } },
    ]);
    const failing = recordingSender((message) => {
      if (message.key === doomed) throw new PermanentDeliveryError('410 Gone');
    });
    const drain = createDrainer({ store, senders: { [KIND]: failing.send } });
    const app = mountAdmin(database, { drain });

    expect(
      (await mountAdmin(database).request('/admin/drain', { method: 'POST', headers: auth }))
        .status,
    ).toBe(503);
    const badDrain = await app.request('/admin/drain', {
      method: 'POST',
      headers: { ...auth, 'content-type': 'application/json' },
      body: JSON.stringify({ budgetMs: 5 }),
    });
    expect(badDrain.status).toBe(400);
    expect((await badDrain.json()).issues[0].path).toEqual(['budgetMs']);
    const drained = await app.request('/admin/drain', { method: 'POST', headers: auth });
    expect(drained.status).toBe(200);
    expect((await drained.json()).report).toMatchObject({ dead: 1 });

    const stats = await (await app.request('/admin/stats', { headers: auth })).json();
    expect(stats.stats.dead).toBeGreaterThanOrEqual(1);
    expect(stats.lastHour.dead).toBeGreaterThanOrEqual(1);

    const dead = (
      await (await app.request(`/admin/messages/by-key/${doomed}`, { headers: auth })).json()
    ).message;
    const badState = await app.request('/admin/messages?state=sent', { headers: auth });
    expect(badState.status).toBe(400);
    expect((await badState.json()).issues[0].path).toEqual(['state']);

    const retried = await app.request(`/admin/messages/${dead.id}/retry`, {
      method: 'POST',
      headers: auth,
    });
    expect(await retried.json()).toEqual({ id: dead.id, retried: true });
    const notDead = await app.request(`/admin/messages/${dead.id}/retry`, {
      method: 'POST',
      headers: auth,
    });
    expect(notDead.status).toBe(409);

    const deliveredId = (await store.getByKey(other!))!.id;
    const discarded = await app.request(`/admin/messages/${deliveredId}`, {
      method: 'DELETE',
      headers: auth,
    });
    expect(await discarded.json()).toMatchObject({ discarded: true, state: 'delivered' });
    const gone = await app.request(`/admin/messages/${deliveredId}`, {
      method: 'DELETE',
      headers: auth,
    });
    expect(gone.status).toBe(404);

    const retryAll = await app.request('/admin/messages/retry-dead', {
      method: 'POST',
      headers: auth,
    });
    expect(retryAll.status).toBe(200);

    const metrics = await app.request('/admin/metrics', { headers: auth });
    expect(metrics.headers.get('content-type')).toMatch(/text\/plain/);
    const text = await metrics.text();
    expect(text).toMatch(/^outbox_messages\{state="pending"\} \d+$/m);
    expect(text).toMatch(/^outbox_lag_seconds \d+\.\d{3}$/m);
    expect(text).toMatch(/^outbox_attempts_failed_total\{kind="demo\.notify"\} [1-9]\d*$/m);
  });
});
