import { describe, expect, it } from 'vitest';
import { drainOnce } from '../../src/core/drain.js';
import { countReplay, replayMessages } from '../../src/core/replay.js';
import type { ReplaySelection } from '../../src/core/replay-selection.js';
import { useTestDatabase } from '../support/database.js';
import { fakeClock, freshOutbox, recordingSender } from '../support/drain-fixtures.js';
import { useDriver } from '../support/drivers.js';
import { auditRows, insertDeadMessages, stateCounts } from '../support/replay-fixtures.js';

const database = useTestDatabase();
const driver = useDriver('node-pg', database);

async function rowsOf(schema: string, where = 'true') {
  const { rows } = await database.pool.query(
    `SELECT id, key::text, state, attempts, due_at, dead_at, delivered_at, ordering_key
     FROM ${schema}.all_messages WHERE ${where} ORDER BY id`,
  );
  return rows;
}

describe('replay selection', () => {
  it('a dry run counts exactly what the filter selects, shows a few, and audits without changing a message', async () => {
    const { schema, store } = await freshOutbox(driver);
    await insertDeadMessages(database.pool, schema, 30);
    await insertDeadMessages(database.pool, schema, 12, { lastError: "'connection refused'" });
    const before = await rowsOf(schema);
    const report = await replayMessages({
      store: store.replays(),
      selection: { state: 'dead', errorContains: 'http 503' },
      requestedBy: 'tester',
      dryRun: true,
    });
    expect(report.matched).toBe(30);
    expect(report.sample).toHaveLength(5);
    expect(report.sample[0]).toMatchObject({
      kind: 'test.kind',
      lastError: 'HTTP 503 from hooks.example.com/orders',
    });
    expect(report.replayed).toBe(0);
    expect(await rowsOf(schema)).toEqual(before);
    const [audit] = await auditRows(database.pool, schema);
    expect(audit).toMatchObject({
      dry_run: true,
      matched: '30',
      replayed: '0',
      outcome: 'finished',
      requested_by: 'tester',
    });
    expect(audit?.selection).toEqual({ state: 'dead', errorContains: 'http 503' });
  });

  it('each filter narrows it: kind, destination, ordering key, error text, time range, ids', async () => {
    const { schema, store } = await freshOutbox(driver);
    await insertDeadMessages(database.pool, schema, 10, { orderingKey: "'customer-' || (g % 2)" });
    await insertDeadMessages(database.pool, schema, 4, {
      kind: "'email'",
      payload: `jsonb_build_object('to', jsonb_build_array('Ada <ada@Example.com>'), 'subject', 's')`,
      lastError: "'SES MessageRejected'",
      deadAt: "now() - interval '3 days'",
    });
    await insertDeadMessages(database.pool, schema, 3, {
      payload: `jsonb_build_object('url', 'http://other.example.org/orders/' || g)`,
    });
    const replays = store.replays();
    const count = async (selection: Omit<ReplaySelection, 'state'>) =>
      (await countReplay(replays, { state: 'dead', ...selection })).matched;
    expect(await count({})).toBe(17);
    expect(await count({ kinds: ['email'] })).toBe(4);
    expect(await count({ kinds: ['email', 'test.kind'] })).toBe(17);
    expect(await count({ destination: 'hooks.example.com/orders' })).toBe(10);
    expect(await count({ destination: 'HOOKS.example.com/orders/1' })).toBe(2); // 1 and 10
    expect(await count({ destination: 'https://other.example.org' })).toBe(3);
    expect(await count({ destination: 'orders' })).toBe(0); // a prefix, not anywhere in the URL
    expect(await count({ destination: '@example.com' })).toBe(4);
    expect(await count({ orderingKeys: ['customer-1'] })).toBe(5);
    expect(await count({ errorContains: 'messagerejected' })).toBe(4);
    expect(await count({ until: new Date(Date.now() - 86_400_000) })).toBe(4);
    expect(await count({ since: new Date(Date.now() - 86_400_000) })).toBe(13);
    const ids = (await rowsOf(schema)).map((row) => row.id as string);
    expect(await count({ ids: [ids[0]!, ids[16]!] })).toBe(2);
    expect(await count({ afterId: ids[9]! })).toBe(7);
    expect(await count({ kinds: ['email'], errorContains: 'HTTP' })).toBe(0);
  });

  it('error text and destination are matched as written: % and _ are no wildcards', async () => {
    const { schema, store } = await freshOutbox(driver);
    await insertDeadMessages(database.pool, schema, 2, { lastError: "'rate 100% used'" });
    await insertDeadMessages(database.pool, schema, 3, { lastError: "'rate 100 used'" });
    const replays = store.replays();
    const count = async (selection: Omit<ReplaySelection, 'state'>) =>
      (await countReplay(replays, { state: 'dead', ...selection })).matched;
    expect(await count({ errorContains: '100%' })).toBe(2);
    expect(await count({ errorContains: 'rate_100' })).toBe(0);
    expect(await count({ errorContains: '%' })).toBe(2);
    expect(await count({ destination: 'hooks.example.com/%' })).toBe(0);
  });

  it('a selection that matches nothing writes nothing, not even an audit row', async () => {
    const { schema, store } = await freshOutbox(driver);
    await insertDeadMessages(database.pool, schema, 3);
    for (const dryRun of [true, false]) {
      const report = await replayMessages({
        store: store.replays(),
        selection: { state: 'dead', kinds: ['nothing.here'] },
        requestedBy: 'tester',
        dryRun,
      });
      expect(report).toMatchObject({ matched: 0, replayed: 0, auditId: null, outcome: 'empty' });
    }
    expect(await auditRows(database.pool, schema)).toEqual([]);
    expect(await stateCounts(database.pool, schema)).toEqual({ dead: 3 });
  });
});

