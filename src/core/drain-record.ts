/**
 * A drain's own record of its run, for metrics: how long it took and, when it failed, the code of
 * its failure. Drains run in other processes than the admin (a Worker's cron, a Lambda, the Node
 * schedule, the CLI), so each leaves its record in the database, where `/metrics` reads it: one
 * statement at the end of the run, none per message (docs/admin.md, "Metrics").
 */
import type { DrainRun } from './drain-run.js';
import { describeError, isOutboxError } from './errors.js';

/** What one drain run leaves for metrics. */
export interface DrainRunRecord {
  /** When the run ended, on the drain's clock. */
  endedAt: Date;
  durationMs: number;
  /**
   * The histogram bucket the run fell in: the smallest of {@link DRAIN_DURATION_BUCKETS_MS} it
   * took no longer than, or null past the largest.
   */
  bucketMs: number | null;
  /** The failure's code ({@link drainErrorCode}); null when the run ended without one. */
  errorCode: string | null;
}

/**
 * Upper bounds of the drain duration histogram, in ms. A drain that finds nothing takes a few
 * ms; an admin drain up to 10 s; a Worker's cron drain up to its 45 s budget; a CLI tick up to
 * a minute; a Lambda's up to its 15 minutes. Each bucket is one row of the store's drain_runs
 * table at most, per error code.
 */
export const DRAIN_DURATION_BUCKETS_MS: readonly number[] = [
  10, 50, 100, 250, 500, 1_000, 2_500, 5_000, 10_000, 30_000, 60_000, 300_000, 900_000,
];

/** A code is a metric label value: short, and of these characters, or it is `unknown`. */
const ERROR_CODE_FORMAT = /^[A-Za-z0-9_.-]{1,64}$/;

/**
 * The code a failed run is counted under: the SQLSTATE or network code of the database error
 * behind it (a settle that could not be written is an `OUTBOX_DATABASE` error whose cause
 * carries it), else the error's own code (an `OUTBOX_` code, a driver's), else `unknown`.
 */
export function drainErrorCode(error: unknown): string {
  const own = codeOf(error);
  const cause =
    typeof error === 'object' && error !== null && 'cause' in error
      ? codeOf(error.cause)
      : undefined;
  const code = isOutboxError(error) && error.code === 'OUTBOX_DATABASE' ? (cause ?? own) : own;
  return code !== undefined && ERROR_CODE_FORMAT.test(code) ? code : 'unknown';
}

function codeOf(error: unknown): string | undefined {
  if (typeof error !== 'object' || error === null || !('code' in error)) return undefined;
  return typeof error.code === 'string' ? error.code : undefined;
}

/** The bucket `durationMs` falls in (see {@link DrainRunRecord.bucketMs}). */
export function durationBucket(durationMs: number): number | null {
  return DRAIN_DURATION_BUCKETS_MS.find((bound) => durationMs <= bound) ?? null;
}

/**
 * Leaves the run's record in the store, if this run records one (`recordRun`) and the store
 * keeps them. Paid from the subrequest the run kept for it (see `recordOwed` in drain-run.ts),
 * and counted as a round trip. Never throws: a record that cannot be written is logged, and the
 * drain's own outcome (its report, or its failure) stands. When the database itself is what
 * failed the run, its record most likely fails too; the histogram's count then shows runs
 * missing, which is why docs/admin.md says to alert on it.
 */
export async function recordDrainRun(run: DrainRun): Promise<void> {
  const { settings, report } = run;
  if (run.recordOwed === 0 || !settings.store.recordDrainRun) return;
  run.recordOwed = 0;
  report.roundTrips += 1;
  const record: DrainRunRecord = {
    endedAt: settings.clock.now(),
    durationMs: report.durationMs,
    bucketMs: durationBucket(report.durationMs),
    errorCode: run.failure ? drainErrorCode(run.failure.error) : null,
  };
  try {
    await settings.store.recordDrainRun(record);
  } catch (error) {
    settings.logger.warn('drain run not recorded for metrics', { error: describeError(error) });
  }
}
