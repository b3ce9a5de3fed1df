/**
 * Outcomes and leases: a sent message's outcome must be written before its row's lease ends, or
 * another drain claims the row and sends it again. With or without a subrequest budget, and
 * under a budget the writes this forces are paid for like any other subrequest.
 *
 * First on a clock the test moves (vitest's fake timers: Date, performance and setTimeout),
 * against a store that only records when each claim and settle reached it, so every lease end
 * and every write start is exact; then two real drains over PostgreSQL.
 */
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { drainOnce } from '../../src/core/drain.js';
import type { DrainOptions, DrainReport } from '../../src/core/drain-settings.js';
import type { ClaimedMessage, OutboxStore } from '../../src/core/outbox-store.js';
import { useTestDatabase } from '../support/database.js';
import { freshOutbox, recordingSender, SHORT_LEASE, sleep } from '../support/drain-fixtures.js';
import { useDriver } from '../support/drivers.js';

/** A receiver's answer time, as in the issue. */
const SEND_MS = 100;
/** Each claim and settle takes this long on the test's clock. */
const STORE_ROUND_TRIP_MS = 5;

interface Claimed {
  leaseEndsAt: number;
  ids: string[];
}

/**
 * A store with `rows` due rows, each claimed once, that records each claim's lease end and when
 * each settle reached it, by id.
 */
function recordingStore(rows: number) {
  let next = 0;
  const claims: Claimed[] = [];
  const writtenAt = new Map<string, number>();
  let settles = 0;
  const store: OutboxStore = {
    settleFits: (requests) => requests.length,
    async claim(request) {
      await sleep(STORE_ROUND_TRIP_MS);
      const count = Math.min(request.limit, rows - next);
      const claimed = Array.from({ length: count }, (): ClaimedMessage => {
        next += 1;
        return {
          id: String(next),
          key: `key-${next}`,
          kind: 'test.kind',
          payload: {},
          orderingKey: null,
          attempts: 1,
          maxAttempts: 25,
          createdAt: new Date(0),
          claimToken: request.claimToken,
        };
      });
      claims.push({
        leaseEndsAt: request.now.getTime() + request.leaseMs,
        ids: claimed.map(({ id }) => id),
      });
      return { claimed, exhausted: [] };
    },
    async settle(requests) {
      settles += 1;
      for (const { message } of requests) writtenAt.set(message.id, Date.now());
      await sleep(STORE_ROUND_TRIP_MS);
      return { settled: requests.map(({ message }) => message.id), stale: [] };
    },
  };
  return { store, claims, writtenAt, settles: () => settles };
}

/** Runs a drain to its end, moving the test's clock. */
async function drainOnTheTestsClock(options: DrainOptions): Promise<DrainReport> {
  let report: DrainReport | undefined;
  let failure: unknown;
  void drainOnce(options).then(
    (done) => {
      report = done;
    },
    (error: unknown) => {
      failure = error ?? new Error('drain failed');
    },
  );
  while (report === undefined && failure === undefined) await vi.advanceTimersByTimeAsync(10);
  if (failure !== undefined) throw failure;
  return report!;
}

/** How late each outcome's write started, ms past its lease end less the round-trip reserve. */
function lateWrites(recorded: ReturnType<typeof recordingStore>, reserveMs: number) {
  const late: Record<string, number> = {};
  for (const { leaseEndsAt, ids } of recorded.claims) {
    for (const id of ids) {
      const at = recorded.writtenAt.get(id);
      if (at === undefined || at > leaseEndsAt - reserveMs) {
        late[id] = at === undefined ? Number.POSITIVE_INFINITY : at - (leaseEndsAt - reserveMs);
      }
    }
  }
  return late;
}

