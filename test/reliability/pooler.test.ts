/**
 * Behind a pooler: Debian's PgBouncer (1.18) in transaction mode in front of PostgreSQL, with
 * fewer server connections than clients, so every transaction may land on another server
 * connection and no named prepared statement survives (as PgBouncer 1.21+ with
 * `max_prepared_statements = 0`). While the app writes 3,000 webhooks through the pooler, four
 * drains overlap: two real `outbox drain` processes, an in-process drain schedule over pg and
 * one over Neon's WebSocket driver through the local Neon stand-in, aimed at the pooler. No
 * process is killed, so nothing may go out twice; no prepared-statement error may reach a
 * claim or a settle; no drain may exit; a pool that loses a name warns once that it went
 * unnamed, never more.
 *
 * A CLI drain that exits is started again (as a supervisor would) and counted, so the figures
 * of a failing run say how it failed.
 */
import { Pool as NeonPool, neonConfig } from '@neondatabase/serverless';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { BatchSqlExecutor, Logger } from '../../src/core/ports.js';
import { applyNeonLocalConfig, type NeonProxy, startNeonProxy } from '../../src/dev/neon-proxy.js';
import { neonWsExecutor } from '../../src/drivers/neon-ws.js';
import { pgExecutor } from '../../src/drivers/node-pg.js';
import { errorCode } from '../../src/drivers/postgres-errors.js';
import { createOutbox } from '../../src/outbox.js';
import { startDrainSchedule } from '../../src/runtime/node.js';
import { generateWebhookSecret } from '../../src/senders/webhook/webhook-signature.js';
import { type OutboxProcess, startOutbox, webhookDrainEnv } from '../cli/outbox-cli.js';
import { useTestDatabase } from '../support/database.js';
import { type PgBouncer, startPgBouncerFor } from '../support/pgbouncer.js';
import { waitFor } from '../support/wait-for.js';
import { loopbackWebhookSender } from '../support/webhook-receiver.js';
import {
  account,
  type Delivery,
  type DeliveryLedger,
  startDeliveryLedger,
} from './support/delivery-ledger.js';
import { recordScenario } from './support/scenario-results.js';

/** The issue's 3,000 webhooks; lower it (OUTBOX_RELIABILITY_POOLER_MESSAGES) on a slow machine. */
const MESSAGES = Number(process.env.OUTBOX_RELIABILITY_POOLER_MESSAGES ?? 3_000);
/**
 * Each commit leaves a backlog every drain can claim from: with 50 per transaction the three
 * faster drains took each one before the Neon WebSocket drain (through the stand-in, then the
 * pooler) claimed, and it delivered none of 3,000 in one run.
 */
const MESSAGES_PER_TRANSACTION = 250;
const CLI_DRAINS = 2;
/** Server connections PgBouncer keeps: far fewer than the drains' and the app's clients. */
const SERVER_CONNECTIONS = 4;
/**
 * The in-process drains' lease: short, so a settle that failed would show up as a resend
 * within the run instead of after the default two minutes.
 */
const LEASE_MS = 10_000;
/** Long enough for a healthy run on a busy 2-core machine; a failing one stops here. */
const DEADLINE_MS = 150_000;
/**
 * The receiver's answer time: with sends that take a little while, a drain that claims first
 * is busy sending while the others claim, so all four share the load (the Neon WebSocket drain,
 * slowest to reach the pooler, got none in one run of four with instant answers).
 */
const RECEIVER_MS = 20;
const LOST_NAME_SQLSTATES = new Set(['26000', '42P05']);
const WARNING = 'named prepared statements do not survive';

const database = useTestDatabase();
const secret = generateWebhookSecret();
let bouncer: PgBouncer;
let proxy: NeonProxy;
let ledger: DeliveryLedger;

beforeAll(async () => {
  bouncer = await startPgBouncerFor(database, { poolSize: SERVER_CONNECTIONS });
  proxy = await startNeonProxy({ postgres: { host: database.host, port: database.port } });
  applyNeonLocalConfig(neonConfig, proxy);
  ledger = await startDeliveryLedger();
  ledger.delayMs = RECEIVER_MS;
});
afterAll(async () => {
  await Promise.all([ledger?.close(), proxy?.close()]);
  await bouncer?.stop();
});

/** What one in-process drain saw: its warnings, and lost-name errors that reached the store. */
interface Watch {
  warnings: string[];
  lostNameErrors: number;
  failedTicks: number;
  ticks: number;
}

