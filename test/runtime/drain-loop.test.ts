/**
 * The drain loop's rules, with an injected clock and sleep: which ticks rest, which go again at
 * once, what failures do, and how a stop lets the running tick finish.
 */
import { describe, expect, it } from 'vitest';
import type { DrainReport, StopReason } from '../../src/core/drain-settings.js';
import { OutboxError } from '../../src/core/errors.js';
import type { PurgeReport } from '../../src/core/purge.js';
import {
  type DrainLoopFailure,
  type DrainLoopOptions,
  runDrainLoop,
} from '../../src/runtime/drain-loop.js';
import { drainReport, fakeClock } from '../support/drain-fixtures.js';

const INTERVAL_MS = 5_000;
const BUDGET_MS = 60_000;

/** A Postgres deadlock as the driver reports it: retryable by SQLSTATE. */
function deadlock(): Error {
  return Object.assign(new Error('deadlock detected'), { code: '40P01' });
}

/**
 * Runs the loop with drains that answer from `steps` in order (a stop reason, or an error to
 * throw) and a sleep that records each rest instead of waiting. Stops after the last step.
 */
async function runSteps(
  steps: readonly (StopReason | Error)[],
  options: Partial<DrainLoopOptions> = {},
) {
  const stop = new AbortController();
  const events: string[] = [];
  const failures: DrainLoopFailure[] = [];
  let calls = 0;
  const summary = await runDrainLoop({
    drain: async ({ budgetMs }) => {
      expect(budgetMs).toBe(BUDGET_MS);
      const step = steps[calls++]!;
      if (calls === steps.length) stop.abort();
      events.push(step instanceof Error ? `fail ${step.message}` : `drain ${step}`);
      if (step instanceof Error) throw step;
      return drainReport(step);
    },
    intervalMs: INTERVAL_MS,
    budgetMs: BUDGET_MS,
    signal: stop.signal,
    sleep: async (ms) => {
      events.push(`rest ${ms}`);
    },
    onError: (failure) => failures.push(failure),
    ...options,
  });
  return { summary, events, failures };
}

describe('runDrainLoop', () => {
  it('rests the interval after a tick that found nothing left', async () => {
    const { events, summary } = await runSteps(['empty', 'empty', 'empty']);
    expect(events).toEqual([
      'drain empty',
      `rest ${INTERVAL_MS}`,
      'drain empty',
      `rest ${INTERVAL_MS}`,
      'drain empty',
    ]);
    expect(summary).toMatchObject({ ticks: 3, failedTicks: 0, totals: { delivered: 3 } });
  });

  it('goes again at once after a tick cut short by its deadline or budget', async () => {
    const { events } = await runSteps(['deadline', 'budget', 'empty', 'empty']);
    expect(events).toEqual([
      'drain deadline',
      'drain budget',
      'drain empty',
      `rest ${INTERVAL_MS}`,
      'drain empty',
    ]);
  });

  it('reports a transient failure and retries after the interval', async () => {
    const lost = new OutboxError('OUTBOX_DATABASE', 'could not record outcomes');
    const { events, failures, summary } = await runSteps([deadlock(), lost, 'empty']);
    expect(events).toEqual([
      'fail deadlock detected',
      `rest ${INTERVAL_MS}`,
      'fail could not record outcomes',
      `rest ${INTERVAL_MS}`,
      'drain empty',
    ]);
    expect(
      failures.map(({ tick, transient, willRetry }) => ({ tick, transient, willRetry })),
    ).toEqual([
      { tick: 1, transient: true, willRetry: true },
      { tick: 2, transient: true, willRetry: true },
    ]);
    expect(summary).toMatchObject({ ticks: 3, failedTicks: 2 });
  });

  it('stops with a failure that is not transient, unless told to continue', async () => {
    const bug = new TypeError('sender exploded');
    await expect(runSteps([bug, 'empty'])).rejects.toBe(bug);

    const { events, failures } = await runSteps([bug, 'empty'], { onPermanentFailure: 'continue' });
    expect(events).toEqual(['fail sender exploded', `rest ${INTERVAL_MS}`, 'drain empty']);
    expect(failures[0]).toMatchObject({ transient: false, willRetry: true, phase: 'drain' });
  });

  it('on abort, lets the running tick finish and settle, then returns without resting', async () => {
    const stop = new AbortController();
    let finishTick: (() => void) | undefined;
    let tickSignal: AbortSignal | undefined;
    const rests: number[] = [];
    let returned = false;
    const loop = runDrainLoop({
      drain: ({ signal }) => {
        tickSignal = signal;
        return new Promise<DrainReport>((resolve) => {
          finishTick = () => resolve(drainReport('aborted'));
        });
      },
      intervalMs: INTERVAL_MS,
      budgetMs: BUDGET_MS,
      signal: stop.signal,
      sleep: async (ms) => {
        rests.push(ms);
      },
    }).then((summary) => {
      returned = true;
      return summary;
    });
    await expect.poll(() => finishTick).toBeDefined();
    stop.abort();
    // The drain sees the abort (drainOnce stops claiming) but the loop waits for it to settle.
    expect(tickSignal?.aborted).toBe(true);
    await new Promise((resolve) => setImmediate(resolve));
    expect(returned).toBe(false);
    finishTick!();
    const summary = await loop;
    expect(summary).toMatchObject({ ticks: 1, failedTicks: 0, totals: { delivered: 1 } });
    expect(rests).toEqual([]);
  });

  it('an abort cuts a rest short and leaves no timer running', async () => {
    const stop = new AbortController();
    const timersBefore = countTimers();
    let ticks = 0;
    const loop = runDrainLoop({
      drain: async () => {
        ticks += 1;
        return drainReport('empty', 0);
      },
      // An hour: only the abort can end this rest within the test.
      intervalMs: 3_600_000,
      budgetMs: BUDGET_MS,
      signal: stop.signal,
    });
    await expect.poll(() => ticks).toBe(1);
    expect(countTimers()).toBe(timersBefore + 1);
    stop.abort();
    expect(await loop).toMatchObject({ ticks: 1 });
    expect(countTimers()).toBe(timersBefore);
  });

  it('purges on the first tick, then once per purge interval', async () => {
    const clock = fakeClock();
    const purgedOnTicks: number[] = [];
    const purgeReport: PurgeReport = { deliveredDeleted: 2, deadDeleted: 0, statements: 1 };
    const { summary } = await runSteps(['empty', 'empty', 'empty', 'empty'], {
      clock,
      purgeIntervalMs: 2 * INTERVAL_MS,
      purge: async () => purgeReport,
      onPurge: (purged, tick) => {
        expect(purged).toBe(purgeReport);
        purgedOnTicks.push(tick);
      },
      sleep: async (ms) => clock.advance(ms),
    });
    expect(purgedOnTicks).toEqual([1, 3]);
    expect(summary.purges).toBe(2);
  });

  it('refuses a budget too small for one send', async () => {
    await expect(runSteps(['empty'], { budgetMs: 500 })).rejects.toThrow(
      /budgetMs must be at least/,
    );
  });
});

function countTimers(): number {
  return process.getActiveResourcesInfo().filter((name) => name === 'Timeout').length;
}
