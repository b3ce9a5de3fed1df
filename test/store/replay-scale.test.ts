/**
 * The acceptance at 100,000: replaying that many dead messages by filter counts them
 * exactly, runs in bounded statements (each timed: none over 1 s), holds no rows in memory,
 * and keeps every message's id and key. Figures are printed for docs/replay.md; the bench
 * script (bench/replay-scale.ts) runs the same at other sizes and for resends.
 */
import { describe, expect, it } from 'vitest';
import { drainOnce } from '../../src/core/drain.js';
import { replayMessages } from '../../src/core/replay.js';
import { useTestDatabase } from '../support/database.js';
import { freshOutbox, recordingSender } from '../support/drain-fixtures.js';
import { useDriver } from '../support/drivers.js';
import { insertHistory } from '../support/history.js';
import { insertDeadMessages } from '../support/replay-fixtures.js';
import { timedExecutor } from '../support/timed-executor.js';

const database = useTestDatabase();
const driver = useDriver('node-pg', database);

const MATCHING = 100_000;
/** Dead messages the filter must leave alone, spread among the matching ones. */
const OTHERS = 20_000;
/** The longest any one statement may take (the bound). */
const STATEMENT_LIMIT_MS = 1000;

describe('replay at 100,000 dead messages', () => {
  it('counts them exactly, replays them in statements under 1 s each with flat memory, keeping ids and keys', async () => {
    const { outbox, schema } = await freshOutbox(driver);
    // One statement: every sixth message fails differently, and the filter must skip it.
    await insertDeadMessages(database.pool, schema, MATCHING + OTHERS, {
      orderingKey: "'customer-' || (g % 1000)",
      lastError:
        "CASE WHEN g % 6 = 0 THEN 'connection refused' ELSE 'HTTP 503 from hooks.example.com/orders' END",
    });
    const { rows: split } = await database.pool.query(
      `SELECT count(*) FILTER (WHERE last_error LIKE 'HTTP 503%')::int AS matching FROM ${schema}.messages`,
    );
    const matching = split[0].matching as number;
    expect(matching).toBe(MATCHING);
    await database.pool.query(
      `CREATE TABLE ${schema}.before_replay AS SELECT id, key FROM ${schema}.messages WHERE last_error LIKE 'HTTP 503%'`,
    );
    const timed = timedExecutor(driver.db);
    const replays = outbox.store(timed.db).replays();
    const selection = { state: 'dead', errorContains: 'http 503', kinds: ['test.kind'] } as const;

    const dry = await replayMessages({
      store: replays,
      selection,
      requestedBy: 'scale',
      dryRun: true,
    });
    expect(dry.matched).toBe(matching);
    const dryStatements = timed.statements.length;

    const memory: { rss: number; heap: number }[] = [];
    const started = performance.now();
    const report = await replayMessages({
      store: replays,
      selection,
      requestedBy: 'scale',
      ratePerSecond: 100_000,
      batchSize: 2000,
      onProgress: () => {
        const usage = process.memoryUsage();
        memory.push({ rss: usage.rss, heap: usage.heapUsed });
      },
    });
    const elapsedMs = performance.now() - started;
    expect(report).toMatchObject({ matched: matching, replayed: matching, outcome: 'finished' });

    const slowest = timed.statements.reduce((a, b) => (a.ms > b.ms ? a : b));
    const mb = (bytes: number) => Math.round(bytes / 1048576);
    const rss = memory.map((each) => each.rss);
    const heap = memory.map((each) => each.heap);
    console.log(
      `replay of ${matching}: ${timed.statements.length} statements (dry run ${dryStatements}), ` +
        `${report.batches} batches, ${Math.round(elapsedMs)} ms; slowest statement ` +
        `${Math.round(slowest.ms)} ms (${slowest.text}); rss ${mb(Math.min(...rss))} to ` +
        `${mb(Math.max(...rss))} MB, heap ${mb(Math.min(...heap))} to ${mb(Math.max(...heap))} MB ` +
        `over ${memory.length} samples`,
    );
    expect(slowest.ms).toBeLessThan(STATEMENT_LIMIT_MS);
    // Memory stays within a band over the run: the rows stay in the database, never in the
    // process (holding 100,000 records would add far more than this).
    expect(Math.max(...heap) - Math.min(...heap)).toBeLessThan(32 * 1048576);

    // Every one pending again under its own id and key, attempts 0; the others still dead.
    const { rows: kept } = await database.pool.query(
      `SELECT count(*)::int AS n FROM ${schema}.before_replay b
       JOIN ${schema}.messages m ON m.id = b.id AND m.key = b.key
       WHERE m.state = 'pending' AND m.attempts = 0`,
    );
    expect(kept[0].n).toBe(matching);
    const { rows: states } = await database.pool.query(
      `SELECT state, count(*)::int AS n FROM ${schema}.messages GROUP BY state ORDER BY state`,
    );
    expect(states).toEqual([
      { state: 'dead', n: MATCHING + OTHERS - matching },
      { state: 'pending', n: matching },
    ]);

    // A sample delivered for real: the sender sees the original keys.
    const { rows: sample } = await database.pool.query(
      `SELECT key::text FROM ${schema}.before_replay ORDER BY id LIMIT 50`,
    );
    const keys = sample.map((row) => row.key as string);
    const sender = recordingSender();
    await drainOnce({
      store: outbox.store(driver.db),
      keys,
      senders: { 'test.kind': sender.send },
    });
    expect(sender.calls.map((call) => call.key).sort()).toEqual([...keys].sort());
  });
});

