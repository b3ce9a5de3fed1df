/**
 * pg-boss 10, configured for throughput as its v10 docs and maintainer advise: jobs fetched in
 * batches (`batchSize`), the batch run with our shared concurrency helper inside the handler
 * (v10 removed `teamSize`/`teamConcurrency`; "handle concurrency yourself in your handler",
 * timgit/pg-boss#542), completed with one `complete(name, ids)` per batch.
 *
 * Two drain styles:
 * - `run-once`: `fetch(name, { batchSize })`, send, `complete(name, ids)`, until a fetch is empty.
 *   The documented manual API, and the shape of a serverless drain like ours.
 * - `worker`: `work(name, { batchSize, pollingIntervalSeconds: 0.5 }, handler)`, the long-running
 *   polling worker. After each batch it sleeps out the rest of the polling interval (src/worker.js:
 *   `if (interval - duration > 100) await delay(...)`), and it completes a batch without awaiting
 *   it (src/manager.js `onFetch`), so the next fetch overlaps the previous completion.
 */
import PgBoss from 'pg-boss';
import { forEachWithConcurrency, sleep } from '../lib/concurrency.js';
import { packageVersion } from '../lib/machine.js';
import { benchPool } from '../lib/postgres.js';
import {
  benchPayload,
  ENQUEUE_CHUNK,
  type QueueHandle,
  type QueueSystem,
  refuseOrderingKeys,
} from './types.js';

export const PG_BOSS_QUEUE = 'bench_event';

/** pg-boss's floor for `pollingIntervalSeconds` (src/attorney.js `MIN_POLLING_INTERVAL_MS`). */
const POLLING_INTERVAL_SECONDS = 0.5;

/**
 * Retention set to purge promptly: completed jobs move to the archive after 1 s, archived rows
 * are deleted 1 s after that. Maintenance runs only when the bench calls `maintain()`.
 */
const PROMPT_RETENTION = { archiveCompletedAfterSeconds: 1, deleteAfterSeconds: 1 } as const;

/**
 * No timers of its own (no supervisor, scheduler or monitor), so what is measured is the queue
 * work, and maintenance happens exactly when the table-health case asks for it.
 */
function bossOptions(url: string): PgBoss.ConstructorOptions {
  return { connectionString: url, max: 10, supervise: false, schedule: false, migrate: false };
}

