/**
 * Scenario 8 (outbox-relay only): drain throughput when every SQL round trip takes 20 ms more,
 * as from a Worker to a Neon database in another region over HTTP. Each query of the drain
 * waits 20 ms before it runs. Measured with drainOnce's `prefetch` off and on (claim ahead
 * while rows still wait for lanes) at the default batch, and with prefetch on at batches of
 * 25, 100, 250 and 500: the measurements the batch-size defaults come from.
 */

import { drainOnce } from '../../src/core/drain.js';
import type { OutboxStore } from '../../src/core/outbox-store.js';
import type { QueryResult, SqlExecutor } from '../../src/core/ports.js';
import { pgExecutor } from '../../src/drivers/node-pg.js';
import { sleep } from '../lib/concurrency.js';
import { scaled } from '../lib/config.js';
import { rotated } from '../lib/order.js';
import { benchPool } from '../lib/postgres.js';
import { noopSend, postJson, type SendPayload, startReceiverProcess } from '../lib/receiver.js';
import { measurement, median } from '../lib/stats.js';
import { SYSTEMS } from '../systems/index.js';
import { BENCH_KIND, benchOutbox } from '../systems/outbox-relay.js';
import { RECEIVER_DELAY_MS } from './slow-receiver.js';
import { OURS_ONLY, type ResultRow, type Scenario } from './types.js';

export const SQL_LATENCY_MS = 20;
const CONCURRENCY = 10;
const BATCH_SIZES = [25, 100, 250, 500] as const;
/** The batch prefetch off is measured at: the default. */
const PREFETCH_OFF_BATCH = 25;

/** Adds `delayMs` before every query: a far-away database as seen from the drain. */
export function delayedExecutor(inner: SqlExecutor, delayMs: number): SqlExecutor {
  return {
    async query(text: string, params?: unknown[]): Promise<QueryResult> {
      await sleep(delayMs);
      return inner.query(text, params);
    },
  };
}

/** The two settings of drainOnce's `prefetch` this scenario weighs against each other. */
const PREFETCH_SETTINGS: readonly { name: string; prefetch: boolean }[] = [
  { name: 'prefetch off', prefetch: false },
  { name: 'prefetch on (default)', prefetch: true },
];

async function drainWith(
  store: OutboxStore,
  send: SendPayload,
  batchSize: number,
  prefetch: boolean,
): Promise<number> {
  const report = await drainOnce({
    store,
    senders: { [BENCH_KIND]: (message) => send(message.payload) },
    batchSize,
    concurrency: CONCURRENCY,
    prefetch,
  });
  return report.delivered;
}

export const sqlLatencyScenario: Scenario = {
  id: '8',
  aliases: ['latency'],
  title: `Drain at ${SQL_LATENCY_MS} ms SQL round-trip latency (outbox-relay only)`,
  async run(context) {
    const system = SYSTEMS['outbox-relay'];
    const messages = scaled(context.config, 2000, 200);
    const receiver = await startReceiverProcess(RECEIVER_DELAY_MS);
    try {
      const senders = [
        { name: 'no-op send', send: noopSend },
        {
          name: `${RECEIVER_DELAY_MS} ms receiver (ideal ${CONCURRENCY * (1000 / RECEIVER_DELAY_MS)} msg/s)`,
          send: postJson(receiver.url),
        },
      ];
      await context.warmUp(system);
      const variants = senders.flatMap((sender) =>
        BATCH_SIZES.flatMap((batchSize) =>
          PREFETCH_SETTINGS.filter(
            (setting) => setting.prefetch || batchSize === PREFETCH_OFF_BATCH,
          ).map((setting) => ({
            sender,
            batchSize,
            ...setting,
            rates: [] as number[],
            cpu: [] as number[],
            wal: [] as number[],
          })),
        ),
      );
      // Every variant once per run, in an order rotated run by run.
      for (let run = 1; run <= context.config.runs; run++) {
        for (const variant of rotated(variants, run)) {
          const { sender, batchSize, name, prefetch } = variant;
          context.progress(
            `8 SQL latency: drainOnce ${name}, batch ${batchSize}, ${sender.name}, ${messages} messages, run ${run}/${context.config.runs}`,
          );
          const database = await context.freshDatabase(system);
          const pool = benchPool(database.url, 10);
          try {
            await database.handle.enqueue(messages);
            await context.vacuumAnalyze(database.url, await database.handle.tables());
            const store = benchOutbox().store(delayedExecutor(pgExecutor(pool), SQL_LATENCY_MS));
            const before = await context.postgres.cost.snapshot();
            const startedAt = performance.now();
            const count = await drainWith(store, sender.send, batchSize, prefetch);
            const elapsedMs = performance.now() - startedAt;
            const cost = await context.postgres.cost.since(before);
            if (count !== messages || (await database.handle.unfinished()) !== 0) {
              throw new Error(`${name}: delivered ${count} of ${messages}`);
            }
            variant.rates.push((count / elapsedMs) * 1000);
            variant.wal.push(cost.walBytes / count);
            if (cost.cpuMicros !== null) variant.cpu.push(cost.cpuMicros / count);
          } finally {
            await pool.end();
            await database.dispose();
          }
        }
      }
      const rows: ResultRow[] = variants.map(({ sender, batchSize, name, rates }) => ({
        scenario: '8',
        label: `+${SQL_LATENCY_MS} ms per query, batch ${batchSize}, ${CONCURRENCY} in flight, ${sender.name}: drainOnce, ${name}`,
        unit: 'msg/s',
        better: 'higher',
        values: { 'outbox-relay': measurement(rates) },
        absent: OURS_ONLY,
      }));
      const details = {
        serverCostPerMessage: variants.map(({ sender, batchSize, name, cpu, wal }) => ({
          variant: `batch ${batchSize}, ${sender.name}, ${name}`,
          cpuMicros: cpu.length > 0 ? median(cpu) : null,
          walBytes: median(wal),
        })),
      };
      return { rows, details };
    } finally {
      await receiver.close();
    }
  },
};
