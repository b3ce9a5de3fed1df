/**
 * One JSON object per line on the console: what Workers Logs, CloudWatch and most log shippers
 * index without configuration. Every runtime kit logs each drain and purge as one such line,
 * the record operators and alerts read.
 */
import type { DrainReport } from '../core/drain-settings.js';
import { describeError } from '../core/errors.js';
import type { Logger } from '../core/ports.js';
import type { PurgeReport } from '../core/purge.js';

export interface JsonLoggerOptions {
  /** Also write debug and info lines. Default false: the kits log each run's report already. */
  verbose?: boolean;
  /** Fields on every line (runtime, deployment, invocation). */
  fields?: Record<string, unknown>;
}

/** A {@link Logger} writing JSON lines: warnings and errors always, the rest when verbose. */
export function jsonLogger(options: JsonLoggerOptions = {}): Logger {
  const line =
    (level: 'debug' | 'info' | 'warn' | 'error') =>
    (message: string, fields: Record<string, unknown> = {}) => {
      if (!options.verbose && (level === 'debug' || level === 'info')) return;
      const write =
        level === 'error' ? console.error : level === 'warn' ? console.warn : console.log;
      write(JSON.stringify({ level, message, ...options.fields, ...fields }));
    };
  return { debug: line('debug'), info: line('info'), warn: line('warn'), error: line('error') };
}

/** Logs a drain or purge report as one JSON line. */
export function logReport(
  message: 'outbox drain' | 'outbox purge',
  report: DrainReport | PurgeReport,
  fields: Record<string, unknown> = {},
): void {
  console.log(JSON.stringify({ level: 'info', message, ...fields, ...report }));
}

/** One JSON line for a failed invocation, as the platform's log search expects. */
export function logFailure(
  message: string,
  error: unknown,
  fields: Record<string, unknown> = {},
): void {
  console.error(
    JSON.stringify({ level: 'error', message, ...fields, error: describeError(error) }),
  );
}