describe('resend at 100,000 delivered messages', () => {
  it('takes them out of history in statements under 1 s each, back into messages under their ids and keys', async () => {
    const { outbox, schema } = await freshOutbox(driver);
    await insertHistory(
      database.pool,
      schema,
      `(SELECT g AS id, gen_random_uuid() AS key, 'test.kind' AS kind,
          jsonb_build_object('url', 'https://hooks.example.com/orders/' || g) AS payload,
          'customer-' || (g % 1000) AS ordering_key, 1 AS attempts, 10 AS max_attempts,
          now() AS due_at, NULL::text AS last_error, now() AS created_at,
          now() - interval '1 hour' AS delivered_at, g / 100 AS settle
        FROM generate_series(1, $1::int) AS g) history`,
      'settle',
      [MATCHING],
    );
    await database.pool.query(
      `CREATE TABLE ${schema}.before_resend AS SELECT id, key FROM ${schema}.delivered_messages`,
    );
    const timed = timedExecutor(driver.db);
    const report = await replayMessages({
      store: outbox.store(timed.db).replays(),
      selection: { state: 'delivered', destination: 'hooks.example.com/orders' },
      requestedBy: 'scale',
      ratePerSecond: 100_000,
      batchSize: 2000,
    });
    expect(report).toMatchObject({ matched: MATCHING, replayed: MATCHING, outcome: 'finished' });
    const slowest = timed.statements.reduce((a, b) => (a.ms > b.ms ? a : b));
    console.log(
      `resend of ${MATCHING}: ${timed.statements.length} statements, slowest ${Math.round(slowest.ms)} ms`,
    );
    expect(slowest.ms).toBeLessThan(STATEMENT_LIMIT_MS);
    const { rows } = await database.pool.query(
      `SELECT (SELECT count(*)::int FROM ${schema}.before_resend b
               JOIN ${schema}.messages m ON m.id = b.id AND m.key = b.key
               WHERE m.state = 'pending' AND m.attempts = 0) AS kept,
              (SELECT coalesce(sum(size), 0)::int FROM ${schema}.delivered_groups) AS left_in_history`,
    );
    expect(rows[0]).toEqual({ kept: MATCHING, left_in_history: 0 });
  });
});
