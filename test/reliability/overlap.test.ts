/**
 * The runtimes under load and under slowness, sharing one `wrangler dev` start and one Lambda
 * build per case.
 *
 * Overlap under load: 8 drains at once over one outbox, of every kind a user deploys (the Node
 * drain schedule, `wrangler dev` cron invocations of the Worker, and the built Lambda scheduled
 * handler, with the same EventBridge event delivered twice to two warm instances) while the app
 * writes a steady stream of messages, half of its transactions rolled back on purpose. Target:
 * examples/own-app, a small app on the public exports. Every committed message is
 * delivered exactly once (no process is killed here), and no rolled-back message ever goes out.
 *
 * Deadline: with a slow receiver and a slow database (every packet to and from PostgreSQL held
 * back), a drain on each runtime returns before its deadline, and leaves nothing claimed: every
 * outcome recorded, the unsent handed back.
 */
import { randomUUID } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { migrateOwnApp, outbox, ownDrainSetup } from '../../examples/own-app/app.js';
import { buildLambda } from '../../scripts/build-lambda.js';
import { type NeonProxy, startNeonProxy } from '../../src/dev/neon-proxy.js';
import { pgExecutor } from '../../src/drivers/node-pg.js';
import type { LambdaContextLike } from '../../src/runtime/aws-lambda.js';
import { createDrainer } from '../../src/runtime/drainer.js';
import { startDrainSchedule } from '../../src/runtime/node.js';
import { generateWebhookSecret } from '../../src/senders/webhook/webhook-signature.js';
import { startWranglerDev, type WranglerDev } from '../runtime/wrangler-dev.js';
import { useTestDatabase } from '../support/database.js';
import { account, type DeliveryLedger, startDeliveryLedger } from './support/delivery-ledger.js';
import { type LatencyProxy, startLatencyProxy } from './support/latency-proxy.js';
import { recordScenario } from './support/scenario-results.js';
import { LONG_SCENARIO_TIMEOUT_MS } from './support/timeouts.js';

const fixture = fileURLToPath(new URL('../../examples/own-app/', import.meta.url));
/**
 * Messages written in all, committed or rolled back: the 20,000 by default. Lower it
 * (OUTBOX_RELIABILITY_OVERLAP_MESSAGES) on a slow machine.
 */
const MESSAGES = Number(process.env.OUTBOX_RELIABILITY_OVERLAP_MESSAGES ?? 20_000);
const MESSAGES_PER_TRANSACTION = 20;
const database = useTestDatabase();
const secret = generateWebhookSecret();
let proxy: NeonProxy;
let ledger: DeliveryLedger;
let worker: WranglerDev;
/** The Worker for the deadline case: a 3 s drain budget, its database behind the latency relay. */
let slowWorker: WranglerDev;
let slowProxy: NeonProxy;
let latency: LatencyProxy;
const SLOW_BUDGET_MS = 3_000;
let lambdaDir: string;
type ScheduledDrain = (
  event: Record<string, unknown>,
  context: LambdaContextLike,
) => Promise<{ drain?: { claimed: number; delivered: number } }>;
let lambdas: ScheduledDrain[];
let lambdaBundle: string;

beforeAll(async () => {
  await migrateOwnApp(pgExecutor(database.pool));
  proxy = await startNeonProxy({ postgres: { host: database.host, port: database.port } });
  ledger = await startDeliveryLedger();
  const vars = {
    DATABASE_URL: database.url,
    NEON_LOCAL_PROXY: `127.0.0.1:${proxy.port}`,
    WEBHOOK_SECRET: secret,
    ALLOW_HOSTS: `127.0.0.1:${ledger.port}`,
    KICK: 'off',
  };
  Object.assign(process.env, vars);
  latency = await startLatencyProxy({ host: database.host, port: database.port });
  slowProxy = await startNeonProxy({ postgres: { host: latency.host, port: latency.port } });
  lambdaDir = await mkdtemp(join(tmpdir(), 'outbox-relay-overlap-lambda-'));
  const [started, slow, [bundle]] = await Promise.all([
    startWranglerDev(vars, { config: join(fixture, 'wrangler.toml') }),
    startWranglerDev(
      {
        ...vars,
        DATABASE_URL: viaLatency(database.url),
        NEON_LOCAL_PROXY: `127.0.0.1:${slowProxy.port}`,
        DRAIN_BUDGET_MS: String(SLOW_BUDGET_MS),
      },
      { config: join(fixture, 'wrangler.toml') },
    ),
    buildLambda(lambdaDir, join(fixture, 'lambda.ts'), { drain: 'drain' }),
  ]);
  worker = started;
  slowWorker = slow;
  lambdaBundle = bundle!.path;
  // Two warm Lambda instances: two module instances of the same bundle.
  lambdas = await Promise.all(
    ['a', 'b'].map(
      async (instance) =>
        ((await import(`${bundle!.path}?instance=${instance}`)) as { drain: ScheduledDrain }).drain,
    ),
  );
}, 180_000);

