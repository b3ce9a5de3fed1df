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
