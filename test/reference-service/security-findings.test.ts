/**
 * Issue 12's findings against the reference service, one test (or a few) per finding, named after
 * it: each failed on the code the review ran and passes now.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { createApp } from '../../examples/reference-service/app.js';
import type { AppDeps } from '../../examples/reference-service/app-deps.js';
import { migrations as appMigrations } from '../../examples/reference-service/migrations.generated.js';
import { referenceServiceFromEnv } from '../../examples/reference-service/service.js';
import { SECRET_NOT_REPLAYED } from '../../examples/reference-service/webhook-endpoints.js';
import { FAILED_LOGIN_FREE_ATTEMPTS } from '../../src/admin/index.js';
import { pgExecutor } from '../../src/drivers/node-pg.js';
import { createOutbox, type Logger } from '../../src/index.js';
import { runScheduledDrain } from '../../src/runtime/drainer.js';
import { migrate } from '../../src/store/migrate.js';
import { useTestDatabase } from '../support/database.js';
import { fakeClock } from '../support/drain-fixtures.js';
import { useDriver } from '../support/drivers.js';
import { post } from './json-request.js';

const database = useTestDatabase();
const outbox = createOutbox();
const ADMIN_TOKEN = 'operator-token-for-tests';
const operator = { authorization: `Bearer ${ADMIN_TOKEN}` };

beforeAll(async () => {
  await migrate(pgExecutor(database.pool), { schema: 'app', migrations: appMigrations });
});

async function rowCounts() {
  const { rows } = await database.pool.query(`
    SELECT (SELECT count(*)::int FROM app.users) AS users,
           (SELECT count(*)::int FROM app.orders) AS orders,
           (SELECT count(*)::int FROM app.order_items) AS order_items,
           (SELECT count(*)::int FROM app.webhook_endpoints) AS endpoints,
           (SELECT count(*)::int FROM outbox.all_messages) AS messages,
           (SELECT count(*)::int FROM app.idempotency_keys) AS idempotency_keys`);
  return rows[0] as Record<
    'users' | 'orders' | 'order_items' | 'endpoints' | 'messages' | 'idempotency_keys',
    number
  >;
}

let emailCounter = 0;
const uniqueEmail = () => `sec${++emailCounter}-${Date.now()}@example.com`;

function recordingLogger(): Logger & { warnings: { message: string; fields: unknown }[] } {
  const warnings: { message: string; fields: unknown }[] = [];
  return {
    warnings,
    debug() {},
    info() {},
    warn(message, fields) {
      warnings.push({ message, fields });
    },
    error() {},
  };
}

describe('finding 8: secrets kept forever (records written before the fix)', () => {
  it('migration 0002 scrubs the signing secret from stored registration replies', async () => {
    const db = pgExecutor(database.pool);
    const schema = 'app_before_fix';
    await migrate(db, { schema, migrations: appMigrations.slice(0, 1) });
    const reply = {
      endpoint: {
        id: crypto.randomUUID(),
        url: 'https://hooks.example.com/',
        events: ['user.created'],
      },
      secret: 'whsec_c2VjcmV0LWZyb20tYmVmb3JlLXRoZS1maXg=',
    };
    await database.pool.query(
      `INSERT INTO ${schema}.idempotency_keys (key, route, request_hash, status, response, expires_at)
       VALUES ('k', '/webhook-endpoints', 'h', 201, $1::jsonb, now() + interval '1 day')`,
      [JSON.stringify(reply)],
    );
    await migrate(db, { schema, migrations: appMigrations });
    const { rows } = await database.pool.query(`SELECT response FROM ${schema}.idempotency_keys`);
    expect(rows[0].response).toEqual({
      endpoint: reply.endpoint,
      secret: null,
      secretNote: SECRET_NOT_REPLAYED,
    });
  });
});

describe.each(['neon-ws', 'neon-http'] as const)('security findings through %s', (driverName) => {
  const driver = useDriver(driverName, database);
  const app = (overrides: Partial<AppDeps> = {}) =>
    createApp({ db: driver.db, outbox, adminToken: ADMIN_TOKEN, ...overrides });

  async function signupAndOrder(service = app()) {
    const signup = await service.request('/signups', post({ email: uniqueEmail(), name: 'Ada' }));
    const user = signup.status === 201 ? (await signup.clone().json()).user : undefined;
    const order = await service.request(
      '/orders',
      post({
        userId: user?.id ?? crypto.randomUUID(),
        items: [{ sku: 'A', qty: 1, unitPriceCents: 1 }],
      }),
    );
    return { signup, order };
  }

  describe('finding 1: one anonymous request breaks every signup and order', () => {
    it.each([
      ['credentials in the URL', 'https://u:p@hooks.example.com/'],
      ['a newline in the URL', 'https://hooks.example.com/a\nb'],
      ['a tab in the URL', 'https://hooks.example.com/\tx'],
      ['a DEL in the URL', 'https://hooks.example.com/\u007f'],
      ['a no-break space in the URL', 'https://hooks.example.com/\u00a0'],
    ])(
      'refuses a webhook URL with %s at registration (400 naming url), so signups and orders keep working',
      async (_label, url) => {
        const before = await rowCounts();
        const registered = await app().request(
          '/webhook-endpoints',
          post({ url, events: ['order.created', 'user.created'] }, operator),
        );
        expect(registered.status).toBe(400);
        expect((await registered.json()).issues[0].path).toEqual(['url']);
        expect((await rowCounts()).endpoints).toBe(before.endpoints);

        const { signup, order } = await signupAndOrder();
        expect(signup.status).toBe(201);
        expect(order.status).toBe(201);
      },
    );

    it('skips a stored subscriber the outbox would refuse, records why, and commits the write without telling the caller', async () => {
      const badId = crypto.randomUUID();
      await database.pool.query(
        `INSERT INTO app.webhook_endpoints (id, url, events, secret)
         VALUES ($1, 'https://u:p@hooks.example.com/', ARRAY['user.created','order.created'], 'whsec_x')`,
        [badId],
      );
      try {
        const logger = recordingLogger();
        const { signup, order } = await signupAndOrder(app({ logger }));
        expect(signup.status).toBe(201);
        expect(order.status).toBe(201);
        const bodies = JSON.stringify([await signup.json(), await order.json()]);
        expect(bodies).not.toContain(badId);
        expect(bodies).not.toMatch(/payload|messages\[/);

        const skipped = await database.pool.query(
          'SELECT skip_count, last_skip_reason FROM app.webhook_endpoints WHERE id = $1',
          [badId],
        );
        expect(skipped.rows[0].skip_count).toBe(2);
        expect(skipped.rows[0].last_skip_reason).toMatch(/user name or password/);
        expect(logger.warnings).toEqual([
          expect.objectContaining({
            fields: expect.objectContaining({ endpointId: badId, event: 'user.created' }),
          }),
          expect.objectContaining({
            fields: expect.objectContaining({ endpointId: badId, event: 'order.created' }),
          }),
        ]);
        const queued = await database.pool.query(
          `SELECT count(*)::int AS n FROM outbox.all_messages WHERE payload->>'endpointId' = $1`,
          [badId],
        );
        expect(queued.rows[0].n).toBe(0);
      } finally {
        await database.pool.query(
          'UPDATE app.webhook_endpoints SET disabled_at = now() WHERE id = $1',
          [badId],
        );
      }
    });
  });

  describe("finding 2: anyone can subscribe to every user's data", () => {
    it('refuses registration without the operator credential (401) and writes nothing', async () => {
      const before = await rowCounts();
      const body = { url: 'https://hooks.example.com/steal', events: ['user.created'] };
      const attempts: Record<string, string>[] = [
        {},
        { authorization: 'Bearer wrong-token' },
        { authorization: `Basic ${btoa(`admin:${ADMIN_TOKEN}`)}` },
        { authorization: `Bearer ${ADMIN_TOKEN}x` },
        { authorization: ADMIN_TOKEN },
      ];
      for (const headers of attempts) {
        const response = await app().request('/webhook-endpoints', post(body, headers));
        expect(response.status).toBe(401);
        expect(response.headers.get('www-authenticate')).toMatch(/^Bearer/);
        expect(await response.json()).toEqual({
          error: expect.stringMatching(/token required/),
        });
      }
      // Auth comes before validation: an anonymous caller learns nothing about the rules.
      const invalid = await app().request('/webhook-endpoints', post({ url: 1 }));
      expect(invalid.status).toBe(401);
      expect(await rowCounts()).toEqual(before);
    });

    it('is absent (404) when no operator credential is configured', async () => {
      const response = await app({ adminToken: undefined }).request(
        '/webhook-endpoints',
        post({ url: 'https://hooks.example.com/', events: ['user.created'] }, operator),
      );
      expect(response.status).toBe(404);
    });

    it('registers with the operator credential', async () => {
      const response = await app().request(
        '/webhook-endpoints',
        post({ url: 'https://hooks.example.com/ok', events: ['user.created'] }, operator),
      );
      expect(response.status).toBe(201);
      expect((await response.json()).secret).toMatch(/^whsec_/);
    });

    it("throttles wrong tokens (issue 25): 500 at once, the library's throttle answers all but the free few with 429, and the right token still registers", async () => {
      const service = app({ clock: fakeClock() });
      const body = { url: 'https://hooks.example.com/guessed', events: ['user.created'] };
      const before = await rowCounts();
      const guesses = await Promise.all(
        Array.from({ length: 500 }, (_, index) =>
          service.request(
            '/webhook-endpoints',
            post(body, { authorization: `Bearer guess-${index}` }),
          ),
        ),
      );
      const statuses = guesses.map((response) => response.status);
      expect(statuses.filter((status) => status === 401)).toHaveLength(
        FAILED_LOGIN_FREE_ATTEMPTS + 1,
      );
      expect(statuses.filter((status) => status === 429)).toHaveLength(
        500 - FAILED_LOGIN_FREE_ATTEMPTS - 1,
      );
      expect(guesses.at(-1)!.headers.get('retry-after')).toBe('1');
      expect(await rowCounts()).toEqual(before);
      // One record with /admin: its wrong tokens are throttled too, and the right one is not.
      const adminGuess = await service.request('/admin/stats', {
        headers: { authorization: 'Bearer another-guess' },
      });
      expect(adminGuess.status).toBe(429);
      const registered = await service.request(
        '/webhook-endpoints',
        post({ url: 'https://hooks.example.com/operator', events: ['user.created'] }, operator),
      );
      expect(registered.status).toBe(201);
    });
  });

  describe('finding 3: concurrent retries of one signup', () => {
    it('20 concurrent requests with one Idempotency-Key write once and all answer the first response, five rounds', async () => {
      for (let round = 0; round < 5; round++) {
        const before = await rowCounts();
        const key = crypto.randomUUID();
        const body = { email: uniqueEmail(), name: `Round ${round}` };
        const service = app();
        const responses = await Promise.all(
          Array.from({ length: 20 }, () =>
            service.request('/signups', post(body, { 'idempotency-key': key })),
          ),
        );
        const answers = await Promise.all(
          responses.map(async (r) => ({ status: r.status, body: await r.json() })),
        );
        expect(answers.map((a) => a.status)).toEqual(Array(20).fill(201));
        const first = answers[0]!.body;
        for (const answer of answers) expect(answer.body).toEqual(first);
        const after = await rowCounts();
        expect(after.users - before.users).toBe(1);
        expect(after.messages - before.messages).toBe(first.messageKeys.length);
        expect(after.idempotency_keys - before.idempotency_keys).toBe(1);
      }
    });
  });

  describe('finding 4: 500s on input', () => {
    it.each([
      [
        'a lone surrogate in a name',
        '/signups',
        () => ({ email: uniqueEmail(), name: 'a\ud800b' }),
        ['name'],
      ],
      ['a NUL in a name', '/signups', () => ({ email: uniqueEmail(), name: 'a\u0000b' }), ['name']],
      [
        'a lone surrogate in an order sku',
        '/orders',
        () => ({
          userId: crypto.randomUUID(),
          items: [{ sku: '\udc00', qty: 1, unitPriceCents: 1 }],
        }),
        ['items', 0, 'sku'],
      ],
      [
        'a NUL in an order sku',
        '/orders',
        () => ({
          userId: crypto.randomUUID(),
          items: [{ sku: 'A\u0000', qty: 1, unitPriceCents: 1 }],
        }),
        ['items', 0, 'sku'],
      ],
      [
        'a NUL in a webhook endpoint URL',
        '/webhook-endpoints',
        () => ({ url: 'https://h.example.com/\u0000', events: ['user.created'] }),
        ['url'],
      ],
      [
        'a lone surrogate in a webhook endpoint URL',
        '/webhook-endpoints',
        () => ({ url: 'https://h.example.com/\ud800', events: ['user.created'] }),
        ['url'],
      ],
    ] as const)(
      '%s is a 400 naming the field, and nothing is written',
      async (_label, path, body, field) => {
        const before = await rowCounts();
        const response = await app().request(path, post(body(), operator));
        expect(response.status).toBe(400);
        expect(
          (await response.json()).issues.map((issue: { path: unknown }) => issue.path),
        ).toContainEqual(field);
        expect(await rowCounts()).toEqual(before);
      },
    );
  });

  describe('finding 8: secrets kept forever', () => {
    it('a replayed registration returns the endpoint without its secret, and says so; the stored record never held it', async () => {
      const key = crypto.randomUUID();
      const body = { url: 'https://hooks.example.com/replayed', events: ['order.created'] };
      const first = await app().request(
        '/webhook-endpoints',
        post(body, { ...operator, 'idempotency-key': key }),
      );
      expect(first.status).toBe(201);
      const created = await first.json();
      expect(created.secret).toMatch(/^whsec_/);

      const replay = await app().request(
        '/webhook-endpoints',
        post(body, { ...operator, 'idempotency-key': key }),
      );
      expect(replay.status).toBe(201);
      expect(replay.headers.get('idempotent-replayed')).toBe('true');
      expect(await replay.json()).toEqual({
        endpoint: created.endpoint,
        secret: null,
        secretNote: SECRET_NOT_REPLAYED,
      });

      const { rows } = await database.pool.query(
        'SELECT response::text AS response FROM app.idempotency_keys WHERE key = $1',
        [key],
      );
      expect(rows[0].response).not.toContain(created.secret);
      expect(rows[0].response).not.toContain('whsec_');
    });

    it('the scheduled purge deletes expired Idempotency-Key records and keeps live ones', async () => {
      const clock = fakeClock();
      const keyed = app({ clock, idempotencyTtlMs: 60_000 });
      const expiring = crypto.randomUUID();
      const live = crypto.randomUUID();
      await keyed.request(
        '/signups',
        post({ email: uniqueEmail(), name: 'Old' }, { 'idempotency-key': expiring }),
      );
      clock.advance(30_000);
      await keyed.request(
        '/signups',
        post({ email: uniqueEmail(), name: 'New' }, { 'idempotency-key': live }),
      );
      clock.advance(31_000);
      const service = referenceServiceFromEnv(
        { DATABASE_URL: database.url, NEON_LOCAL_PROXY: `127.0.0.1:${driver.proxyPort}` },
        { resolveHost: false },
      );
      const result = await runScheduledDrain(
        { ...service.drainer, clock },
        { budgetMs: 5_000, purge: 'instead' },
      );
      expect(result.purgedWith?.idempotencyKeys).toBeGreaterThanOrEqual(1);
      const { rows } = await database.pool.query(
        'SELECT key FROM app.idempotency_keys WHERE key = ANY($1::text[])',
        [[expiring, live]],
      );
      expect(rows.map((row) => row.key)).toEqual([live]);
    });
  });
});
