/**
 * `npm run bench:statements`: where one outbox-relay drain spends the server's time, statement
 * by statement. Beside `npm run bench` (which compares systems by rate, CPU and WAL), this
 * drains one backlog per case on a PostgreSQL of its own with `pg_stat_statements` loaded, and
 * prints, per statement, how often it ran and was planned and how long both took, per message;
 * and how many rows each claim came back with. docs/benchmarks.md quotes it where a figure is
 * per claim or per plan.
 *
 *   npm run bench:statements                               the default cases
 *   BENCH_CASES=10x5000,1000x5000 npm run bench:statements  keys x messages (0 keys: none)
 *
 * Timings move by a fifth from run to run on a shared machine; counts (calls, plans, rows per
 * claim) do not.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { drainOnce } from '../src/core/drain.js';
import type { ClaimResult, OutboxStore } from '../src/core/outbox-store.js';
import { startEmbeddedPostgres } from '../src/dev/embedded-postgres.js';
import { pgExecutor } from '../src/drivers/node-pg.js';
import { progress } from './lib/progress.js';
import { serverCostMeter } from './lib/server-cost.js';
import { THROUGHPUT_BATCH, THROUGHPUT_CONCURRENCY } from './scenarios/no-op-drain.js';
import { BENCH_KIND, benchOutbox } from './systems/outbox-relay.js';
import { benchPayload, ENQUEUE_CHUNK, orderingKeyOf } from './systems/types.js';

/** Scenario 1's backlog without keys, and scenario 11's cases. */
const DEFAULT_CASES = '0x5000,10x5000,1x5000,1000x5000,10x50000';
/** The statements listed per case, most server time first. */
const STATEMENTS_SHOWN = 6;

interface Case {
  keys: number;
  messages: number;
}

function readCases(text: string): Case[] {
  return text.split(',').map((each) => {
    const match = /^(\d+)x(\d+)$/.exec(each.trim());
    if (!match) throw new Error(`BENCH_CASES: "${each}" is not keys x messages, e.g. 10x5000`);
    return { keys: Number(match[1]), messages: Number(match[2]) };
  });
}

const cases = readCases(process.env.BENCH_CASES ?? DEFAULT_CASES);
const dataDir = await mkdtemp(join(tmpdir(), 'outbox-relay-statements-pg-'));
progress('starting embedded PostgreSQL with pg_stat_statements');
const server = await startEmbeddedPostgres({
  dataDir,
  persistent: false,
  settings: {
    shared_preload_libraries: 'pg_stat_statements',
    'pg_stat_statements.track_planning': 'on',
  },
});
const stop = async () => {
  await server.stop().catch(() => {});
  await rm(dataDir, { recursive: true, force: true });
};
process.once('SIGINT', () => {
  progress('SIGINT: stopping PostgreSQL');
  void stop().finally(() => process.exit(130));
});

const admin = new pg.Pool({ connectionString: server.url, max: 2 });
try {
  await admin.query('CREATE EXTENSION pg_stat_statements');
  const meter = await serverCostMeter(admin);
  for (const each of cases) await measure(each, meter);
} finally {
  await admin.end();
  await stop();
}