/** An in-process drain schedule over `db`, watching what reaches its claims and settles. */
function scheduleOver(db: BatchSqlExecutor, watch: Watch, userAgent: string) {
  const store = createOutbox().store(db);
  const note = (error: unknown) => {
    if (LOST_NAME_SQLSTATES.has(errorCode(error) ?? '')) watch.lostNameErrors += 1;
    throw error;
  };
  const logger: Logger = {
    debug() {},
    info() {},
    warn() {},
    error: () => {
      watch.failedTicks += 1;
    },
  };
  return startDrainSchedule(
    {
      store: {
        settleFits: (requests) => store.settleFits(requests),
        claim: (request) => store.claim(request).catch(note),
        settle: (requests, now) => store.settle(requests, now).catch(note),
        purge: (request) => store.purge(request),
      },
      senders: {
        webhook: loopbackWebhookSender(ledger.port, { secret, userAgent }),
      },
      logger,
      leaseMs: LEASE_MS,
      batchSize: 25,
      concurrency: 5,
    },
    {
      intervalMs: 100,
      budgetMs: 5_000,
      purgeIntervalMs: false,
      logRuns: false,
      onError: () => {
        watch.failedTicks += 1;
      },
      onTick: () => {
        watch.ticks += 1;
      },
    },
  );
}

/** A warnings collector for an executor's `logger`. */
function warningsInto(watch: Watch): Pick<Logger, 'warn'> {
  return { warn: (message) => watch.warnings.push(message) };
}

/** `outbox drain` through the pooler, started again whenever it exits, until stopped. */
function supervisedCliDrain() {
  const runs: OutboxProcess[] = [];
  const exits: { code: number; stderr: string }[] = [];
  let stopping = false;
  const start = () => {
    const run = startOutbox(['drain', '--interval', '100ms', '--batch-size', '25'], {
      DATABASE_URL: bouncer.urlFor(database.url),
      ...webhookDrainEnv(ledger.port, secret),
    });
    runs.push(run);
    void run.exited.then((result) => {
      if (stopping) return;
      exits.push({ code: result.code, stderr: result.stderr });
      start();
    });
  };
  start();
  return {
    exits,
    /** SIGINT: the drain in flight records its outcomes, then the process exits 0. */
    async stop() {
      stopping = true;
      const current = runs.at(-1)!;
      current.child.kill('SIGINT');
      return current.exited;
    },
    /** Whether the running process has finished a drain tick: it is connected and claiming. */
    ticked: () => / tick \d+: /.test(runs.at(-1)!.stdout()),
    /** Every stderr line of every run. */
    stderrLines: () => runs.flatMap((run) => run.stderr().split('\n')),
    /** Warnings of each run: one pool per process. */
    warningsPerRun: () => runs.map((run) => run.stderr().split(WARNING).length - 1),
  };
}

async function countByState(): Promise<Record<string, number>> {
  const { rows } = await database.pool.query<{ state: string; n: number }>(
    'SELECT state, count(*)::int AS n FROM outbox.all_messages GROUP BY state',
  );
  return Object.fromEntries(rows.map((row) => [row.state, row.n]));
}

/**
 * What the store says of a few duplicated messages beside who sent each copy and when: a copy
 * after a recorded failure (a send cut loose by its timeout) reads differently from two drains
 * holding one row at once.
 */
async function duplicatesSeen(duplicated: Map<string, Delivery[]>): Promise<string> {
  if (duplicated.size === 0) return 'no duplicates';
  const sample = [...duplicated].slice(0, 5);
  const { rows } = await database.pool.query<{ key: string; attempts: number; last_error: string }>(
    'SELECT key, attempts, last_error FROM outbox.all_messages WHERE key = ANY($1)',
    [sample.map(([key]) => key)],
  );
  const stored = new Map(rows.map((row) => [row.key, row]));
  return sample
    .map(([key, copies]) => {
      const row = stored.get(key);
      const sends = copies.map((copy) => `${copy.by}@${copy.at - copies[0]!.at}ms`).join(', ');
      return `${key}: ${sends}; attempts ${row?.attempts}, last error ${row?.last_error ?? 'none'}`;
    })
    .join(' | ');
}

