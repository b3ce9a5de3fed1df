import { expect, it } from 'vitest';
import type { StopReason } from '../../src/core/drain-settings.js';
import { silentLogger } from '../../src/core/ports.js';
import { startDrainSchedule } from '../../src/runtime/node.js';
import { drainReport, sleep } from '../support/drain-fixtures.js';

it('runs the next tick at once when a tick ran out of time with work still due', async () => {
  const reasons: StopReason[] = ['deadline', 'budget', 'deadline', 'empty'];
  let ticks = 0;
  const schedule = startDrainSchedule({
    // A long interval: only back-to-back ticks can reach the fourth call within the wait below.
    intervalMs: 60_000,
    logger: silentLogger,
    drain: async () => drainReport(reasons[ticks++] ?? 'empty'),
  });
  const deadline = Date.now() + 5_000;
  while (ticks < 4 && Date.now() < deadline) await sleep(10);
  expect(ticks).toBe(4);
  await sleep(100);
  // After an 'empty' tick it rests for the interval.
  expect(ticks).toBe(4);
  await schedule.stop();
});

it('lets the running tick finish before stop() resolves', async () => {
  let finished = false;
  const schedule = startDrainSchedule({
    intervalMs: 60_000,
    logger: silentLogger,
    drain: async () => {
      await sleep(200);
      finished = true;
      return drainReport('empty');
    },
  });
  await sleep(20);
  await schedule.stop();
  expect(finished).toBe(true);
});

it('logs a failed tick, even one that is not transient, and keeps going', async () => {
  const logged: string[] = [];
  let ticks = 0;
  const schedule = startDrainSchedule({
    intervalMs: 100,
    logger: { ...silentLogger, error: (message) => logged.push(message) },
    drain: async () => {
      ticks += 1;
      if (ticks === 1) throw new TypeError('a bug in a sender');
      return drainReport('empty');
    },
  });
  const deadline = Date.now() + 5_000;
  while (ticks < 2 && Date.now() < deadline) await sleep(10);
  await schedule.stop();
  const summary = await schedule.stopped;
  expect(logged).toEqual(['scheduled drain failed; retrying next tick']);
  expect(summary.failedTicks).toBe(1);
  expect(summary.ticks).toBeGreaterThanOrEqual(2);
});
