import { performance } from 'node:perf_hooks';

const startedAt = performance.now();

/**
 * One line per step on stderr, so a user sees the run is alive while stdout stays for the
 * table. Each line carries the seconds since the run started.
 */
export function progress(message: string): void {
  const seconds = ((performance.now() - startedAt) / 1000).toFixed(1).padStart(6);
  process.stderr.write(`[${seconds}s] ${message}\n`);
}

/** Seconds since the bench process started. */
export function elapsedSeconds(): number {
  return (performance.now() - startedAt) / 1000;
}
