/**
 * The one long-running drain loop: `outbox drain` (continuous) and the Node schedule
 * (`startDrainSchedule`) are both this function with different callbacks and failure policy,
 * as graphile-worker's `run` is its `runOnce` in a loop. Each tick is one bounded drain, so a
 * long-running process behaves like a sequence of scheduled invocations.
 */
import type { DrainReport } from '../core/drain-settings.js';
import { isOutboxError } from '../core/errors.js';
import { type Clock, systemClock } from '../core/ports.js';
import type { PurgeReport } from '../core/purge.js';
import { isRetryableDatabaseError } from '../drivers/postgres-errors.js';
import { type DrainRequest, MIN_DRAIN_BUDGET_MS } from './drainer.js';

/**
 * What one tick asks of its drain: the tick's time budget, and the loop's stop signal (a drain
 * that honours it stops claiming). A `Drainer` takes it as it is.
 */
export type DrainTickRequest = Required<Pick<DrainRequest, 'budgetMs' | 'signal'>>;

/** What a failed tick looked like, for `onError`. */
export interface DrainLoopFailure {
  error: unknown;
  /** The 1-based tick number. */
  tick: number;
  phase: 'drain' | 'purge';
  /** Classified by `isTransient`: the loop retries after the interval. */
  transient: boolean;
  /** Whether the loop goes on (transient, or the `continue` policy) or stops with the error. */
  willRetry: boolean;
}

/** The report fields the loop adds up across ticks. */
export const DRAIN_TOTAL_FIELDS = [
  'claimed',
  'delivered',
  'retried',
  'dead',
  'released',
  'stale',
  'sends',
] as const;

export type DrainTotals = Record<(typeof DRAIN_TOTAL_FIELDS)[number], number>;

export interface DrainLoopSummary {
  /** Ticks started, failed ones included. */
  ticks: number;
  failedTicks: number;
  totals: DrainTotals;
  purges: number;
  durationMs: number;
}

export interface DrainLoopOptions {
  /**
   * One bounded drain: `createDrainer(setup)`, so each tick drains with the setup's settings
   * and a deadline and timeouts fitted to the tick's budget. Any function taking a
   * {@link DrainTickRequest} will do (a test's stand-in).
   */
  drain: (request: DrainTickRequest) => Promise<DrainReport>;
  /** Rest after a tick that left nothing due, and after a failed tick. */
  intervalMs: number;
  /** Each tick's budget; at least {@link MIN_DRAIN_BUDGET_MS}. */
  budgetMs: number;
  /** Deletes old finished messages; run after the drain on ticks at least `purgeIntervalMs` apart. */
  purge?: () => Promise<PurgeReport>;
  /** Default {@link DEFAULT_PURGE_INTERVAL_MS}. The first tick purges. */
  purgeIntervalMs?: number;
  /** Stop: the running tick finishes and settles, then the loop resolves. */
  signal: AbortSignal;
  /** After each successful drain; awaited, and a throw counts as the tick failing. */
  onTick?: (report: DrainReport, tick: number) => void | Promise<void>;
  onPurge?: (report: PurgeReport, tick: number) => void | Promise<void>;
  /** Every failed tick, before the loop rests (or rejects). */
  onError?: (failure: DrainLoopFailure) => void;
  /** Which failures pass by themselves. Default {@link isTransientDrainFailure}. */
  isTransient?: (error: unknown) => boolean;
  /**
   * What a failure that is not transient does: `stop` rejects the loop with it (the CLI, so a
   * process manager restarts it and the operator reads why); `continue` reports it and retries
   * after the interval like a transient one (the Node schedule beside a web server). Default stop.
   */
  onPermanentFailure?: 'stop' | 'continue';
  clock?: Clock;
  /** Resolves after `ms`, or at once when `signal` aborts; must leave no timer behind. */
  sleep?: (ms: number, signal: AbortSignal) => Promise<void>;
}

/** Purge once an hour: old rows accumulate slowly; there is no hurry. */
export const DEFAULT_PURGE_INTERVAL_MS = 60 * 60 * 1000;

