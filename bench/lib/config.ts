/**
 * What a bench run was asked to do, read once from the environment:
 *
 * - `BENCH_SCALE` (default 1): multiplies every message count, e.g. 0.1 for a quick smoke run.
 * - `BENCH_ONLY` (default all): comma-separated scenario ids to run, e.g. `1,3` or `1,latency`.
 * - `BENCH_RUNS` (default 5): measured runs per case; the table shows their median and spread.
 * - `BENCH_BASELINE` (default none): the root of another checkout of this repository (the build
 *   before a change, with its dependencies installed or linked). Scenario 1 then drains that
 *   build too, beside this one in every run, and prints what this build costs against it.
 */
export interface BenchConfig {
  scale: number;
  only: ReadonlySet<string> | null;
  runs: number;
  baseline: string | null;
}

/**
 * Five: the smallest count whose median ignores one outlier on each side, and with the order
 * rotated each run (bench/lib/order.ts), each of the four systems goes first at least once.
 */
export const DEFAULT_RUNS = 5;

export function readBenchConfig(env: NodeJS.ProcessEnv = process.env): BenchConfig {
  const scale = env.BENCH_SCALE === undefined ? 1 : Number(env.BENCH_SCALE);
  if (!Number.isFinite(scale) || scale <= 0 || scale > 10) {
    throw new Error(`BENCH_SCALE must be a number in (0, 10], got "${env.BENCH_SCALE}"`);
  }
  const runs = env.BENCH_RUNS === undefined ? DEFAULT_RUNS : Number(env.BENCH_RUNS);
  if (!Number.isInteger(runs) || runs < 1 || runs > 20) {
    throw new Error(`BENCH_RUNS must be an integer from 1 to 20, got "${env.BENCH_RUNS}"`);
  }
  const ids = (env.BENCH_ONLY ?? '')
    .split(',')
    .map((id) => id.trim().toLowerCase())
    .filter((id) => id.length > 0);
  const baseline = env.BENCH_BASELINE?.trim() || null;
  return { scale, runs, only: ids.length > 0 ? new Set(ids) : null, baseline };
}

/** A message count under the configured scale, never below `floor` so rates stay meaningful. */
export function scaled(config: BenchConfig, count: number, floor = 100): number {
  return Math.max(floor, Math.round(count * config.scale));
}