describe('replay', () => {
  it('makes dead messages pending in place: same id and key, attempts 0, due now', async () => {
    const { schema, store } = await freshOutbox(driver);
    await insertDeadMessages(database.pool, schema, 25);
    await insertDeadMessages(database.pool, schema, 5, { kind: "'other.kind'" });
    const before = await rowsOf(schema, "kind = 'test.kind'");
    const started = Date.now();
    const report = await replayMessages({
      store: store.replays(),
      selection: { state: 'dead', kinds: ['test.kind'] },
      requestedBy: 'tester',
      batchSize: 10,
    });
    expect(report).toMatchObject({ matched: 25, replayed: 25, batches: 3, outcome: 'finished' });
    const after = await rowsOf(schema, "kind = 'test.kind'");
    expect(after.map((row) => [row.id, row.key])).toEqual(before.map((row) => [row.id, row.key]));
    for (const row of after) {
      expect(row).toMatchObject({ state: 'pending', attempts: 0, dead_at: null });
      expect((row.due_at as Date).getTime()).toBeGreaterThanOrEqual(started - 1000);
    }
    expect(await stateCounts(database.pool, schema)).toEqual({ dead: 5, pending: 25 });
    const [audit] = await auditRows(database.pool, schema);
    expect(audit).toMatchObject({
      dry_run: false,
      matched: '25',
      replayed: '25',
      outcome: 'finished',
    });
    expect(audit?.finished_at).toBeInstanceOf(Date);
  });

  it('resends delivered messages: out of their history group, back into messages with id and key, and dedupe-kept rows in place', async () => {
    const { outbox, schema, store } = await freshOutbox(driver);
    const db = driver.db;
    const plain = await outbox.enqueue(
      db,
      [0, 1, 2, 3].map((n) => ({ kind: 'test.kind', payload: { n } })),
    );
    const kept = await outbox.enqueue(db, [
      { kind: 'test.kind', payload: { n: 4 }, dedupeKey: 'order-4' },
    ]);
    const sender = recordingSender();
    await drainOnce({ store, senders: { 'test.kind': sender.send } });
    expect(sender.delivered).toHaveLength(5);
    const before = await rowsOf(schema);
    const groupsBefore = await database.pool.query(
      `SELECT sum(size)::int AS n FROM ${schema}.delivered_groups`,
    );
    expect(groupsBefore.rows[0].n).toBe(4);

    const chosen = [before[1]!.id as string, before[3]!.id as string, before[4]!.id as string];
    const report = await replayMessages({
      store: store.replays(),
      selection: { state: 'delivered', ids: chosen },
      requestedBy: 'tester',
    });
    expect(report).toMatchObject({ matched: 3, replayed: 3, outcome: 'finished' });
    const after = await rowsOf(schema);
    expect(after.map((row) => [row.id, row.key])).toEqual(before.map((row) => [row.id, row.key]));
    expect(after.map((row) => row.state)).toEqual([
      'delivered',
      'pending',
      'delivered',
      'pending',
      'pending',
    ]);
    const { rows: live } = await database.pool.query(
      `SELECT id, key::text, state, attempts, dedupe_key::text, delivered_at FROM ${schema}.messages ORDER BY id`,
    );
    expect(live.map((row) => row.id)).toEqual(chosen);
    for (const row of live)
      expect(row).toMatchObject({ state: 'pending', attempts: 0, delivered_at: null });
    expect(live[2]?.dedupe_key).toBe('order-4');
    const groupsAfter = await database.pool.query(
      `SELECT sum(size)::int AS n, sum(cardinality(messages))::int AS m FROM ${schema}.delivered_groups`,
    );
    expect(groupsAfter.rows[0]).toEqual({ n: 2, m: 2 });

    // Sent again under the same keys.
    const again = recordingSender();
    await drainOnce({ store, senders: { 'test.kind': again.send } });
    expect(again.calls.map((call) => call.key).sort()).toEqual(
      [plain[1], plain[3], kept[0]].sort(),
    );
  });

  it('a stop leaves the batches done replayed, counted exactly in a stopped audit row', async () => {
    const { schema, store } = await freshOutbox(driver);
    await insertDeadMessages(database.pool, schema, 100);
    const stop = new AbortController();
    const report = await replayMessages({
      store: store.replays(),
      selection: { state: 'dead' },
      requestedBy: 'tester',
      batchSize: 10,
      signal: stop.signal,
      onProgress: (progress) => {
        if (progress.batches === 3) stop.abort();
      },
    });
    expect(report).toMatchObject({
      matched: 100,
      replayed: 30,
      batches: 3,
      outcome: 'stopped',
      stoppedBy: 'signal',
    });
    expect(await stateCounts(database.pool, schema)).toEqual({ dead: 70, pending: 30 });
    const [audit] = await auditRows(database.pool, schema);
    expect(audit).toMatchObject({ replayed: '30', outcome: 'stopped' });
    // Going on after the last id replayed takes the rest.
    const rest = await replayMessages({
      store: store.replays(),
      selection: { state: 'dead', afterId: report.lastId! },
      requestedBy: 'tester',
    });
    expect(rest).toMatchObject({ matched: 70, replayed: 70, outcome: 'finished' });
  });

  it('keeps to the rate: no more messages replayed than the rate allows for the time so far', async () => {
    const { schema, store } = await freshOutbox(driver);
    await insertDeadMessages(database.pool, schema, 60);
    const seen: { replayed: number; elapsedMs: number }[] = [];
    const report = await replayMessages({
      store: store.replays(),
      selection: { state: 'dead' },
      requestedBy: 'tester',
      ratePerSecond: 50,
      batchSize: 20,
      onProgress: (progress) => {
        seen.push(progress);
      },
    });
    expect(report.replayed).toBe(60);
    // Batch n starts once (n - 1) batches fit the rate: the third after 800 ms.
    expect(seen.map((each) => each.replayed)).toEqual([20, 40, 60]);
    expect(seen[2]!.elapsedMs).toBeGreaterThanOrEqual(800);
  });

  it('paces batches by the rate on its clock, and stops before a batch the budget cannot start', async () => {
    const { schema, store } = await freshOutbox(driver);
    await insertDeadMessages(database.pool, schema, 100);
    const clock = fakeClock();
    const pauses: number[] = [];
    const starts: number[] = [];
    const t0 = clock.now().getTime();
    const report = await replayMessages({
      store: store.replays(),
      selection: { state: 'dead' },
      requestedBy: 'tester',
      ratePerSecond: 20,
      batchSize: 10,
      budgetMs: 2_000,
      clock,
      pause: async (ms) => {
        pauses.push(ms);
        clock.advance(ms);
      },
      onProgress: (progress) => {
        starts.push(progress.elapsedMs);
      },
    });
    // 10 per batch at 20 a second: a batch every 500 ms; the fifth would start at 2,000 ms.
    expect(pauses).toEqual([500, 500, 500]);
    expect(starts.map((at) => at - (starts[0] ?? 0))).toEqual([0, 500, 1000, 1500]);
    expect(report).toMatchObject({
      replayed: 40,
      batches: 4,
      outcome: 'stopped',
      stoppedBy: 'budget',
    });
    expect(clock.now().getTime() - t0).toBe(1500);
    expect(await stateCounts(database.pool, schema)).toEqual({ dead: 60, pending: 40 });
  });

  it('lists audit rows newest first', async () => {
    const { schema, store } = await freshOutbox(driver);
    await insertDeadMessages(database.pool, schema, 3);
    const replays = store.replays();
    for (const requestedBy of ['first', 'second', 'third']) {
      await replayMessages({
        store: replays,
        selection: { state: 'dead' },
        requestedBy,
        dryRun: true,
      });
    }
    const list = await replays.listReplayAudits();
    expect(list.map((audit) => audit.requestedBy)).toEqual(['third', 'second', 'first']);
    const older = await replays.listReplayAudits({ beforeId: list[0]!.id, limit: 1 });
    expect(older.map((audit) => audit.requestedBy)).toEqual(['second']);
  });
});