/**
 * Database trouble that passes by itself: retryable SQLSTATEs and lost connections (Neon
 * suspending, a failover, a deadlock), and a drain that could not record its outcomes (its rows
 * keep their lease; a later tick takes them).
 */
export function isTransientDrainFailure(error: unknown): boolean {
  return (
    isRetryableDatabaseError(error) || (isOutboxError(error) && error.code === 'OUTBOX_DATABASE')
  );
}

/**
 * Drains until `signal` aborts. Rules:
 * - one bounded drain per tick, never two at once;
 * - a tick cut short by its deadline or budget (work still due) is followed at once;
 * - after a tick that found nothing left, rest `intervalMs` (an abort cuts the rest short);
 * - a failed tick is reported to `onError`; a transient failure is retried after `intervalMs`,
 *   any other follows `onPermanentFailure`;
 * - on abort, the tick in flight finishes (its drain settles every claim) and the loop resolves
 *   with the summary, leaving no timer running.
 *
 * @example
 * const stop = new AbortController();
 * const done = runDrainLoop({
 *   drain: createDrainer({ store, senders, batchSize: 50 }),
 *   intervalMs: 5_000,
 *   budgetMs: 60_000,
 *   signal: stop.signal,
 * });
 * process.once('SIGTERM', () => stop.abort());
 * const summary = await done;
 */
export async function runDrainLoop(options: DrainLoopOptions): Promise<DrainLoopSummary> {
  if (!(options.budgetMs >= MIN_DRAIN_BUDGET_MS)) {
    throw new RangeError(
      `budgetMs must be at least ${MIN_DRAIN_BUDGET_MS}, got ${options.budgetMs}`,
    );
  }
  const clock = options.clock ?? systemClock;
  const sleep = options.sleep ?? sleepUnlessAborted;
  const isTransient = options.isTransient ?? isTransientDrainFailure;
  const purgeIntervalMs = options.purgeIntervalMs ?? DEFAULT_PURGE_INTERVAL_MS;
  const { signal } = options;
  const startedAt = clock.now().getTime();
  const summary: DrainLoopSummary = {
    ticks: 0,
    failedTicks: 0,
    totals: { claimed: 0, delivered: 0, retried: 0, dead: 0, released: 0, stale: 0, sends: 0 },
    purges: 0,
    durationMs: 0,
  };
  let lastPurgeAt = Number.NEGATIVE_INFINITY;

  while (!signal.aborted) {
    summary.ticks += 1;
    const tick = summary.ticks;
    let phase: DrainLoopFailure['phase'] = 'drain';
    let rest = true;
    try {
      const report = await options.drain({ budgetMs: options.budgetMs, signal });
      for (const field of DRAIN_TOTAL_FIELDS) summary.totals[field] += report[field];
      rest = report.stopReason === 'empty' || report.stopReason === 'aborted';
      await options.onTick?.(report, tick);
      if (options.purge && clock.now().getTime() - lastPurgeAt >= purgeIntervalMs) {
        phase = 'purge';
        lastPurgeAt = clock.now().getTime();
        const purged = await options.purge();
        summary.purges += 1;
        await options.onPurge?.(purged, tick);
      }
    } catch (error) {
      summary.failedTicks += 1;
      const transient = isTransient(error);
      const willRetry = transient || options.onPermanentFailure === 'continue';
      options.onError?.({ error, tick, phase, transient, willRetry });
      if (!willRetry) throw error;
      rest = true;
    }
    if (rest && !signal.aborted) await sleep(options.intervalMs, signal);
  }
  summary.durationMs = clock.now().getTime() - startedAt;
  return summary;
}

/** A timer that an abort clears, so a stopped loop leaves nothing scheduled. */
function sleepUnlessAborted(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal.aborted) {
      resolve();
      return;
    }
    const wake = () => {
      clearTimeout(timer);
      signal.removeEventListener('abort', wake);
      resolve();
    };
    const timer = setTimeout(wake, ms);
    signal.addEventListener('abort', wake, { once: true });
  });
}
