/** What `outbox drain` prints: report lines for people, and the drain's log on stderr. */
import type { DrainReport } from '../core/drain-settings.js';
import type { Logger } from '../core/ports.js';
import type { DrainLoopSummary } from '../runtime/drain-loop.js';
import { type CliIo, isDebug, writeNote } from './cli-io.js';
import { count, formatDuration } from './text-format.js';

type Outcomes = Pick<DrainReport, 'delivered' | 'retried' | 'dead' | 'released' | 'stale'>;

export function outcomes(counts: Outcomes): string {
  const parts = [
    `delivered ${counts.delivered}`,
    `retried ${counts.retried}`,
    `dead ${counts.dead}`,
    `released ${counts.released}`,
  ];
  // Stale settles are rare (another drain re-claimed after a lease expired): show them only then.
  if (counts.stale > 0) parts.push(`stale ${counts.stale}`);
  return parts.join(', ');
}

/** `--once`: `delivered 12, ... in 840ms (2 batches, stopped: empty)`. */
export function describeReport(report: DrainReport): string {
  return `${outcomes(report)} in ${formatDuration(report.durationMs)} (${count(report.batches, 'batch', 'batches')}, stopped: ${report.stopReason})`;
}

export function tickLine(report: DrainReport, lagMs: number): string {
  return `${outcomes(report)}, lag ${formatDuration(lagMs)}`;
}

/** The last line of a continuous drain. */
export function summaryLine(summary: DrainLoopSummary): string {
  const failed = summary.failedTicks === 0 ? '' : ` (${summary.failedTicks} failed)`;
  return `stopped after ${count(summary.ticks, 'tick')}${failed} in ${formatDuration(summary.durationMs)}: ${outcomes(summary.totals)}`;
}

/** The `--json` summary line: the same fields as before the loop was shared. */
export function summaryJson(summary: DrainLoopSummary): Record<string, unknown> {
  return {
    type: 'summary',
    ticks: summary.ticks,
    failedTicks: summary.failedTicks,
    ...summary.totals,
    durationMs: summary.durationMs,
  };
}

/**
 * The drain's log on stderr: warnings and errors always (stale settles, messages set aside at
 * claim), info and debug with OUTBOX_DEBUG=1.
 */
export function cliLogger(io: CliIo): Logger {
  const debug = isDebug(io);
  const write = (level: string, message: string, fields?: Record<string, unknown>) => {
    const details = fields === undefined ? '' : ` ${JSON.stringify(fields)}`;
    writeNote(io, `${level}: ${message}${details}`);
  };
  return {
    debug: (message, fields) => {
      if (debug) write('debug', message, fields);
    },
    info: (message, fields) => {
      if (debug) write('info', message, fields);
    },
    warn: (message, fields) => write('warn', message, fields),
    error: (message, fields) => write('error', message, fields),
  };
}
