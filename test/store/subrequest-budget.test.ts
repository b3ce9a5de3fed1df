/**
 * The subrequest budget (a Worker's limit on fetches and database round trips per invocation)
 * in the two places a drain spends it: the size of each claim, and each send. Either check alone
 * hides the other in the simple case (test/store/drain.test.ts); these cases need both.
 */
import { describe, expect, it } from 'vitest';
import { drainOnce } from '../../src/core/drain.js';
import { useTestDatabase } from '../support/database.js';
import { freshOutbox, recordingSender, sleep } from '../support/drain-fixtures.js';
import { countingExecutor, DRIVER_NAMES, useDriver } from '../support/drivers.js';

const database = useTestDatabase();

const messages = (count: number) =>
  Array.from({ length: count }, (_, index) => ({ kind: 'test.kind', payload: { index } }));

describe.each(DRIVER_NAMES)('the subrequest budget, through %s', (driverName) => {
  const driver = useDriver(driverName, database);

  it('stays within a budget of 20 sending one at a time while the next batch is claimed ahead', async () => {
    const { outbox } = await freshOutbox(driver);
    await outbox.enqueue(driver.db, messages(100));
    const counted = countingExecutor(driver.db);
    // Slow enough that the prefetched claim lands while most of its batch is still unsent.
    const sender = recordingSender(() => sleep(5));
    const report = await drainOnce({
      store: outbox.store(counted),
      senders: { 'test.kind': sender.send },
      subrequestBudget: 20,
      batchSize: 7,
      concurrency: 1,
      prefetch: true,
    });
    expect(counted.statements + sender.calls.length).toBeLessThanOrEqual(20);
    expect(report.roundTrips).toBe(counted.statements);
    expect(report.sends).toBe(sender.calls.length);
    expect(report.stopReason).toBe('budget');
    expect(report.delivered).toBeGreaterThan(10);
  });

  it('a drain that records its run keeps a subrequest for the record and still stays within a budget of 10', async () => {
    const { outbox, store } = await freshOutbox(driver);
    await outbox.enqueue(driver.db, messages(100));
    const counted = countingExecutor(driver.db);
    const sender = recordingSender();
    const report = await drainOnce({
      store: outbox.store(counted),
      senders: { 'test.kind': sender.send },
      subrequestBudget: 10,
      batchSize: 25,
      prefetch: false,
      recordRun: true,
    });
    // One claim, one settle and the record leave seven sends (eight without a record: the
    // budget's every subrequest, as in the next test).
    expect(report).toMatchObject({ claimed: 7, delivered: 7, released: 0, stopReason: 'budget' });
    expect(counted.statements + sender.calls.length).toBe(10);
    expect(report.roundTrips).toBe(counted.statements);
    expect(await store.drainRuns()).toMatchObject([{ errorCode: null, runs: 1 }]);
  });

  it('claims no more rows than the budget leaves room to send', async () => {
    const { outbox, store } = await freshOutbox(driver);
    await outbox.enqueue(driver.db, messages(100));
    const sender = recordingSender();
    const report = await drainOnce({
      store,
      senders: { 'test.kind': sender.send },
      subrequestBudget: 10,
      batchSize: 25,
      prefetch: false,
    });
    // One claim and one settle leave eight sends: eight rows claimed, none claimed in vain.
    expect(report).toMatchObject({ claimed: 8, delivered: 8, released: 0, stopReason: 'budget' });
    expect((await store.stats(new Date())).pending).toBe(92);
  });
  it("does not start a send the budget cannot pay for once a sender's own requests have eaten it", async () => {
    const { outbox } = await freshOutbox(driver);
    await outbox.enqueue(driver.db, messages(30));
    const counted = countingExecutor(driver.db);
    let invoked = 0;
    let spent = 0;
    const report = await drainOnce({
      store: outbox.store(counted),
      senders: {
        // The fifth send refreshes a token first: two requests of its own, reported before
        // they are made, after the rows it now competes with were claimed.
        'test.kind': async (_message, _signal, context) => {
          invoked += 1;
          if (invoked === 5) {
            context?.spend(2, 'token refresh');
            spent += 2;
          }
        },
      },
      subrequestBudget: 20,
      batchSize: 20,
      concurrency: 1,
    });
    // One claim takes the 18 rows the budget could send beside the claim and its settle; after
    // the refresh only 16 can be paid for, and the last two go back unsent instead of making a
    // request beyond the budget.
    expect(counted.statements + invoked + spent).toBeLessThanOrEqual(20);
    expect(report).toMatchObject({
      claimed: 18,
      delivered: 16,
      released: 2,
      sends: invoked,
      stopReason: 'budget',
    });
  });

  it('writes outcomes by group size only under a budget, not every few milliseconds', async () => {
    const { outbox, store } = await freshOutbox(driver);
    await outbox.enqueue(driver.db, messages(20));
    // Sends far slower than the 5 ms group window: without a budget each would be its own write.
    const sender = recordingSender(() => sleep(15));
    const budgeted = await drainOnce({
      store,
      senders: { 'test.kind': sender.send },
      subrequestBudget: 100,
      concurrency: 1,
    });
    expect(budgeted).toMatchObject({ delivered: 20, settles: 1 });
    await outbox.enqueue(driver.db, messages(20));
    const unbudgeted = await drainOnce({
      store,
      senders: { 'test.kind': sender.send },
      concurrency: 1,
    });
    expect(unbudgeted.delivered).toBe(20);
    expect(unbudgeted.settles).toBeGreaterThan(5);
  });
});