afterAll(async () => {
  await Promise.all([worker?.stop(), slowWorker?.stop()]);
  await Promise.all([ledger?.close(), proxy?.close(), slowProxy?.close()]);
  await latency?.close();
  if (lambdaDir) await rm(lambdaDir, { recursive: true, force: true });
});

/** The database URL through the latency relay. */
function viaLatency(url: string): string {
  const parsed = new URL(url);
  parsed.port = String(latency.port);
  return parsed.toString();
}

describe('8 overlapping drains on three runtimes while the app writes', () => {
  it(
    `deliver every committed message of ${MESSAGES} exactly once and no rolled-back one`,
    async () => {
      const committedIntent: string[] = [];
      const rolledBack: string[] = [];
      let writing = true;

      // The app: a steady stream of transactions, each a ticket and its webhooks, half failing
      // on purpose after the enqueue so the whole transaction rolls back.
      const app = (async () => {
        for (let written = 0, index = 0; written < MESSAGES; index++) {
          const rollBack = index % 2 === 1;
          const messages = Array.from({ length: MESSAGES_PER_TRANSACTION }, () => ({
            key: randomUUID(),
            kind: 'webhook',
            payload: { url: `${ledger.url}/tickets`, body: { index, rollBack } },
          }));
          written += messages.length;
          (rollBack ? rolledBack : committedIntent).push(...messages.map((m) => m.key));
          const client = await database.pool.connect();
          try {
            await client.query('BEGIN');
            await client.query('INSERT INTO shop.tickets (title, notify_url) VALUES ($1, $2)', [
              `ticket ${index}`,
              `${ledger.url}/tickets`,
            ]);
            await outbox.enqueue(pgExecutor(client), messages);
            if (rollBack) await client.query('SELECT 1 / 0');
            await client.query('COMMIT');
          } catch {
            await client.query('ROLLBACK');
          } finally {
            client.release();
          }
        }
        writing = false;
      })();

      const pending = async () =>
        Number(
          (
            await database.pool.query<{ n: string }>(
              "SELECT count(*) AS n FROM outbox.messages WHERE state IN ('pending', 'claimed')",
            )
          ).rows[0]!.n,
        );
      const busy = async () => writing || (await pending()) > 0;
      const runs = { node: 0, workers: 0, lambda: 0, duplicateEvents: 0 };

      // 4 Node drain schedules, in-process, over node-pg.
      const schedules = Array.from({ length: 4 }, () =>
        startDrainSchedule(
          ownDrainSetup(pgExecutor(database.pool), {
            webhookSecret: secret,
            allowHosts: [`127.0.0.1:${ledger.port}`],
          }),
          {
            intervalMs: 50,
            // A cron-sized budget: sends get 10 s, as in production. (A 1 s budget gives 500 ms
            // sends, which time out under this load after the receiver took them: resent, same key.)
            budgetMs: 20_000,
            purgeIntervalMs: false,
            logRuns: false,
            onTick: () => {
              runs.node += 1;
            },
          },
        ),
      );
      // 2 lanes of Worker cron invocations in workerd (Neon HTTP, 50 subrequests each).
      const workerLane = async () => {
        while (await busy()) {
          const response = await worker.scheduled('* * * * *');
          expect(response.status).toBe(200);
          runs.workers += 1;
        }
      };
      // 2 warm Lambda instances receiving the same EventBridge event at once, event after event.
      const lambdaLanes = async () => {
        for (let minute = 0; await busy(); minute++) {
          const event = {
            version: '0',
            id: randomUUID(),
            'detail-type': 'Scheduled Event',
            source: 'aws.events',
            time: `2026-11-30T10:${String(minute % 30).padStart(2, '0')}:00Z`,
            detail: {},
          };
          const deadline = Date.now() + 10_000;
          await Promise.all(
            lambdas.map((drain, instance) =>
              drain(event, {
                getRemainingTimeInMillis: () => deadline - Date.now(),
                awsRequestId: `${event.id}-${instance}`,
              }),
            ),
          );
          runs.lambda += 2;
          runs.duplicateEvents += 1;
        }
      };
      await Promise.all([app, workerLane(), workerLane(), lambdaLanes()]);
      for (const schedule of schedules) await schedule.stop();

      const { rows } = await database.pool.query<{ key: string; state: string }>(
        'SELECT key::text AS key, state FROM outbox.all_messages',
      );
      const committed = rows.map((row) => row.key);
      expect(rows.filter((row) => row.state !== 'delivered')).toEqual([]);
      expect(committed.sort()).toEqual([...committedIntent].sort());
      const result = account(ledger.deliveries, committed, rolledBack);
      expect(result.lost).toEqual([]);
      expect(result.rolledBackSent).toEqual([]);
      // No kill here: a message sent twice would be two drains sending it under one lease.
      const twice = await database.pool.query(
        'SELECT attempts, last_error FROM outbox.all_messages WHERE key = ANY($1::uuid[]) LIMIT 5',
        [[...result.duplicated.keys()]],
      );
      expect(twice.rows).toEqual([]);
      expect(result.extraDeliveries).toBe(0);
      expect(runs.workers).toBeGreaterThan(0);
      expect(runs.lambda).toBeGreaterThan(0);

      recordScenario('overlap', {
        scenario: `overlap under load: 4 Node schedules + 2 wrangler cron lanes + 2 Lambda instances (each EventBridge event twice), own-app`,
        runs: runs.node + runs.workers + runs.lambda,
        messages: committed.length,
        faults: rolledBack.length / MESSAGES_PER_TRANSACTION + runs.duplicateEvents,
        injected: `${rolledBack.length} messages in rolled-back transactions; ${runs.duplicateEvents} EventBridge events delivered twice`,
        lost: result.lost.length,
        duplicated: result.extraDeliveries,
        rolledBackSent: result.rolledBackSent.length,
        duplicatesAllowed: '',
      });
    },
    LONG_SCENARIO_TIMEOUT_MS,
  );
});

