/**
 * The statements behind the Prometheus counters (docs/admin.md, "Metrics"): outcomes by kind
 * that never go down, and the drains' record of their runs. Built per schema by
 * outboxStatements (statements.ts), with what their rows mean to the store.
 */
import type { DrainRunRecord } from '../core/drain-record.js';
import { toDate } from './message-rows.js';

export interface MetricStatements {
  readOutcomeTotals: string;
  readDrainRuns: string;
  recordDrainRun: string;
}

/** Outcomes of one kind since the outbox began. */
export interface OutcomeTotals {
  kind: string;
  delivered: number;
  /** Attempts that failed: retried or set aside as dead. */
  failed: number;
  dead: number;
}

/** Drain runs of one duration bucket and one error code, since the outbox began. */
export interface DrainRunTotals {
  /** The bucket's upper bound in ms; `Infinity` past the largest. */
  leMs: number;
  /** The failure's code; null for runs that ended without one. */
  errorCode: string | null;
  runs: number;
  /** Their durations added up. */
  durationMs: number;
  /** When the latest of them ended. */
  lastEndedAt: Date;
}

export function metricStatements(quotedSchema: string): MetricStatements {
  return {
    /**
     * No parameters. Each kind's outcomes: what purge folded into outcome_totals plus the
     * minutes delivery_counts still holds, read in one snapshot, so a purge that moves minutes
     * from one table to the other in its statement never shows a counter lower than before.
     * Reads every minute kept (seven days by default, 10,080 rows a kind): measured in
     * docs/admin.md, "Metrics".
     */
    readOutcomeTotals: `
      SELECT kind, sum(delivered)::bigint AS delivered, sum(failed)::bigint AS failed,
        sum(dead)::bigint AS dead
      FROM (
        SELECT kind, delivered, failed, dead FROM ${quotedSchema}.outcome_totals
        UNION ALL
        SELECT kind, delivered, failed, dead FROM ${quotedSchema}.delivery_counts
      ) counts
      GROUP BY kind
      ORDER BY kind`,

    /** No parameters. Every bucket and error code of the drains' record: a few dozen rows. */
    readDrainRuns: `
      SELECT le_ms, error_code, runs, duration_ms, last_ended_at
      FROM ${quotedSchema}.drain_runs
      ORDER BY le_ms, error_code`,

    /**
     * $1 the bucket's upper bound in ms (null past the largest), $2 the error code ('' for
     * none), $3 the run's duration in ms, $4 when it ended. One row per bucket and code, so
     * concurrent drains that end together wait on each other's row lock for the length of this
     * statement alone: each drain runs it once, at its end.
     */
    recordDrainRun: `
      INSERT INTO ${quotedSchema}.drain_runs AS r
        (le_ms, error_code, runs, duration_ms, last_ended_at)
      VALUES (coalesce($1::double precision, 'Infinity'), $2::text, 1, $3::double precision,
        $4::timestamptz)
      ON CONFLICT (le_ms, error_code) DO UPDATE SET
        runs = r.runs + 1,
        duration_ms = r.duration_ms + excluded.duration_ms,
        last_ended_at = greatest(r.last_ended_at, excluded.last_ended_at)`,
  };
}

/** {@link MetricStatements.recordDrainRun}'s parameters for `record`. */
export function drainRunParameters(record: DrainRunRecord): unknown[] {
  return [record.bucketMs, record.errorCode ?? '', Math.max(0, record.durationMs), record.endedAt];
}

export function outcomeTotalsFromRow(row: Record<string, unknown>): OutcomeTotals {
  return {
    kind: String(row.kind),
    delivered: Number(row.delivered),
    failed: Number(row.failed),
    dead: Number(row.dead),
  };
}

export function drainRunsFromRow(row: Record<string, unknown>): DrainRunTotals {
  return {
    leMs: Number(row.le_ms),
    errorCode: row.error_code === '' ? null : String(row.error_code),
    runs: Number(row.runs),
    durationMs: Number(row.duration_ms),
    lastEndedAt: toDate(row.last_ended_at),
  };
}