async function measure(
  { keys, messages }: Case,
  meter: Awaited<ReturnType<typeof serverCostMeter>>,
) {
  const label = `${messages.toLocaleString('en-US')} messages over ${
    keys === 0 ? 'no' : keys.toLocaleString('en-US')
  } ordering key${keys === 1 ? '' : 's'}`;
  progress(`${label}: enqueueing`);
  await admin.query('DROP DATABASE IF EXISTS statements WITH (FORCE)');
  await admin.query('CREATE DATABASE statements');
  const url = new URL(server.url);
  url.pathname = '/statements';
  // As the bench opens outbox-relay: a pool of 10 through pgExecutor.
  const pool = new pg.Pool({ connectionString: url.toString(), max: 10 });
  pool.on('error', () => {});
  try {
    const outbox = benchOutbox();
    const db = pgExecutor(pool);
    await outbox.migrate(db);
    for (let start = 0; start < messages; start += ENQUEUE_CHUNK) {
      const size = Math.min(ENQUEUE_CHUNK, messages - start);
      await outbox.enqueue(
        db,
        Array.from({ length: size }, (_, i) => ({
          kind: BENCH_KIND,
          payload: benchPayload(start + i),
          orderingKey: keys === 0 ? undefined : orderingKeyOf(start + i, keys),
        })),
      );
    }
    await pool.query('VACUUM ANALYZE outbox.messages');
    await admin.query('SELECT pg_stat_statements_reset()');
    progress(`${label}: draining`);
    const claims: ClaimResult[] = [];
    const store = outbox.store(db);
    const watched: OutboxStore = {
      async claim(request) {
        const result = await store.claim(request);
        claims.push(result);
        return result;
      },
      settle: (requests, now, options) => store.settle(requests, now, options),
    };
    const before = await meter.snapshot();
    const startedAt = performance.now();
    const report = await drainOnce({
      store: watched,
      senders: { [BENCH_KIND]: async () => {} },
      batchSize: THROUGHPUT_BATCH,
      concurrency: THROUGHPUT_CONCURRENCY,
    });
    const elapsedMs = performance.now() - startedAt;
    const cost = await meter.since(before);
    const perMessage = (micros: number) => (micros / report.delivered).toFixed(1);
    console.log(
      `\n${label}, batch ${THROUGHPUT_BATCH}, ${THROUGHPUT_CONCURRENCY} in flight, no-op sends`,
    );
    console.log(
      `  ${Math.round((report.delivered / elapsedMs) * 1000).toLocaleString('en-US')} msg/s; server CPU ${
        cost.cpuMicros === null ? 'unknown' : `${perMessage(cost.cpuMicros)} µs`
      } and WAL ${Math.round(cost.walBytes / report.delivered)} B per message; ${report.batches} claims, ${report.settles} settles, ${report.released} released`,
    );
    console.log(`  claims: ${claimSizes(claims)}`);
    const { rows } = await admin.query<StatementRow>(
      `SELECT calls, plans, total_plan_time, total_exec_time, rows,
         left(regexp_replace(query, '\\s+', ' ', 'g'), 60) AS query
       FROM pg_stat_statements
       WHERE dbid = (SELECT oid FROM pg_database WHERE datname = 'statements')
       ORDER BY total_plan_time + total_exec_time DESC
       LIMIT ${STATEMENTS_SHOWN}`,
    );
    console.log('  calls | plans | planning ms | executing ms | µs per message | rows | statement');
    for (const row of rows) {
      const planMs = Number(row.total_plan_time);
      const execMs = Number(row.total_exec_time);
      console.log(
        `  ${row.calls} | ${row.plans} | ${planMs.toFixed(1)} | ${execMs.toFixed(1)} | ${perMessage(
          (planMs + execMs) * 1000,
        )} | ${row.rows} | ${describe(row.query)}`,
      );
    }
  } finally {
    await pool.end();
  }
}

interface StatementRow {
  calls: string;
  plans: string;
  total_plan_time: number;
  total_exec_time: number;
  rows: string;
  query: string;
}

/** Which of the store's statements a text is, by how it starts. */
function describe(query: string): string {
  if (query.startsWith('WITH RECURSIVE claim_now')) return `claim: ${query}...`;
  if (query.startsWith('WITH o AS')) return `settle: ${query}...`;
  return `${query}...`;
}

/** How many claims came back full, short or empty, and how many rows continued a held run. */
function claimSizes(claims: readonly ClaimResult[]): string {
  const sizes = new Map<number, number>();
  let continued = 0;
  for (const { claimed } of claims) {
    sizes.set(claimed.length, (sizes.get(claimed.length) ?? 0) + 1);
    continued += claimed.filter((message) => message.behind !== undefined).length;
  }
  const counts = [...sizes]
    .sort(([a], [b]) => b - a)
    .map(([rows, times]) => `${times} x ${rows} rows`)
    .join(', ');
  return `${counts}; ${claims.filter((claim) => claim.caughtUp).length} caught up, ${continued} runs continued`;
}
