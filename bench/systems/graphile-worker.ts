/**
 * graphile-worker 0.17, configured as its performance page advises
 * (worker.graphile.org/docs/performance): a local queue so one statement fetches a batch
 * (`localQueue.size` = the case's batch size), completions batched (`completeJobBatchDelay: 0`,
 * `failJobBatchDelay: 0`), `concurrency` = the case's sends in flight, and a pool of at least
 * concurrency + 2 as its `maxPoolSize` doc recommends, kept open across drains like ours.
 * Drained with `runOnce`, its run-until-empty entry point, the same shape as our `drainOnce`.
 *
 * It deletes a job when it completes (src/sql/completeJobs.ts: `delete from _private_jobs`), so
 * it keeps no history: there is nothing to insert for the history case and nothing to purge.
 */
import type { TaskList } from 'graphile-worker';
import { Logger, makeWorkerUtils, runMigrations, runOnce } from 'graphile-worker';
import { getUtilsAndReleasersFromOptions } from 'graphile-worker/dist/lib.js';
import { batchGetJobs } from 'graphile-worker/dist/sql/getJobs.js';
import { packageVersion } from '../lib/machine.js';
import { benchPool } from '../lib/postgres.js';
import type { SendPayload } from '../lib/receiver.js';
import {
  benchPayload,
  ENQUEUE_CHUNK,
  orderingKeyOf,
  type QueueHandle,
  type QueueSystem,
} from './types.js';

export const GRAPHILE_TASK = 'bench_event';

/** The most sends in flight any case asks for (scenario 2's 50). */
const MAX_CONCURRENCY = 50;

/** Errors still reach stderr; its info lines (one per runOnce) would drown the progress. */
const quietLogger = new Logger(() => (level, message) => {
  if (level === 'error') process.stderr.write(`graphile-worker: ${message}\n`);
});

function taskList(send: SendPayload): TaskList {
  return { [GRAPHILE_TASK]: async (payload) => send(payload) };
}

export const graphileWorkerSystem: QueueSystem = {
  id: 'graphile-worker',
  label: `graphile-worker ${packageVersion('graphile-worker')}`,
  version: packageVersion('graphile-worker'),
  settings: {
    drain:
      'runOnce({ pgPool, concurrency, preset: { worker: { localQueue: { size: batchSize }, completeJobBatchDelay: 0, failJobBatchDelay: 0 } } }), run again at once while jobs are left and the last run delivered some (with named queues it returns while jobs wait behind a locked queue)',
    pool: 'one pg Pool of 52 (its maxPoolSize advice: max(10, concurrency + 2) for the largest case), shared by addJobs and every runOnce',
    enqueue: 'workerUtils.addJobs(specs) with 1,000 jobs per call (one add_jobs() call)',
    'prepared statements': 'on (its default)',
    retention:
      'none needed: completed jobs are deleted at completion; purge = cleanup({ tasks: [DELETE_PERMAFAILED_JOBS, GC_JOB_QUEUES] })',
  },
  async install(url) {
    await runMigrations({ connectionString: url, logger: quietLogger });
  },
  async open(url): Promise<QueueHandle> {
    // One pool for enqueue and every runOnce, as a long-lived process would hold it; sized for
    // the largest concurrency a case uses, per its maxPoolSize advice.
    const workerPool = benchPool(url, MAX_CONCURRENCY + 2);
    const utils = await makeWorkerUtils({ pgPool: workerPool, logger: quietLogger });
    const pool = benchPool(url, 2);
    let claimer: Awaited<ReturnType<typeof getUtilsAndReleasersFromOptions>> | undefined;

    return {
      async enqueue(count, options) {
        const keys = options?.orderingKeys;
        for (let start = 0; start < count; start += ENQUEUE_CHUNK) {
          const size = Math.min(ENQUEUE_CHUNK, count - start);
          await utils.addJobs(
            Array.from({ length: size }, (_, i) => ({
              identifier: GRAPHILE_TASK,
              payload: benchPayload(start + i),
              queueName: keys === undefined ? undefined : orderingKeyOf(start + i, keys),
            })),
          );
        }
      },

      async drain(request) {
        const startedAt = performance.now();
        let delivered = 0;
        const send: SendPayload = async (payload) => {
          await request.send(payload);
          delivered += 1;
        };
        if (request.concurrency > MAX_CONCURRENCY) {
          throw new Error(`graphile-worker adapter: concurrency above ${MAX_CONCURRENCY}`);
        }
        // runOnce returns once a claim finds nothing it may take, and with named queues that is
        // also when every job left waits in a queue locked by a job of its own: a cron would run
        // it again on its next tick, so run it again at once while it makes progress.
        let before: number;
        do {
          before = delivered;
          await runOnce({
            pgPool: workerPool,
            concurrency: request.concurrency,
            noHandleSignals: true,
            logger: quietLogger,
            taskList: taskList(send),
            preset: {
              worker: {
                localQueue: { size: request.batchSize },
                completeJobBatchDelay: 0,
                failJobBatchDelay: 0,
              },
            },
          });
        } while (
          delivered < request.expected &&
          delivered > before &&
          performance.now() - startedAt < request.timeLimitMs
        );
        return { delivered, elapsedMs: performance.now() - startedAt };
      },

      async unfinished() {
        const result = await pool.query<{ n: string }>(
          'SELECT count(*) AS n FROM graphile_worker._private_jobs',
        );
        return Number(result.rows[0]!.n);
      },

      async claim(limit) {
        // Its claim statement is internal (src/sql/getJobs.ts batchGetJobs, what the local queue
        // calls); run it exactly as the pool would, pinned to this version.
        claimer ??= await getUtilsAndReleasersFromOptions({
          pgPool: workerPool,
          logger: quietLogger,
          taskList: taskList(async () => {}),
        });
        const [compiled] = claimer;
        const jobs = await batchGetJobs(
          compiled,
          compiled.withPgClient,
          taskList(async () => {}),
          'bench-claim',
          null,
          limit,
        );
        return jobs.length;
      },

      async purge() {
        await utils.cleanup({ tasks: ['DELETE_PERMAFAILED_JOBS', 'GC_JOB_QUEUES'] });
      },

      async tables() {
        return [
          'graphile_worker._private_jobs',
          'graphile_worker._private_job_queues',
          'graphile_worker._private_tasks',
        ];
      },

      async close() {
        if (claimer) await claimer[1]();
        await utils.release();
        await workerPool.end();
        await pool.end();
      },
    };
  },
};