describe('behind PgBouncer 1.18 in transaction mode', () => {
  it(`${MESSAGES} webhooks, 2 outbox drain processes + pg + Neon WebSocket drains: each delivered once, no prepared-statement error, no exit`, async () => {
    const viaPooler = bouncer.urlFor(database.url);
    const pgWatch: Watch = { warnings: [], lostNameErrors: 0, failedTicks: 0, ticks: 0 };
    const neonWatch: Watch = { warnings: [], lostNameErrors: 0, failedTicks: 0, ticks: 0 };
    const pgPool = new pg.Pool({ connectionString: viaPooler, max: 10 });
    const neonPool = new NeonPool({ connectionString: viaPooler, max: 10 });
    const appPool = new pg.Pool({ connectionString: viaPooler, max: 2 });
    const started = Date.now();

    const cliDrains = Array.from({ length: CLI_DRAINS }, () => supervisedCliDrain());
    const schedules = [
      scheduleOver(pgExecutor(pgPool, { logger: warningsInto(pgWatch) }), pgWatch, 'pg-drain'),
      scheduleOver(
        neonWsExecutor(neonPool, { logger: warningsInto(neonWatch) }),
        neonWatch,
        'neon-ws-drain',
      ),
    ];

    // Every drain connected and claiming before the first message: a Neon WebSocket through the
    // stand-in and the pooler takes longest to open, and the others could drain everything
    // before it claimed once.
    await waitFor(
      'every drain to finish a first tick',
      () => pgWatch.ticks > 0 && neonWatch.ticks > 0 && cliDrains.every((drain) => drain.ticked()),
      60_000,
    );

    // The app: transactions of 250 webhooks through the pooler, as its own code would write them.
    const committed: string[] = [];
    for (let written = 0; written < MESSAGES; written += MESSAGES_PER_TRANSACTION) {
      const client = await appPool.connect();
      try {
        await client.query('BEGIN');
        const keys = await createOutbox().enqueue(
          pgExecutor(client),
          Array.from({ length: MESSAGES_PER_TRANSACTION }, (_, index) => ({
            kind: 'webhook',
            payload: { url: `${ledger.url}/hooks`, body: { n: written + index } },
          })),
        );
        await client.query('COMMIT');
        committed.push(...keys);
      } catch (error) {
        await client.query('ROLLBACK').catch(() => {});
        throw error;
      } finally {
        client.release();
      }
    }

    const finished = await waitFor(
      'every message delivered',
      async () => (await countByState()).delivered === MESSAGES,
      DEADLINE_MS,
    ).then(
      () => true,
      () => false,
    );
    for (const schedule of schedules) await schedule.stop();
    const cliStops = await Promise.all(cliDrains.map((drain) => drain.stop()));
    await Promise.all([pgPool.end(), neonPool.end(), appPool.end()]);
    const elapsedMs = Date.now() - started;

    const result = account(ledger.deliveries, committed);
    const cliErrorLines = cliDrains
      .flatMap((drain) => drain.stderrLines())
      .filter((line) => /prepared statement "/.test(line) && !line.includes(WARNING));
    const warningsPerPool = [
      pgWatch.warnings.length,
      neonWatch.warnings.length,
      ...cliDrains.flatMap((drain) => drain.warningsPerRun()),
    ];
    const poolsWarned = warningsPerPool.filter((count) => count > 0).length;
    const figures = {
      finished,
      states: await countByState(),
      lost: result.lost.length,
      duplicated: result.extraDeliveries,
      lostNameErrorsAtClaimOrSettle:
        pgWatch.lostNameErrors + neonWatch.lostNameErrors + cliErrorLines.length,
      failedTicks: pgWatch.failedTicks + neonWatch.failedTicks,
      cliExits: cliDrains.reduce((sum, drain) => sum + drain.exits.length, 0),
      cliStopCodes: cliStops.map((stop) => stop.code),
      // A pool warns when it first loses a name; one whose every statement happened to land
      // on the server connection that prepared it has nothing to warn about.
      mostWarningsOfOnePool: Math.max(...warningsPerPool),
    };
    expect(
      figures,
      `after ${elapsedMs} ms; CLI: ${cliErrorLines.slice(0, 3).join(' | ')}; ${await duplicatesSeen(result.duplicated)}`,
    ).toEqual({
      finished: true,
      states: { delivered: MESSAGES },
      lost: 0,
      duplicated: 0,
      lostNameErrorsAtClaimOrSettle: 0,
      failedTicks: 0,
      cliExits: 0,
      cliStopCodes: Array(CLI_DRAINS).fill(0),
      // Each pool learns once that names do not survive, and says so once.
      mostWarningsOfOnePool: 1,
    });
    // Every drain took part: the load was shared, not run by one.
    const bySender = new Map<string, number>();
    for (const { by } of ledger.deliveries) {
      const sender = by.split('/')[0]!;
      bySender.set(sender, (bySender.get(sender) ?? 0) + 1);
    }
    expect([...bySender.keys()], JSON.stringify([...bySender])).toHaveLength(3);

    recordScenario('pooler', {
      scenario: `behind PgBouncer 1.18 (transaction mode, ${SERVER_CONNECTIONS} server connections): ${CLI_DRAINS} outbox drain processes + pg + Neon WebSocket drains`,
      runs: CLI_DRAINS + schedules.length,
      messages: committed.length,
      faults: 0,
      injected: `none: the pooler moves clients between server connections, so no named statement survives; ${poolsWarned} of ${warningsPerPool.length} pools lost a name, warned once and went unnamed; deliveries by drain: ${[...bySender].map(([sender, count]) => `${sender} ${count}`).join(', ')}`,
      lost: result.lost.length,
      duplicated: result.extraDeliveries,
      rolledBackSent: result.rolledBackSent.length,
      duplicatesAllowed: '',
    });
  });
});
