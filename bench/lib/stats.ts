/** The runs of one measured case and their median. */
export interface Measurement {
  median: number;
  min: number;
  max: number;
  runs: number[];
}

export function median(values: readonly number[]): number {
  if (values.length === 0) throw new Error('median of no values');
  const sorted = [...values].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? sorted[middle]! : (sorted[middle - 1]! + sorted[middle]!) / 2;
}

export function measurement(runs: readonly number[]): Measurement {
  return {
    median: median(runs),
    min: Math.min(...runs),
    max: Math.max(...runs),
    runs: [...runs],
  };
}

/** From this many runs on, spread is read from the quartiles so one outlier does not rule it. */
const QUARTILE_SPREAD_FROM = 10;

/**
 * How noisy a case was, in percent of its median: half the range of its runs (max - min), or
 * half the interquartile range once there are enough runs (the 30 single claims of scenario 3).
 */
export function spreadPercent(m: Measurement): number {
  if (m.median === 0) return 0;
  if (m.runs.length >= QUARTILE_SPREAD_FROM) {
    return ((quantile(m.runs, 0.75) - quantile(m.runs, 0.25)) / 2 / m.median) * 100;
  }
  return ((m.max - m.min) / 2 / m.median) * 100;
}

/** Linear-interpolated quantile, q in [0, 1]. */
export function quantile(values: readonly number[], q: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  const position = (sorted.length - 1) * q;
  const below = Math.floor(position);
  const above = Math.ceil(position);
  return sorted[below]! + (sorted[above]! - sorted[below]!) * (position - below);
}

/** Values collected per system as a case repeats, turned into one measurement each. */
export class RunsBySystem<Id extends string> {
  private readonly runs = new Map<Id, number[]>();

  add(id: Id, value: number): void {
    const list = this.runs.get(id);
    if (list) list.push(value);
    else this.runs.set(id, [value]);
  }

  get(id: Id): readonly number[] | undefined {
    return this.runs.get(id);
  }

  entries(): [Id, readonly number[]][] {
    return [...this.runs.entries()];
  }

  measurements(): Partial<Record<Id, Measurement>> {
    const values: Partial<Record<Id, Measurement>> = {};
    for (const [id, list] of this.runs) values[id] = measurement(list);
    return values;
  }
}

/**
 * Ours over a peer's, run by run, as the table's ratios read (above 1: ours better), when both
 * ran as often. The scenarios interleave the systems within each run and rotate their order run
 * by run, so run i of each met the same stretch of a shared machine's drift: a ratio per run
 * cancels what the medians of each side alone keep (a ratio of medians pairs one side's fast
 * runs with the other's slow ones).
 */
export function pairedRatios(
  ours: Measurement,
  theirs: Measurement,
  better: 'higher' | 'lower',
): number[] | undefined {
  if (ours.runs.length !== theirs.runs.length) return undefined;
  const ratios = ours.runs.map((mine, run) => advantage(mine, theirs.runs[run]!, better));
  return ratios.every(Number.isFinite) ? ratios : undefined;
}

/** How many times better ours is than theirs, whichever way the unit points (above 1: ours). */
export function advantage(ours: number, theirs: number, better: 'higher' | 'lower'): number {
  return better === 'higher' ? ours / theirs : theirs / ours;
}

/** How sure medianInterval is that the true median lies inside (two-sided). */
export const INTERVAL_CONFIDENCE = 0.95;

/**
 * An interval for the median of `values` that assumes nothing of their distribution: the k-th
 * smallest and the k-th largest, k the largest for which fewer than k of n values fall below the
 * median with chance at most (1 - confidence) / 2 (the binomial with p = 1/2, the sign test's
 * interval). For 20 runs at 95%, the 6th smallest and the 6th largest. Undefined for fewer
 * values than the confidence can be had from (6 at 95%).
 */
export function medianInterval(
  values: readonly number[],
  confidence = INTERVAL_CONFIDENCE,
): { low: number; high: number } | undefined {
  const n = values.length;
  const tail = (1 - confidence) / 2;
  let below = 0;
  let k = 0;
  for (let j = 0; j < n; j++) {
    below += binomialHalf(n, j);
    if (below > tail) break;
    k = j + 1;
  }
  if (k === 0) return undefined;
  const sorted = [...values].sort((a, b) => a - b);
  return { low: sorted[k - 1]!, high: sorted[n - k]! };
}

/** P(X = j) for X ~ Binomial(n, 1/2), computed in logs so 200 runs do not overflow. */
function binomialHalf(n: number, j: number): number {
  let logChoose = 0;
  for (let i = 1; i <= j; i++) logChoose += Math.log(n - j + i) - Math.log(i);
  return Math.exp(logChoose - n * Math.LN2);
}
