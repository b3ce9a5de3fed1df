/**
 * The admin API's destination routes, mounted in a test's own Hono app over a real database:
 * health made by a real drain whose sender fails; pause and resume as an operator's client
 * sends them; refusals that name the field and write nothing; the guard in front of them.
 */
import { beforeEach, describe, expect, it } from 'vitest';
import type { Logger } from '../../src/core/ports.js';
import { pgExecutor } from '../../src/drivers/node-pg.js';
import { useTestDatabase } from '../support/database.js';
import { enqueueTo, failDeliveries } from '../support/destination-fixtures.js';
import { fakeClock } from '../support/drain-fixtures.js';
import { ADMIN_TOKEN, mountAdmin, signIn } from './admin-harness.js';

const database = useTestDatabase();
const auth = { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/json' };
const DOWN = 'https://down.example';
const UP = 'https://up.example';

function post(body: unknown, headers: Record<string, string> = auth) {
  return { method: 'POST', headers, body: typeof body === 'string' ? body : JSON.stringify(body) };
}

beforeEach(async () => {
  await database.pool.query(
    'TRUNCATE outbox.messages, outbox.delivered_groups, outbox.destinations',
  );
});

/** Each destination row as the table has it, and when its pending messages are due. */
async function written() {
  const { rows: destinations } = await database.pool.query(
    'SELECT destination, paused_by, paused_until, failures FROM outbox.destinations ORDER BY destination',
  );
  const { rows: messages } = await database.pool.query(
    "SELECT destination, due_at FROM outbox.messages WHERE state = 'pending' ORDER BY id",
  );
  return { destinations, messages };
}

function recordingLogger(): Logger & { lines: [string, Record<string, unknown>][] } {
  const lines: [string, Record<string, unknown>][] = [];
  const keep = (message: string, fields: Record<string, unknown> = {}) => {
    lines.push([message, fields]);
  };
  return { lines, debug() {}, info: keep, warn() {}, error() {} };
}

describe('the destination API', () => {
  it('GET /destinations lists each record, paused first, and pages by nextAfter', async () => {
    const clock = fakeClock();
    const db = pgExecutor(database.pool);
    await failDeliveries(db, DOWN, 5, { clock });
    await failDeliveries(db, UP, 2, { clock, error: 'HTTP 502' });
    await failDeliveries(db, 'https://also-up.example', 1, { clock });
    const app = mountAdmin(database, { clock });
    const response = await app.request('/admin/destinations', { headers: auth });
    expect(response.status).toBe(200);
    const { destinations, nextAfter } = await response.json();
    expect(nextAfter).toBeNull();
    expect(destinations).toMatchObject([
      {
        destination: DOWN,
        state: 'open',
        failures: 5,
        pausedBy: 'breaker',
        pausedUntil: new Date(clock.now().getTime() + 30_000).toISOString(),
        waiting: 5,
        lastError: 'RetryableDeliveryError: HTTP 503 from the receiver',
      },
      { destination: 'https://also-up.example', state: 'closed', failures: 1 },
      {
        destination: UP,
        state: 'closed',
        failures: 2,
        lastError: 'RetryableDeliveryError: HTTP 502',
      },
    ]);

    const names: string[] = [];
    let after = '';
    for (let page = 0; page < 5; page++) {
      const query = new URLSearchParams({ limit: '2', ...(after ? { after } : {}) });
      const body = await (
        await app.request(`/admin/destinations?${query}`, { headers: auth })
      ).json();
      names.push(...body.destinations.map((d: { destination: string }) => d.destination));
      if (body.nextAfter === null) break;
      after = body.nextAfter;
    }
    expect(names).toEqual([DOWN, 'https://also-up.example', UP]);
  });

  it('POST /destinations/pause holds its messages until resumed, or for forMs; resume brings them back', async () => {
    const clock = fakeClock();
    const logger = recordingLogger();
    await enqueueTo(pgExecutor(database.pool), UP, 2);
    const app = mountAdmin(database, { clock, logger });
    const paused = await app.request('/admin/destinations/pause', post({ destination: UP }));
    expect(paused.status).toBe(200);
    expect((await paused.json()).destination).toMatchObject({
      destination: UP,
      state: 'open',
      pausedBy: 'operator',
      pausedUntil: '9999-12-31T00:00:00.000Z',
      waiting: 2,
    });
    expect((await written()).messages.map((m) => m.due_at.toISOString())).toEqual([
      '9999-12-31T00:00:00.000Z',
      '9999-12-31T00:00:00.000Z',
    ]);

    const timed = await app.request(
      '/admin/destinations/pause',
      post({ destination: UP, forMs: 600_000 }),
    );
    expect((await timed.json()).destination).toMatchObject({
      state: 'open',
      pausedUntil: new Date(clock.now().getTime() + 600_000).toISOString(),
      waiting: 2,
    });

    const resumed = await app.request('/admin/destinations/resume', post({ destination: UP }));
    expect(resumed.status).toBe(200);
    expect((await resumed.json()).destination).toMatchObject({
      destination: UP,
      state: 'closed',
      pausedUntil: null,
      failures: 0,
      waiting: 2,
    });
    const { destinations, messages } = await written();
    expect(destinations).toMatchObject([{ destination: UP, paused_by: null, paused_until: null }]);
    // Held until resumed, then for ten minutes, then resumed: both are due now.
    expect(messages.map((m) => m.due_at.toISOString())).toEqual([
      clock.now().toISOString(),
      clock.now().toISOString(),
    ]);
    expect(logger.lines).toEqual([
      [
        'destination paused by an operator',
        {
          destination: UP,
          pausedUntil: '9999-12-31T00:00:00.000Z',
          via: 'admin api (bearer token)',
        },
      ],
      [
        'destination paused by an operator',
        {
          destination: UP,
          pausedUntil: new Date(clock.now().getTime() + 600_000).toISOString(),
          via: 'admin api (bearer token)',
        },
      ],
      ['destination resumed by an operator', { destination: UP, via: 'admin api (bearer token)' }],
    ]);
  });

  it('POST /destinations/resume of a destination with no record is a 404, writing nothing', async () => {
    const response = await mountAdmin(database).request(
      '/admin/destinations/resume',
      post({ destination: UP }),
    );
    expect(response.status).toBe(404);
    expect(await response.json()).toEqual({
      error: 'no such destination: it never failed and was never paused',
    });
    expect((await written()).destinations).toEqual([]);
  });

  it.each([
    ['/admin/destinations/pause', 'not json', ['body']],
    ['/admin/destinations/pause', [UP], ['body']],
    ['/admin/destinations/pause', {}, ['destination']],
    ['/admin/destinations/pause', { destination: '' }, ['destination']],
    ['/admin/destinations/pause', { destination: 7 }, ['destination']],
    ['/admin/destinations/pause', { destination: 'x'.repeat(301) }, ['destination']],
    ['/admin/destinations/pause', { destination: 'a\u0000b' }, ['destination']],
    ['/admin/destinations/pause', { destination: UP, forMs: 0 }, ['forMs']],
    ['/admin/destinations/pause', { destination: UP, forMs: 1.5 }, ['forMs']],
    ['/admin/destinations/pause', { destination: UP, forMs: '10m' }, ['forMs']],
    ['/admin/destinations/pause', { destination: UP, forMs: null }, ['forMs']],
    ['/admin/destinations/pause', { destination: UP, forMs: 31 * 86_400_000 }, ['forMs']],
    ['/admin/destinations/pause', { destination: UP, until: '2030-01-01' }, ['until']],
    ['/admin/destinations/resume', {}, ['destination']],
    ['/admin/destinations/resume', { destination: UP, forMs: 1000 }, ['forMs']],
  ])('POST %s with %j is a 400 naming %j, writing nothing', async (path, body, field) => {
    await enqueueTo(pgExecutor(database.pool), UP, 1);
    const before = await written();
    const response = await mountAdmin(database).request(path, post(body));
    expect(response.status).toBe(400);
    const answer = await response.json();
    expect(answer).toMatchObject({ error: 'invalid request', issues: [{ path: field }] });
    expect(answer.issues[0].message).toEqual(expect.any(String));
    expect(await written()).toEqual(before);
  });

  it.each([
    ['limit=0', ['limit']],
    ['limit=1001', ['limit']],
    ['limit=x', ['limit']],
    [`after=${'x'.repeat(301)}`, ['after']],
  ])('GET /destinations?%s is a 400 naming %j', async (query, path) => {
    const response = await mountAdmin(database).request(`/admin/destinations?${query}`, {
      headers: auth,
    });
    expect(response.status).toBe(400);
    expect((await response.json()).issues).toMatchObject([{ path }]);
  });

  it.each([
    ['POST', '/admin/destinations/pause'],
    ['POST', '/admin/destinations/resume'],
    ['GET', '/admin/destinations'],
  ])(
    '%s %s answers 401 without a token or with a wrong one, and changes nothing',
    async (method, path) => {
      await failDeliveries(pgExecutor(database.pool), DOWN, 5);
      const before = await written();
      const app = mountAdmin(database);
      const body = method === 'POST' ? JSON.stringify({ destination: DOWN }) : undefined;
      const anonymous: Record<string, string>[] = [
        { 'content-type': 'application/json' },
        { 'content-type': 'application/json', authorization: 'Bearer wrong-token' },
      ];
      for (const headers of anonymous) {
        const response = await app.request(path, { method, headers, body });
        expect(response.status).toBe(401);
        expect(await response.text()).not.toContain(DOWN);
      }
      expect(await written()).toEqual(before);
    },
  );

  it('a dashboard session needs its CSRF token to pause', async () => {
    await enqueueTo(pgExecutor(database.pool), UP, 1);
    const app = mountAdmin(database);
    const session = await signIn(app);
    const headers = { cookie: session.cookie, 'content-type': 'application/json' };
    const refused = await app.request(
      '/admin/destinations/pause',
      post({ destination: UP }, headers),
    );
    expect(refused.status).toBe(403);
    expect((await written()).destinations).toEqual([]);
    const done = await app.request(
      '/admin/destinations/pause',
      post({ destination: UP }, { ...headers, 'x-csrf-token': session.csrf }),
    );
    expect(done.status).toBe(200);
    expect((await written()).destinations).toMatchObject([
      { destination: UP, paused_by: 'operator' },
    ]);
  });
});
