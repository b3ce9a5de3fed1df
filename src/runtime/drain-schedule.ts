/**
 * The Node drain schedule: the serverless kits' scheduled run, on a timer in a long-running
 * process. Each tick is one bounded drain of the setup (`createDrainer`), now and then its purge
 * (`runScheduledPurge`, with the setup's retention), and one JSON line for each, as the Workers
 * and Lambda kits log. Built on `runDrainLoop`, kept going through any failure, since it runs
 * beside a web server. Needs nothing beyond the package: no HTTP server.
 */
import type { DrainReport } from '../core/drain-settings.js';
import { ConfigurationError } from '../core/errors.js';
import type { PurgeReport } from '../core/purge.js';
import { type DrainLoopFailure, type DrainLoopSummary, runDrainLoop } from './drain-loop.js';
import {
  createDrainer,
  type DrainerOptions,
  MIN_DRAIN_BUDGET_MS,
  runScheduledPurge,
} from './drainer.js';
import { logFailure, logReport } from './json-log.js';

/** Five seconds: quick enough that local messages seem instant, rare enough to stay quiet. */
export const DEFAULT_SCHEDULE_INTERVAL_MS = 5_000;

export interface DrainScheduleOptions {
  /** Rest after a tick that left nothing due. Default {@link DEFAULT_SCHEDULE_INTERVAL_MS}. */
  intervalMs?: number;
  /**
   * Each tick's drain budget; default the interval (at least `MIN_DRAIN_BUDGET_MS`), like a
   * cron invocation's time limit.
   */
  budgetMs?: number;
  /**
   * Time between purges, the first on the first tick; `false` for none. Default
   * `DEFAULT_PURGE_INTERVAL_MS` (an hour). What a purge deletes is the setup's `purge`
   * retention, then its `purgeWith`, as on the kits.
   */
  purgeIntervalMs?: number | false;
  /**
   * One JSON line on the console per tick (`{"message":"outbox drain","runtime":"node",
   * "tick":3,"delivered":12,...}`) and per purge (`"outbox purge"`). Default true; `false` when
   * `onTick` reports runs your own way. A failed tick is logged either way.
   */
  logRuns?: boolean;
  /** Fields on every line (deployment, instance). */
  logFields?: Record<string, unknown>;
  /** After each tick's drain, with its report and the 1-based tick number. */
  onTick?: (report: DrainReport, tick: number) => void;
  onPurge?: (report: PurgeReport, tick: number) => void;
  /** Every failed tick, after its JSON line; the schedule goes on after the interval. */
  onError?: (failure: DrainLoopFailure) => void;
}

export interface DrainSchedule {
  /**
   * Stops: the running tick claims nothing more, its sends in flight finish and every outcome
   * is recorded (rows claimed and not yet sent go back due), then the schedule resolves.
   */
  stop(): Promise<void>;
  /** Settles when the schedule has stopped, with its ticks and totals. */
  stopped: Promise<DrainLoopSummary>;
}

/**
 * Drains `setup` like a cron trigger, through {@link runDrainLoop}: one bounded drain at a time
 * (`createDrainer(setup)` with the tick's budget); a tick that ran out of time or budget with
 * work still due is followed at once by the next. Purges with the setup's retention on the
 * first tick and once per `purgeIntervalMs` after. Every failed tick is logged and the next one
 * tries again after the interval; nothing is lost, because unsettled rows keep their lease.
 *
 * @example
 * import { startDrainSchedule } from 'outbox-relay/node';
 *
 * const schedule = startDrainSchedule(
 *   { store: outbox.store(db), senders, purge: { deliveredOlderThanMs: 86_400_000 } },
 *   { intervalMs: 5_000 },
 * );
 * process.once('SIGTERM', () => schedule.stop()); // the running drain settles first
 */
export function startDrainSchedule(
  setup: DrainerOptions,
  options: DrainScheduleOptions = {},
): DrainSchedule {
  if ('drain' in setup) {
    // The schedule used to take a built drain and its own purge store, and kept neither the
    // setup's retention nor its clock; given that shape now, every tick would fail.
    throw new ConfigurationError(
      'startDrainSchedule takes the drainer setup itself: startDrainSchedule({ store, senders, ... }, { intervalMs }), not { drain, purgeStore }',
    );
  }
  const intervalMs = options.intervalMs ?? DEFAULT_SCHEDULE_INTERVAL_MS;
  const budgetMs = options.budgetMs ?? Math.max(intervalMs, MIN_DRAIN_BUDGET_MS);
  if (!(budgetMs >= MIN_DRAIN_BUDGET_MS)) {
    throw new RangeError(`budgetMs must be at least ${MIN_DRAIN_BUDGET_MS}, got ${budgetMs}`);
  }
  const logRuns = options.logRuns ?? true;
  const fields = { runtime: 'node', ...options.logFields };
  const { purgeIntervalMs } = options;
  const stop = new AbortController();
  const loop = runDrainLoop({
    drain: createDrainer(setup),
    intervalMs,
    budgetMs,
    purge:
      purgeIntervalMs === false
        ? undefined
        : async () => {
            const { purge, purgedWith } = await runScheduledPurge(setup);
            if (logRuns) logReport('outbox purge', purge, { ...fields, ...purgedWith });
            return purge;
          },
    purgeIntervalMs: purgeIntervalMs === false ? undefined : purgeIntervalMs,
    signal: stop.signal,
    clock: setup.clock,
    onTick: (report, tick) => {
      if (logRuns) logReport('outbox drain', report, { ...fields, tick });
      options.onTick?.(report, tick);
    },
    onPurge: options.onPurge,
    onError: (failure) => {
      logFailure(`scheduled ${failure.phase} failed; retrying next tick`, failure.error, {
        ...fields,
        tick: failure.tick,
      });
      options.onError?.(failure);
    },
    onPermanentFailure: 'continue',
  });
  return {
    async stop() {
      stop.abort();
      await loop;
    },
    stopped: loop,
  };
}