export const pgBossSystem: QueueSystem = {
  id: 'pg-boss',
  label: `pg-boss ${packageVersion('pg-boss')}`,
  version: packageVersion('pg-boss'),
  settings: {
    queue: `createQueue('${PG_BOSS_QUEUE}') with the default 'standard' policy`,
    pool: 'its own pg Pool, max 10',
    'run-once drain':
      'loop: fetch(name, { batchSize }) -> handler sends the batch with `concurrency` in flight -> complete(name, ids)',
    'worker drain': `work(name, { batchSize, pollingIntervalSeconds: ${POLLING_INTERVAL_SECONDS} }, handler): one polling worker, the same handler`,
    enqueue: 'insert(jobs) with 1,000 jobs per call (one INSERT ... SELECT FROM json_to_recordset)',
    timers: 'supervise: false, schedule: false: no background maintenance during measurements',
    retention: `archiveCompletedAfterSeconds: ${PROMPT_RETENTION.archiveCompletedAfterSeconds}, deleteAfterSeconds: ${PROMPT_RETENTION.deleteAfterSeconds}; purge = maintain() after 1.1 s (archives), again after 1.1 s (deletes the archive)`,
  },
  async install(url) {
    const boss = new PgBoss({ ...bossOptions(url), migrate: true, max: 2 });
    boss.on('error', (error) => console.error('pg-boss install error', error));
    await boss.start();
    await boss.createQueue(PG_BOSS_QUEUE);
    await boss.stop({ graceful: false });
  },
  async open(url): Promise<QueueHandle> {
    const boss = new PgBoss(bossOptions(url));
    boss.on('error', (error) => console.error('pg-boss error', error));
    await boss.start();
    // Our own small pool for setup and checks, outside the measured pool.
    const pool = benchPool(url, 2);
    const completedCount = async () => {
      const result = await pool.query<{ n: string }>(
        "SELECT count(*) AS n FROM pgboss.job WHERE name = $1 AND state = 'completed'",
        [PG_BOSS_QUEUE],
      );
      return Number(result.rows[0]!.n);
    };

    return {
      async enqueue(count, options) {
        refuseOrderingKeys('pg-boss', options);
        for (let start = 0; start < count; start += ENQUEUE_CHUNK) {
          const size = Math.min(ENQUEUE_CHUNK, count - start);
          await boss.insert(
            Array.from({ length: size }, (_, i) => ({
              name: PG_BOSS_QUEUE,
              data: benchPayload(start + i),
            })),
          );
        }
      },

      async drain(request) {
        const startedAt = performance.now();
        const deadline = startedAt + request.timeLimitMs;
        if (request.style === 'worker') {
          let handled = 0;
          await boss.work<unknown>(
            PG_BOSS_QUEUE,
            { batchSize: request.batchSize, pollingIntervalSeconds: POLLING_INTERVAL_SECONDS },
            async (jobs) => {
              await forEachWithConcurrency(jobs, request.concurrency, (job) =>
                request.send(job.data),
              );
              handled += jobs.length;
            },
          );
          while (handled < request.expected && performance.now() < deadline) await sleep(5);
          // Completions are in flight (not awaited by the worker): done when they are recorded.
          let completed = await completedCount();
          while (completed < handled && performance.now() < deadline) {
            await sleep(5);
            completed = await completedCount();
          }
          const elapsedMs = performance.now() - startedAt;
          await boss.offWork(PG_BOSS_QUEUE);
          return { delivered: completed, elapsedMs };
        }

        let delivered = 0;
        while (performance.now() < deadline) {
          const jobs = await boss.fetch<unknown>(PG_BOSS_QUEUE, { batchSize: request.batchSize });
          if (jobs.length === 0) break;
          await forEachWithConcurrency(jobs, request.concurrency, (job) => request.send(job.data));
          await boss.complete(
            PG_BOSS_QUEUE,
            jobs.map((job) => job.id),
          );
          delivered += jobs.length;
        }
        return { delivered, elapsedMs: performance.now() - startedAt };
      },

      async unfinished() {
        const result = await pool.query<{ n: string }>(
          "SELECT count(*) AS n FROM pgboss.job WHERE name = $1 AND state < 'completed'",
          [PG_BOSS_QUEUE],
        );
        return Number(result.rows[0]!.n);
      },

      async claim(limit) {
        const jobs = await boss.fetch(PG_BOSS_QUEUE, { batchSize: limit });
        return jobs.length;
      },

      async insertHistory(rows) {
        // Completed jobs as complete() leaves them: state completed, started and completed
        // times set, in the queue's partition of pgboss.job (routed by name), until archived.
        await pool.query(
          `INSERT INTO pgboss.job
             (name, data, state, policy, created_on, start_after, started_on, completed_on,
              keep_until)
           SELECT $2,
             jsonb_build_object('orderId', g, 'event', 'order.created',
               'note', 'outbox-relay benchmark message'),
             'completed', 'standard',
             now() - interval '1 day' + g * interval '1 millisecond',
             now() - interval '1 day' + g * interval '1 millisecond',
             now() - interval '1 day' + g * interval '1 millisecond' + interval '10 milliseconds',
             now() - interval '1 day' + g * interval '1 millisecond' + interval '50 milliseconds',
             now() + interval '13 days'
           FROM generate_series(1, $1::integer) AS g`,
          [rows, PG_BOSS_QUEUE],
        );
      },

      async purge() {
        // The retention knobs are constructor options in v10, and below 60 s they make pg-boss
        // warn that cron is disabled, so only the purging instance gets them.
        const janitor = new PgBoss({ ...bossOptions(url), max: 2, ...PROMPT_RETENTION });
        janitor.on('error', (error) => console.error('pg-boss maintenance error', error));
        await janitor.start();
        try {
          // archive: completed_on older than 1 s -> pgboss.archive; drop: archived_on older
          // than 1 s -> deleted. Two passes, each once its 1 s has passed.
          await sleep(1100);
          await janitor.maintain();
          await sleep(1100);
          await janitor.maintain();
        } finally {
          await janitor.stop({ graceful: false });
        }
      },

      async tables() {
        const result = await pool.query<{ partition_name: string }>(
          'SELECT partition_name FROM pgboss.queue WHERE name = $1',
          [PG_BOSS_QUEUE],
        );
        return [`pgboss.${result.rows[0]!.partition_name}`, 'pgboss.archive'];
      },

      async close() {
        await boss.stop({ graceful: false });
        await pool.end();
      },
    };
  },
};