describe('settle writes and leases, on a clock the test moves', () => {
  beforeEach(() => {
    vi.useFakeTimers();
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  /** The drain over 40 rows: every outcome's write starts before its lease end less a round trip. */
  async function expectWritesBeforeLeaseEnds(subrequestBudget: number | undefined) {
    const recorded = recordingStore(40);
    const sender = recordingSender(() => sleep(SEND_MS));
    const report = await drainOnTheTestsClock({
      store: recorded.store,
      senders: { 'test.kind': sender.send },
      subrequestBudget,
      ...SHORT_LEASE,
    });
    expect(report).toMatchObject({ claimed: 40, delivered: 40, stopReason: 'empty' });
    expect(lateWrites(recorded, SHORT_LEASE.roundTripReserveMs)).toEqual({});
    return report;
  }

  it('an outcome is written before its lease ends, under a budget', async () => {
    const report = await expectWritesBeforeLeaseEnds(10_000);
    // The group's age writes nothing under a budget: only the leases and the end do.
    expect(report.settles).toBeLessThan(10);
  });

  it('an outcome is written before its lease ends, with no budget', async () => {
    await expectWritesBeforeLeaseEnds(undefined);
  });

  // Three lanes and claims of three or four, each send 150 ms: when the budget runs out, rows of
  // two claims or more are in flight while leases force writes.
  it.each([
    { subrequestBudget: 50, batchSize: 3 },
    { subrequestBudget: 30, batchSize: 4 },
  ])(
    'pays for the writes leases force: a budget of $subrequestBudget is never overrun (batches of $batchSize)',
    async ({ subrequestBudget, batchSize }) => {
      const recorded = recordingStore(100);
      const sender = recordingSender(() => sleep(150));
      const report = await drainOnTheTestsClock({
        store: recorded.store,
        senders: { 'test.kind': sender.send },
        subrequestBudget,
        ...SHORT_LEASE,
        batchSize,
        concurrency: 3,
      });
      const made = recorded.claims.length + recorded.settles() + sender.calls.length;
      expect(made).toBeLessThanOrEqual(subrequestBudget);
      expect(report.stopReason).toBe('budget');
      expect(report.settles).toBeGreaterThan(1);
      expect(lateWrites(recorded, SHORT_LEASE.roundTripReserveMs)).toEqual({});
      // The budget is used: each claim's write is kept free only while the claim needs it.
      expect(made).toBeGreaterThan(subrequestBudget - 4);
    },
  );

  it('leaves no timer armed once the drain returns, its lease write still far off', async () => {
    const recorded = recordingStore(5);
    const sender = recordingSender(() => sleep(SEND_MS));
    const report = await drainOnTheTestsClock({
      store: recorded.store,
      senders: { 'test.kind': sender.send },
      subrequestBudget: 100,
      concurrency: 2,
    });
    expect(report).toMatchObject({ delivered: 5, settles: 1 });
    expect(vi.getTimerCount()).toBe(0);
  });
});

const database = useTestDatabase();

describe('leases under a budget, over PostgreSQL', () => {
  const driver = useDriver('node-pg', database);

  it('two overlapping drains with a 1 s lease send every message once', async () => {
    const { outbox, store } = await freshOutbox(driver);
    const count = 40;
    await outbox.enqueue(
      driver.db,
      Array.from({ length: count }, (_, index) => ({ kind: 'test.kind', payload: { index } })),
    );
    const sender = recordingSender(() => sleep(SEND_MS));
    const reports: DrainReport[] = [];
    const drainInLoop = async () => {
      for (;;) {
        const stats = await store.stats(new Date());
        if (stats.pending + stats.claimed + stats.leaseExpired === 0) return;
        const report = await drainOnce({
          store,
          senders: { 'test.kind': sender.send },
          subrequestBudget: 10_000,
          ...SHORT_LEASE,
        });
        reports.push(report);
        if (report.claimed === 0) await sleep(20);
      }
    };
    await Promise.all([drainInLoop(), drainInLoop()]);
    expect(sender.calls.length).toBe(count);
    expect(new Set(sender.calls.map(({ key }) => key)).size).toBe(count);
    expect(reports.reduce((stale, report) => stale + report.stale, 0)).toBe(0);
  });
});
