/**
 * Replay at scale, on an embedded PostgreSQL of its own: N dead messages redriven by filter, and
 * N delivered messages (in history groups of 100, as settles leave them) resent by filter. Every
 * statement is timed and the process's memory sampled after each batch; the figures go in
 * docs/replay.md.
 *
 *   npx tsx bench/replay-scale.ts                      # 100,000 of each
 *   REPLAY_SCALE_MESSAGES=1000000 npx tsx bench/replay-scale.ts
 */
import { replayMessages } from '../src/core/replay.js';
import type { ReplaySelection } from '../src/core/replay-selection.js';
import { pgExecutor } from '../src/drivers/node-pg.js';
import { createOutbox } from '../src/outbox.js';
import { insertHistoryGroups } from '../src/store/history-groups.js';
import { insertDeadMessages } from '../test/support/replay-fixtures.js';
import { timedExecutor } from '../test/support/timed-executor.js';
import { benchPool, startBenchPostgres } from './lib/postgres.js';

const messages = Number(process.env.REPLAY_SCALE_MESSAGES ?? 100_000);
const postgres = await startBenchPostgres();
try {
  const url = await postgres.createDatabase('replay_scale');
  const pool = benchPool(url, 4);
  const outbox = createOutbox({ kinds: { 'test.kind': true } });
  await outbox.migrate(pgExecutor(pool));
  let started = performance.now();
  await insertDeadMessages(pool, 'outbox', messages, { orderingKey: "'customer-' || (g % 1000)" });
  await pool.query(
    insertHistoryGroups(
      'outbox',
      `(SELECT ${messages} + g AS id, gen_random_uuid() AS key, 'test.kind' AS kind,
          jsonb_build_object('url', 'https://hooks.example.com/orders/' || g, 'body', g) AS payload,
          'customer-' || (g % 1000) AS ordering_key, 1 AS attempts, 10 AS max_attempts,
          now() AS due_at, NULL::text AS last_error, now() AS created_at,
          now() - interval '1 hour' + (g / 100) * interval '1 ms' AS delivered_at, g / 100 AS settle
        FROM generate_series(1, $1::int) AS g) history`,
      'settle',
    ),
    [messages],
  );
  await pool.query(`SELECT setval(pg_get_serial_sequence('outbox.messages', 'id'), $1)`, [
    2 * messages,
  ]);
  await pool.query('VACUUM ANALYZE outbox.messages, outbox.delivered_groups');
  console.log(`${messages} dead and ${messages} delivered written in ${ms(started)}`);

  const only = process.env.REPLAY_SCALE_ONLY;
  for (const selection of [
    { state: 'dead', destination: 'hooks.example.com/orders' },
    { state: 'delivered', destination: 'hooks.example.com/orders' },
  ] satisfies ReplaySelection[]) {
    if (only !== undefined && only !== selection.state) continue;
    const timed = timedExecutor(
      pgExecutor(pool, { prepare: process.env.REPLAY_SCALE_PREPARE !== '0' }),
    );
    const replays = outbox.store(timed.db).replays();
    started = performance.now();
    const dry = await replayMessages({
      store: replays,
      selection,
      requestedBy: 'bench',
      dryRun: true,
    });
    const dryMs = performance.now() - started;
    const dryStatements = timed.statements.splice(0);
    const memory: { rss: number; heap: number }[] = [];
    started = performance.now();
    const report = await replayMessages({
      store: replays,
      selection,
      requestedBy: 'bench',
      ratePerSecond: 100_000,
      batchSize: Number(process.env.REPLAY_SCALE_BATCH ?? 2000),
      onProgress: () => {
        const { rss, heapUsed } = process.memoryUsage();
        memory.push({ rss, heap: heapUsed });
      },
    });
    const slowest = (list: { ms: number }[]) => Math.max(...list.map((each) => each.ms));
    const sorted = timed.statements.map((each) => each.ms).sort((a, b) => a - b);
    const at = (share: number) => Math.round(sorted[Math.floor(share * (sorted.length - 1))] ?? 0);
    const band = (values: number[]) =>
      `${mb(Math.min(...values))} to ${mb(Math.max(...values))} MB`;
    console.log(
      `${selection.state}: dry run ${dry.matched} matched in ${Math.round(dryMs)} ms ` +
        `(${dryStatements.length} statements, slowest ${Math.round(slowest(dryStatements))} ms); ` +
        `replayed ${report.replayed} in ${ms(started)}, ${report.batches} batches, ` +
        `${timed.statements.length} statements, median ${at(0.5)} ms, p99 ${at(0.99)} ms, ` +
        `slowest ${Math.round(slowest(timed.statements))} ms; ` +
        `rss ${band(memory.map((each) => each.rss))}, heap ${band(memory.map((each) => each.heap))}`,
    );
    if (process.env.REPLAY_SCALE_SLOW) {
      for (const each of timed.statements.filter((statement) => statement.ms > 300)) {
        console.log(
          `  ${Math.round(each.ms)} ms: ${each.text} ${JSON.stringify(each.params?.slice(7))}`,
        );
      }
    }
  }
  await pool.end();
} finally {
  await postgres.stop();
}

function ms(since: number): string {
  return `${Math.round(performance.now() - since)} ms`;
}

function mb(bytes: number): number {
  return Math.round(bytes / 1048576);
}
