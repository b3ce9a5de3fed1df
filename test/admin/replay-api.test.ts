/** The admin API's replay routes, mounted in a test's own Hono app over a real database. */
import { beforeEach, describe, expect, it } from 'vitest';
import { useTestDatabase } from '../support/database.js';
import { auditRows, insertDeadMessages, stateCounts } from '../support/replay-fixtures.js';
import { ADMIN_TOKEN, mountAdmin, signIn } from './admin-harness.js';

const database = useTestDatabase();
const auth = { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/json' };

function post(body: unknown, headers: Record<string, string> = auth) {
  return { method: 'POST', headers, body: typeof body === 'string' ? body : JSON.stringify(body) };
}

beforeEach(async () => {
  await database.pool.query('TRUNCATE outbox.messages, outbox.delivered_groups, outbox.replays');
});

describe('the replay API', () => {
  it('a dry run answers the exact count and a sample, audited as the API caller; GET lists it', async () => {
    await insertDeadMessages(database.pool, 'outbox', 8);
    await insertDeadMessages(database.pool, 'outbox', 2, { kind: "'demo.other'" });
    const app = mountAdmin(database);
    const response = await app.request(
      '/admin/replays/dry-run',
      post({ selection: { state: 'dead', kinds: ['test.kind'] }, by: 'ada' }),
    );
    expect(response.status).toBe(200);
    const { replay } = await response.json();
    expect(replay).toMatchObject({ matched: 8, replayed: 0, dryRun: true, outcome: 'finished' });
    expect(replay.sample).toHaveLength(5);
    expect(await stateCounts(database.pool, 'outbox')).toEqual({ dead: 10 });

    const list = await app.request('/admin/replays', { headers: auth });
    expect(list.status).toBe(200);
    const { replays } = await list.json();
    expect(replays).toMatchObject([
      {
        id: replay.auditId,
        requestedBy: 'ada via admin api (bearer token)',
        dryRun: true,
        matched: 8,
        selection: { state: 'dead', kinds: ['test.kind'] },
      },
    ]);
  });

  it('a replay answers its report, and one cut short by its budget says where to go on', async () => {
    await insertDeadMessages(database.pool, 'outbox', 300);
    const app = mountAdmin(database);
    const first = await app.request(
      '/admin/replays',
      post({ selection: { state: 'dead' }, ratePerSecond: 100, batchSize: 50, budgetMs: 600 }),
    );
    expect(first.status).toBe(200);
    const { replay } = await first.json();
    expect(replay).toMatchObject({ matched: 300, outcome: 'stopped', stoppedBy: 'budget' });
    expect(replay.replayed).toBeGreaterThan(0);
    expect(replay.replayed).toBeLessThan(300);
    expect(await stateCounts(database.pool, 'outbox')).toEqual({
      dead: 300 - replay.replayed,
      pending: replay.replayed,
    });
    const rest = await app.request(
      '/admin/replays',
      post({ selection: { state: 'dead', afterId: replay.lastId }, ratePerSecond: 100_000 }),
    );
    expect((await rest.json()).replay).toMatchObject({
      matched: 300 - replay.replayed,
      replayed: 300 - replay.replayed,
      outcome: 'finished',
    });
    const audits = await auditRows(database.pool, 'outbox');
    expect(audits.map((row) => [row.outcome, Number(row.replayed)])).toEqual([
      ['stopped', replay.replayed],
      ['finished', 300 - replay.replayed],
    ]);
  });

  it('GET /replays pages newest first by nextBefore', async () => {
    await insertDeadMessages(database.pool, 'outbox', 1);
    const app = mountAdmin(database);
    for (const by of ['one', 'two', 'three']) {
      await app.request('/admin/replays/dry-run', post({ selection: { state: 'dead' }, by }));
    }
    const first = await (await app.request('/admin/replays?limit=2', { headers: auth })).json();
    expect(first.replays.map((row: { requestedBy: string }) => row.requestedBy)).toEqual([
      'three via admin api (bearer token)',
      'two via admin api (bearer token)',
    ]);
    const rest = await (
      await app.request(`/admin/replays?limit=2&before=${first.nextBefore}`, { headers: auth })
    ).json();
    expect(rest.replays.map((row: { requestedBy: string }) => row.requestedBy)).toEqual([
      'one via admin api (bearer token)',
    ]);
    expect(rest.nextBefore).toBeNull();
  });

  it('a selection that matches nothing writes nothing', async () => {
    await insertDeadMessages(database.pool, 'outbox', 2);
    const app = mountAdmin(database);
    for (const path of ['/admin/replays', '/admin/replays/dry-run']) {
      const response = await app.request(path, post({ selection: { state: 'delivered' } }));
      expect(response.status).toBe(200);
      expect((await response.json()).replay).toMatchObject({
        matched: 0,
        auditId: null,
        outcome: 'empty',
      });
    }
    expect(await auditRows(database.pool, 'outbox')).toEqual([]);
  });

  it.each([
    ['not json', ['body']],
    [[], ['body']],
    [{}, ['selection']],
    [{ selection: { state: 'pending' } }, ['selection', 'state']],
    [{ selection: { state: 'dead', kinds: 'webhook' } }, ['selection', 'kinds']],
    [{ selection: { state: 'dead', kinds: ['ok', 7] } }, ['selection', 'kinds', 1]],
    [{ selection: { state: 'dead', since: 'last tuesday' } }, ['selection', 'since']],
    [{ selection: { state: 'dead', ids: ['0'] } }, ['selection', 'ids', 0]],
    [{ selection: { state: 'dead', errorContains: '' } }, ['selection', 'errorContains']],
    [{ selection: { state: 'dead', kind: 'webhook' } }, ['selection', 'kind']],
    [{ selection: { state: 'dead' }, ratePerSecond: 0 }, ['ratePerSecond']],
    [{ selection: { state: 'dead' }, batchSize: 1.5 }, ['batchSize']],
    [{ selection: { state: 'dead' }, budgetMs: 600_000 }, ['budgetMs']],
    [{ selection: { state: 'dead' }, by: 'x'.repeat(101) }, ['by']],
    [{ selection: { state: 'dead' }, dryRun: true }, ['dryRun']],
  ])('POST /replays with %j is a 400 naming %j, writing nothing', async (body, path) => {
    await insertDeadMessages(database.pool, 'outbox', 2);
    const app = mountAdmin(database);
    const response = await app.request('/admin/replays', post(body));
    expect(response.status).toBe(400);
    expect((await response.json()).issues).toMatchObject([{ path }]);
    expect(await auditRows(database.pool, 'outbox')).toEqual([]);
    expect(await stateCounts(database.pool, 'outbox')).toEqual({ dead: 2 });
  });

  it.each([
    ['limit=0', ['limit']],
    ['limit=x', ['limit']],
    ['before=abc', ['before']],
  ])('GET /replays?%s is a 400 naming %j', async (query, path) => {
    const response = await mountAdmin(database).request(`/admin/replays?${query}`, {
      headers: auth,
    });
    expect(response.status).toBe(400);
    expect((await response.json()).issues).toMatchObject([{ path }]);
  });

  it.each([
    ['POST', '/admin/replays'],
    ['POST', '/admin/replays/dry-run'],
    ['GET', '/admin/replays'],
  ])(
    '%s %s answers 401 without a token or with a wrong one, and changes nothing',
    async (method, path) => {
      await insertDeadMessages(database.pool, 'outbox', 2);
      const app = mountAdmin(database);
      const body = method === 'POST' ? JSON.stringify({ selection: { state: 'dead' } }) : undefined;
      const anonymous: Record<string, string>[] = [
        { 'content-type': 'application/json' },
        { 'content-type': 'application/json', authorization: 'Bearer wrong-token' },
      ];
      for (const headers of anonymous) {
        const response = await app.request(path, { method, headers, body });
        expect(response.status).toBe(401);
      }
      expect(await auditRows(database.pool, 'outbox')).toEqual([]);
      expect(await stateCounts(database.pool, 'outbox')).toEqual({ dead: 2 });
    },
  );

  it('a dashboard session needs its CSRF token, and is named in the audit row', async () => {
    await insertDeadMessages(database.pool, 'outbox', 2);
    const app = mountAdmin(database);
    const session = await signIn(app);
    const body = { selection: { state: 'dead' } };
    const headers = { cookie: session.cookie, 'content-type': 'application/json' };
    const refused = await app.request('/admin/replays', post(body, headers));
    expect(refused.status).toBe(403);
    expect(await stateCounts(database.pool, 'outbox')).toEqual({ dead: 2 });
    const done = await app.request(
      '/admin/replays',
      post(body, { ...headers, 'x-csrf-token': session.csrf }),
    );
    expect(done.status).toBe(200);
    const [audit] = await auditRows(database.pool, 'outbox');
    expect(audit?.requested_by).toMatch(/^admin dashboard \(session [\w-]{8}\)$/);
    expect(await stateCounts(database.pool, 'outbox')).toEqual({ pending: 2 });
  });
});
