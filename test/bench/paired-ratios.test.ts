import { describe, expect, it } from 'vitest';
import { measurement, medianInterval, pairedRatios } from '../../bench/lib/stats.js';
import { pairedRatioRows, renderPairedRatios } from '../../bench/lib/table.js';
import type { ResultRow } from '../../bench/scenarios/types.js';

const values = (count: number) => Array.from({ length: count }, (_, index) => index + 1);

describe('medianInterval', () => {
  it('takes the 6th smallest and 6th largest of 20 runs at 95%', () => {
    // P(Binomial(20, 1/2) <= 5) = 0.0207 <= 0.025 < P(<= 6) = 0.0577.
    expect(medianInterval(values(20).reverse())).toEqual({ low: 6, high: 15 });
  });

  it('needs 6 runs for 95%: with 5 even the widest interval is less sure', () => {
    expect(medianInterval(values(5))).toBeUndefined();
    expect(medianInterval(values(6))).toEqual({ low: 1, high: 6 });
  });

  it('narrows with more runs and widens with more confidence', () => {
    // n = 100: P(X <= 39) = 0.0176, P(X <= 40) = 0.0284.
    expect(medianInterval(values(100))).toEqual({ low: 40, high: 61 });
    expect(medianInterval(values(20), 0.99)).toEqual({ low: 4, high: 17 });
  });
});

describe('pairedRatios', () => {
  it('divides run by run, turned so that above 1 is ours better', () => {
    const ours = measurement([10, 20, 30]);
    const theirs = measurement([5, 40, 10]);
    expect(pairedRatios(ours, theirs, 'higher')).toEqual([2, 0.5, 3]);
    expect(pairedRatios(ours, theirs, 'lower')).toEqual([0.5, 2, 1 / 3]);
  });

  it('pairs nothing when the systems ran a different number of times', () => {
    expect(pairedRatios(measurement([1, 2]), measurement([1]), 'higher')).toBeUndefined();
  });
});

describe('pairedRatioRows', () => {
  const columns = [
    { id: 'outbox-relay', title: 'outbox-relay' },
    { id: 'graphile-worker', title: 'graphile-worker' },
  ] as const;

  it('gives each row the median of its run-by-run ratios and their interval', () => {
    const theirs = values(20).map((run) => 1000 + 100 * run);
    const drifted = theirs.map((value, run) => value * (run % 2 === 0 ? 1.2 : 1.3));
    const row: ResultRow = {
      scenario: '11',
      label: 'no-op drain',
      unit: 'msg/s',
      better: 'higher',
      values: { 'outbox-relay': measurement(drifted), 'graphile-worker': measurement(theirs) },
      runsPaired: true,
    };
    expect(pairedRatioRows([{ ...row, runsPaired: undefined }], columns)).toEqual([]);
    const [paired] = pairedRatioRows([row], columns);
    expect(paired).toMatchObject({ peer: 'graphile-worker', runs: 20, median: 1.25 });
    expect(paired!.low).toBe(1.2);
    expect(paired!.high).toBe(1.3);
    expect(renderPairedRatios([paired!])).toContain(
      '| 11 | no-op drain | graphile | 1.25× | 1.20× to 1.30× | 20 |',
    );
  });
});
