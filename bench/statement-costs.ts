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
 *   BENCH_CASES=10x5000/2 npm run bench:statements          half of them without a key, in turns
 *   BENCH_CASES=idle,idle-keyed npm run bench:statements    idle cron ticks (see measureIdle)
 *   BENCH_STATEMENTS_SHOWN=20 npm run bench:statements      more statements per case (6)
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
import { dueClaimNamed } from '../src/store/due-claim-shape.js';
import { progress } from './lib/progress.js';
import { serverCostMeter } from './lib/server-cost.js';
import { MIXED_TURN } from './scenarios/harness.js';
import { THROUGHPUT_BATCH, THROUGHPUT_CONCURRENCY } from './scenarios/no-op-drain.js';
import { BENCH_KIND, benchOutbox } from './systems/outbox-relay.js';
import { benchPayload, ENQUEUE_CHUNK, orderingKeyOf } from './systems/types.js';

/** Scenario 1's backlog without keys, scenario 11's cases, and idle ticks. */
const DEFAULT_CASES = '0x5000,10x5000,1x5000,1000x5000,10x50000,idle,idle-keyed';
/** How a due claim takes keyed rows, as `describe` says it. */
const CLAIM_WAYS = {
  walk: 'walking the keys',
  heads: 'taking heads',
  none: 'unkeyed rows only',
} as const;

/** The statements listed per case, most server time first (BENCH_STATEMENTS_SHOWN). */
const STATEMENTS_SHOWN = readStatementsShown(process.env.BENCH_STATEMENTS_SHOWN);

function readStatementsShown(text: string | undefined): number {
  const shown = Number(text ?? 6);
  if (!Number.isInteger(shown) || shown < 1 || shown > 100) {
    throw new Error(`BENCH_STATEMENTS_SHOWN must be a whole number from 1 to 100, got "${text}"`);
  }
  return shown;
}
/** Idle ticks timed per idle case, after a few untimed ones (the server's own caches warm). */
const IDLE_TICKS = 200;
const IDLE_WARM_TICKS = 20;
/** Messages an idle case holds, due in an hour: a tick finds nothing due. */
const IDLE_HELD = 100;
const IDLE_KEYS = 10;

type Case =
  /**
   * A drain of a backlog of `messages` over `keys` ordering keys (0: none); with `mixed`, every
   * other turn of MIXED_TURN messages goes without a key (scenario 11's mixed case).
   */
  | { idle: false; keys: number; messages: number; mixed: boolean }
  /** Cron ticks with nothing due, the messages held keyed or not. */
  | { idle: true; keyed: boolean };

function readCases(text: string): Case[] {
  return text.split(',').map((each) => {
    const name = each.trim();
    if (name === 'idle' || name === 'idle-keyed') return { idle: true, keyed: name !== 'idle' };
    const match = /^(\d+)x(\d+)(\/2)?$/.exec(name);
    if (!match) {
      throw new Error(
        `BENCH_CASES: "${each}" is not keys x messages (e.g. 10x5000, or 10x5000/2 for half without a key), idle or idle-keyed`,
      );
    }
    return {
      idle: false,
      keys: Number(match[1]),
      messages: Number(match[2]),
      mixed: match[3] !== undefined,
    };
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
// pg-pool's end() resolves once it has asked its clients to close, not once they have: the
// server's shutdown right after may reach a client first, as an error no one is listening for.
admin.on('error', () => {});
try {
  await admin.query('CREATE EXTENSION pg_stat_statements');
  const meter = await serverCostMeter(admin);
  for (const each of cases) {
    if (each.idle) await measureIdle(each.keyed, meter);
    else await measure(each, meter);
  }
} finally {
  await admin.end();
  await stop();
}

type Meter = Awaited<ReturnType<typeof serverCostMeter>>;

async function measure(
  { keys, messages, mixed }: { keys: number; messages: number; mixed: boolean },
  meter: Meter,
) {
  const label = `${messages.toLocaleString('en-US')} messages over ${
    keys === 0 ? 'no' : keys.toLocaleString('en-US')
  } ordering key${keys === 1 ? '' : 's'}${mixed ? ', half without one' : ''}`;
  const keyOf = (index: number) =>
    keys === 0 || (mixed && Math.floor(index / MIXED_TURN) % 2 === 1)
      ? undefined
      : orderingKeyOf(index, keys);
  progress(`${label}: enqueueing`);
  const url = await freshDatabase();
  // As the bench opens outbox-relay: a pool of 10 through pgExecutor.
  const pool = new pg.Pool({ connectionString: url, max: 10 });
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
          orderingKey: keyOf(start + i),
        })),
      );
    }
    await pool.query('VACUUM ANALYZE outbox.messages');
    await admin.query('SELECT pg_stat_statements_reset()');
    progress(`${label}: draining`);
    const claims: ClaimResult[] = [];
    const claimTimes: OnTheWire[] = [];
    const settleTimes: OnTheWire[] = [];
    const store = outbox.store(db);
    const watched: OutboxStore = {
      settleFits: (requests) => store.settleFits(requests),
      async claim(request) {
        const startedAt = performance.now();
        const result = await store.claim(request);
        claimTimes.push({ startedAt, endedAt: performance.now() });
        claims.push(result);
        return result;
      },
      async settle(requests, now, options) {
        const startedAt = performance.now();
        const result = await store.settle(requests, now, options);
        settleTimes.push({ startedAt, endedAt: performance.now() });
        return result;
      },
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
    console.log(`  on the wire: ${onTheWire(claimTimes, settleTimes, report.delivered)}`);
    await printStatements(report.delivered, 'message');
  } finally {
    await pool.end();
  }
}

