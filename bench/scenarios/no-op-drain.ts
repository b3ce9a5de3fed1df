/**
 * Scenario 1: how fast each system empties a backlog when sending costs nothing, so only the
 * queue machinery (claim, settle, bookkeeping) is measured. Also records enqueue throughput
 * from the same runs, and pg-boss's polling worker, whose sleep between batches bounds it.
 */
import { scaled } from '../lib/config.js';
import { rotated } from '../lib/order.js';
import { noopSend } from '../lib/receiver.js';
import { measurement, RunsBySystem } from '../lib/stats.js';
import { baselineSystem } from '../systems/baseline-build.js';
import { SYSTEMS } from '../systems/index.js';
import { outboxRelayNoHistorySystem } from '../systems/outbox-relay.js';
import type { QueueSystem } from '../systems/types.js';
import { SYSTEM_IDS, type SystemId } from '../systems/types.js';
import { againstBaseline, DrainCosts } from './drain-costs.js';
import { type DrainCase, type DrainMeasurement, measureDrain } from './harness.js';
import type { ResultRow, Scenario, ScenarioContext } from './types.js';

/** The batch and concurrency every system gets in the throughput cases. */
export const THROUGHPUT_BATCH = 100;
export const THROUGHPUT_CONCURRENCY = 10;

/** pg-boss's worker cannot drain the backlog in a sensible time; rate it on this window. */
const WORKER_WINDOW_MS = 3000;
const WORKER_WINDOW_MESSAGES = 2000;

export const noOpDrainScenario: Scenario = {
  id: '1',
  aliases: ['no-op'],
  title: 'No-op drain: messages per second with free sends',
  async run(context) {
    const messages = scaled(context.config, 50_000, 1000);
    const drains = new DrainCosts();
    // Ours without delivered history, beside the same runs of the peers.
    const noHistory = new DrainCosts();
    const enqueues = new RunsBySystem<SystemId>();
    const worker: number[] = [];
    // Another build of ours (BENCH_BASELINE), drained beside this one in every run.
    const baseline = context.config.baseline ? await baselineSystem(context.config.baseline) : null;
    const baselineDrains = new DrainCosts();
    for (const id of SYSTEM_IDS) await context.warmUp(SYSTEMS[id]);
    if (baseline) await context.warmUp(baseline);
    const drainCase = {
      messages,
      batchSize: THROUGHPUT_BATCH,
      concurrency: THROUGHPUT_CONCURRENCY,
      send: noopSend,
    };

    for (let run = 1; run <= context.config.runs; run++) {
      // Systems interleaved within each run and their order rotated run by run, so drift on a
      // shared machine, and going first, hit them alike.
      for (const id of rotated(SYSTEM_IDS, run)) {
        const system = SYSTEMS[id];
        context.progress(
          `1 no-op drain: ${system.label}, ${messages.toLocaleString('en-US')} messages, run ${run}/${context.config.runs}`,
        );
        // The baseline goes right before ours in odd runs and right after in even ones, so
        // neither build always has the other's leftovers (autovacuum, a warm cache) before it.
        const withBaseline = baseline !== null && id === 'outbox-relay';
        if (withBaseline && run % 2 === 1) {
          baselineDrains.add(id, await measureBaseline(context, baseline, drainCase, run));
        }
        const result = await measureDrain(context, system, drainCase);
        drains.add(id, result);
        enqueues.add(id, result.enqueueRate);
        if (id !== 'outbox-relay') {
          noHistory.add(id, result);
          if (baseline) baselineDrains.add(id, result);
        }
        if (withBaseline && run % 2 === 0) {
          baselineDrains.add(id, await measureBaseline(context, baseline, drainCase, run));
        }
      }
      context.progress(
        `1 no-op drain: ${outboxRelayNoHistorySystem.label}, ${messages.toLocaleString('en-US')} messages, run ${run}/${context.config.runs}`,
      );
      noHistory.add(
        'outbox-relay',
        await measureDrain(context, outboxRelayNoHistorySystem, {
          messages,
          batchSize: THROUGHPUT_BATCH,
          concurrency: THROUGHPUT_CONCURRENCY,
          send: noopSend,
        }),
      );
      context.progress(
        `1 no-op drain: ${SYSTEMS['pg-boss'].label} work() worker, ${WORKER_WINDOW_MS / 1000} s window, run ${run}/${context.config.runs}`,
      );
      const polled = await measureDrain(context, SYSTEMS['pg-boss'], {
        // More than one worker can deliver in the window, without paying to enqueue 50,000.
        messages: Math.min(messages, WORKER_WINDOW_MESSAGES),
        batchSize: THROUGHPUT_BATCH,
        concurrency: THROUGHPUT_CONCURRENCY,
        send: noopSend,
        style: 'worker',
        timeLimitMs: WORKER_WINDOW_MS,
      });
      worker.push(polled.drainRate);
    }

    const count = messages.toLocaleString('en-US');
    const rows: ResultRow[] = [
      ...drains.rows(
        '1',
        `no-op drain of ${count} due (batch ${THROUGHPUT_BATCH}, ${THROUGHPUT_CONCURRENCY} in flight)`,
      ),
      ...noHistory.rows(
        '1',
        `same, outbox-relay with keepDelivered: false (no delivered history; peers' runs as above)`,
      ),
      ...(baseline
        ? baselineDrains.rows('1', `same, ${baseline.label}, beside this build in every run`)
        : []),
      {
        scenario: '1',
        label: `same, pg-boss work() polling worker (${WORKER_WINDOW_MS / 1000} s window)`,
        unit: 'msg/s',
        better: 'higher',
        values: { 'pg-boss': measurement(worker) },
        absent: {
          'outbox-relay': 'run-once',
          'graphile-worker': 'run-once',
          'sql-floor': 'run-once',
        },
      },
      {
        scenario: '1',
        label: `enqueue ${count} (1,000 per statement)`,
        unit: 'msg/s',
        better: 'higher',
        values: enqueues.measurements(),
      },
    ];
    return {
      rows,
      notes: [
        `1: pg-boss work() sleeps out pollingIntervalSeconds (0.5 s, its minimum) after every batch, so one worker peaks at batchSize / 0.5 s = ${(THROUGHPUT_BATCH / 0.5).toLocaleString('en-US')} msg/s.`,
        ...(baseline
          ? [`1: this build / BENCH_BASELINE: ${againstBaseline(drains, baselineDrains)}.`]
          : []),
      ],
    };
  },
};

function measureBaseline(
  context: ScenarioContext,
  baseline: QueueSystem,
  drainCase: DrainCase,
  run: number,
): Promise<DrainMeasurement> {
  context.progress(
    `1 no-op drain: ${baseline.label}, ${drainCase.messages.toLocaleString('en-US')} messages, run ${run}/${context.config.runs}`,
  );
  return measureDrain(context, baseline, drainCase);
}
