/**
 * Scenario 14 (outbox-relay only): what a batch sender (a queue's batch call) buys. A no-op
 * drain of the same backlog with single sends, and with batch senders of 10 (SQS's
 * SendMessageBatch) and 100 (Cloudflare Queues' sendBatch): messages per subrequest (claims,
 * settles and sends together) and msg/s; then one drain under Workers Free's budget of 50
 * subrequests, as a cron invocation there runs, and how many messages it delivers.
 */
import { drainOnce } from '../../src/core/drain.js';
import type { BatchSender, Sender } from '../../src/core/sender.js';
import { pgExecutor } from '../../src/drivers/node-pg.js';
import { scaled } from '../lib/config.js';
import { rotated } from '../lib/order.js';
import { benchPool } from '../lib/postgres.js';
import { measurement } from '../lib/stats.js';
import { SYSTEMS } from '../systems/index.js';
import { BENCH_KIND, benchOutbox } from '../systems/outbox-relay.js';
import { THROUGHPUT_BATCH, THROUGHPUT_CONCURRENCY } from './no-op-drain.js';
import { OURS_ONLY, type ResultRow, type Scenario } from './types.js';

/** Workers Free: subrequests per invocation. */
const WORKERS_FREE_SUBREQUESTS = 50;

/** A no-op batch sender of `maxBatch`: every message delivered. */
function noopBatchSender(maxBatch: number): BatchSender {
  return {
    maxBatch,
    send: async (messages) => messages.map(() => ({ delivered: true })),
  };
}

const noopSender: Sender = async () => {};

const VARIANTS = [
  { name: 'single sends', sender: noopSender },
  { name: 'batch sender of 10', sender: noopBatchSender(10) },
  { name: 'batch sender of 100', sender: noopBatchSender(100) },
] as const;

export const batchSendsScenario: Scenario = {
  id: '14',
  aliases: ['batch'],
  title: 'Batch sends: messages per subrequest (outbox-relay only)',
  async run(context) {
    const system = SYSTEMS['outbox-relay'];
    const messages = scaled(context.config, 5000, 500);
    const freeBacklog = scaled(context.config, 2000, 500);
    await context.warmUp(system);
    const results = VARIANTS.map((variant) => ({
      ...variant,
      rates: [] as number[],
      perSubrequest: [] as number[],
      freeDelivered: [] as number[],
    }));
    for (let run = 1; run <= context.config.runs; run++) {
      for (const variant of rotated(results, run)) {
        for (const budget of [undefined, WORKERS_FREE_SUBREQUESTS]) {
          const backlog = budget === undefined ? messages : freeBacklog;
          context.progress(
            `14 batch sends: ${variant.name}, ${backlog.toLocaleString('en-US')} messages${
              budget === undefined ? '' : `, budget ${budget}`
            }, run ${run}/${context.config.runs}`,
          );
          const database = await context.freshDatabase(system);
          const pool = benchPool(database.url, 10);
          try {
            await database.handle.enqueue(backlog);
            await context.vacuumAnalyze(database.url, await database.handle.tables());
            const startedAt = performance.now();
            const report = await drainOnce({
              store: benchOutbox().store(pgExecutor(pool)),
              senders: { [BENCH_KIND]: variant.sender },
              batchSize: THROUGHPUT_BATCH,
              concurrency: THROUGHPUT_CONCURRENCY,
              subrequestBudget: budget,
            });
            const elapsedMs = performance.now() - startedAt;
            if (budget === undefined) {
              if (report.delivered !== backlog) {
                throw new Error(`${variant.name}: delivered ${report.delivered} of ${backlog}`);
              }
              variant.rates.push((report.delivered / elapsedMs) * 1000);
              variant.perSubrequest.push(report.delivered / (report.roundTrips + report.sends));
            } else {
              variant.freeDelivered.push(report.delivered);
            }
          } finally {
            await pool.end();
            await database.dispose();
          }
        }
      }
    }
    const rows: ResultRow[] = results.flatMap((variant) => [
      {
        scenario: '14',
        label: `no-op drain of ${messages.toLocaleString('en-US')}, ${variant.name} (batch ${THROUGHPUT_BATCH}, ${THROUGHPUT_CONCURRENCY} in flight)`,
        unit: 'msg/s',
        better: 'higher',
        values: { 'outbox-relay': measurement(variant.rates) },
        absent: OURS_ONLY,
      },
      {
        scenario: '14',
        label: `same: messages per subrequest (claims, settles and sends), ${variant.name}`,
        unit: 'x',
        better: 'higher',
        values: { 'outbox-relay': measurement(variant.perSubrequest) },
        absent: OURS_ONLY,
      },
      {
        scenario: '14',
        label: `messages one drain delivers under Workers Free's ${WORKERS_FREE_SUBREQUESTS} subrequests (${freeBacklog.toLocaleString('en-US')} due), ${variant.name}`,
        unit: 'msgs',
        better: 'higher',
        values: { 'outbox-relay': measurement(variant.freeDelivered) },
        absent: OURS_ONLY,
      },
    ]);
    return { rows };
  },
};