/**
 * Idle cron ticks: each a drainOnce over a new connection and a new store, as a Worker's or a
 * Lambda's scheduled invocation builds them (over Neon's HTTP driver every statement is planned
 * as on a new connection), on an outbox whose messages are all due in an hour. Server CPU per
 * tick counts every server process, so it includes starting and ending the connection.
 */
async function measureIdle(keyed: boolean, meter: Meter) {
  const label = `${IDLE_TICKS} idle ticks, each over a new connection, ${IDLE_HELD} messages${
    keyed ? ` over ${IDLE_KEYS} ordering keys` : ''
  } due in an hour`;
  progress(`${label}: enqueueing`);
  const url = await freshDatabase();
  const pool = new pg.Pool({ connectionString: url, max: 2 });
  pool.on('error', () => {});
  try {
    const outbox = benchOutbox();
    await outbox.migrate(pgExecutor(pool));
    const dueAt = new Date(Date.now() + 3_600_000);
    await outbox.enqueue(
      pgExecutor(pool),
      Array.from({ length: IDLE_HELD }, (_, i) => ({
        kind: BENCH_KIND,
        payload: benchPayload(i),
        dueAt,
        orderingKey: keyed ? orderingKeyOf(i, IDLE_KEYS) : undefined,
      })),
    );
    await pool.query('VACUUM ANALYZE outbox.messages');
    let claims = 0;
    const tick = async () => {
      const client = new pg.Client({ connectionString: url });
      await client.connect();
      try {
        const report = await drainOnce({
          store: outbox.store(pgExecutor(client)),
          senders: { [BENCH_KIND]: async () => {} },
        });
        claims += report.batches;
      } finally {
        await client.end();
      }
    };
    progress(`${label}: ticking`);
    for (let i = 0; i < IDLE_WARM_TICKS; i++) await tick();
    claims = 0;
    await admin.query('SELECT pg_stat_statements_reset()');
    const before = await meter.snapshot();
    for (let i = 0; i < IDLE_TICKS; i++) await tick();
    const cost = await meter.since(before);
    console.log(`\n${label}`);
    console.log(
      `  server CPU ${
        cost.cpuMicros === null ? 'unknown' : `${Math.round(cost.cpuMicros / IDLE_TICKS)} µs`
      } per tick, connection start included; ${claims / IDLE_TICKS} claims per tick`,
    );
    await printStatements(IDLE_TICKS, 'tick');
  } finally {
    await pool.end();
  }
}

/** A new empty database named statements; its URL. */
async function freshDatabase(): Promise<string> {
  await admin.query('DROP DATABASE IF EXISTS statements WITH (FORCE)');
  await admin.query('CREATE DATABASE statements');
  const url = new URL(server.url);
  url.pathname = '/statements';
  return url.toString();
}

/** The statements run in the statements database since the last reset, per `unit`. */
async function printStatements(units: number, unit: string) {
  const { rows } = await admin.query<StatementRow>(
    `SELECT calls, plans, total_plan_time, total_exec_time, rows,
       regexp_replace(query, '\\s+', ' ', 'g') AS query
     FROM pg_stat_statements
     WHERE dbid = (SELECT oid FROM pg_database WHERE datname = 'statements')
     ORDER BY total_plan_time + total_exec_time DESC
     LIMIT ${STATEMENTS_SHOWN}`,
  );
  console.log(`  calls | plans | planning ms | executing ms | µs per ${unit} | rows | statement`);
  for (const row of rows) {
    const planMs = Number(row.total_plan_time);
    const execMs = Number(row.total_exec_time);
    console.log(
      `  ${row.calls} | ${row.plans} | ${planMs.toFixed(1)} | ${execMs.toFixed(1)} | ${(
        ((planMs + execMs) * 1000) / units
      ).toFixed(1)} | ${row.rows} | ${describe(row.query)}`,
    );
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

/** What a statement is: a claim by its shape (claim-statements.ts), a settle, or its start. */
function describe(query: string): string {
  const claim = dueClaimNamed(query);
  if (claim) {
    return `due claim ${CLAIM_WAYS[claim.keyed]}${claim.after ? ', after a cursor' : ''}`;
  }
  if (query.startsWith('WITH o AS')) return 'settle';
  return `${query.slice(0, 60)}...`;
}

/** When one store call was sent and when its answer was back (performance.now()). */
interface OnTheWire {
  startedAt: number;
  endedAt: number;
}

/**
 * How long claims and settles took from the drain's side, and whether claims went back to back
 * or beside each other: a drain whose claims follow each other with no gap, one at a time, is
 * as fast as its claims are.
 */
function onTheWire(
  claims: readonly OnTheWire[],
  settles: readonly OnTheWire[],
  delivered: number,
): string {
  const mean = (times: readonly OnTheWire[]) =>
    (
      times.reduce((sum, { startedAt, endedAt }) => sum + endedAt - startedAt, 0) / times.length
    ).toFixed(1);
  let beside = 0;
  let gaps = 0;
  for (let index = 1; index < claims.length; index++) {
    const gap = claims[index]!.startedAt - claims[index - 1]!.endedAt;
    if (gap < 0) beside += 1;
    else gaps += gap;
  }
  const backToBack = claims.length - 1 - beside;
  return `claims ${mean(claims)} ms each, ${beside} of ${claims.length} started beside another, the others ${
    backToBack > 0 ? (gaps / backToBack).toFixed(2) : '-'
  } ms after the one before landed; settles ${mean(settles)} ms each, ${Math.round(
    delivered / Math.max(settles.length, 1),
  )} outcomes each`;
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