describe('a slow receiver and a slow database', () => {
  it('every drain returns before its deadline with nothing left claimed, on Node, Workers and Lambda', async () => {
    ledger.delayMs = 700;
    latency.delayMs = 40;
    const enqueue = () =>
      outbox.enqueue(
        pgExecutor(database.pool),
        Array.from({ length: 60 }, (_, index) => ({
          kind: 'webhook',
          payload: { url: `${ledger.url}/slow`, body: { index } },
        })),
      );
    const claimedNow = async () =>
      Number(
        (
          await database.pool.query<{ n: string }>(
            "SELECT count(*) AS n FROM outbox.messages WHERE state = 'claimed'",
          )
        ).rows[0]!.n,
      );
    const slowPool = new pg.Pool({ connectionString: viaLatency(database.url), max: 4 });
    const committed: string[] = [];
    const elapsed: Record<string, { ms: number; budgetMs: number }> = {};
    try {
      // Node: the drainer a schedule runs, with a 3 s budget.
      committed.push(...(await enqueue()));
      const drain = createDrainer(
        ownDrainSetup(pgExecutor(slowPool), {
          webhookSecret: secret,
          allowHosts: [`127.0.0.1:${ledger.port}`],
        }),
      );
      let started = Date.now();
      const nodeReport = await drain({ budgetMs: SLOW_BUDGET_MS });
      elapsed.node = { ms: Date.now() - started, budgetMs: SLOW_BUDGET_MS };
      expect(nodeReport.stopReason).toBe('deadline');
      expect(await claimedNow()).toBe(0);

      // Workers: a cron invocation with OUTBOX's 3 s drain budget, through workerd.
      committed.push(...(await enqueue()));
      started = Date.now();
      expect((await slowWorker.scheduled('* * * * *')).status).toBe(200);
      elapsed.workers = { ms: Date.now() - started, budgetMs: SLOW_BUDGET_MS };
      expect(await claimedNow()).toBe(0);

      // Lambda: 5 s left in the invocation, less the kit's safety margin.
      process.env.DATABASE_URL = viaLatency(database.url);
      process.env.NEON_LOCAL_PROXY = `127.0.0.1:${slowProxy.port}`;
      const { drain: lambdaDrain } = (await import(`${lambdaBundle}?instance=slow`)) as {
        drain: ScheduledDrain;
      };
      committed.push(...(await enqueue()));
      const deadline = Date.now() + 5_000;
      started = Date.now();
      await lambdaDrain(
        {
          version: '0',
          id: randomUUID(),
          'detail-type': 'Scheduled Event',
          source: 'aws.events',
          time: '2026-11-30T11:07:00Z',
          detail: {},
        },
        { getRemainingTimeInMillis: () => deadline - Date.now(), awsRequestId: 'slow' },
      );
      elapsed.lambda = { ms: Date.now() - started, budgetMs: 5_000 };
      expect(await claimedNow()).toBe(0);
      for (const [runtime, { ms, budgetMs }] of Object.entries(elapsed)) {
        expect(ms, runtime).toBeLessThan(budgetMs);
      }
    } finally {
      ledger.delayMs = 0;
      latency.delayMs = 0;
      await slowPool.end();
    }

    // Then, healthy again, everything goes out once.
    await drainAll();
    const result = account(ledger.deliveries, committed);
    expect(result.lost).toEqual([]);
    expect(result.extraDeliveries).toBe(0);
    recordScenario('deadline', {
      scenario: 'deadline: slow receiver (700 ms) and slow database (40 ms per packet each way)',
      runs: 3,
      messages: committed.length,
      faults: 2,
      injected: `slow receiver and database; returned in ${Object.entries(elapsed)
        .map(([runtime, { ms, budgetMs }]) => `${runtime} ${ms}/${budgetMs} ms`)
        .join(', ')}`,
      lost: result.lost.length,
      duplicated: result.extraDeliveries,
      rolledBackSent: 0,
      duplicatesAllowed: '',
    });
  });
});

/** Drains until nothing is due, healthy, in-process. */
async function drainAll(): Promise<void> {
  const drain = createDrainer(
    ownDrainSetup(pgExecutor(database.pool), {
      webhookSecret: secret,
      allowHosts: [`127.0.0.1:${ledger.port}`],
    }),
  );
  for (let pass = 0; pass < 20; pass++) {
    const report = await drain({ budgetMs: 20_000 });
    if (report.claimed === 0) return;
  }
}
