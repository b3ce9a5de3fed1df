/**
 * How a drain queues the runs of ordering keys it claims, the rules alone: which row waits for
 * which, what a run that continues a held one goes behind, and which held runs a claim is
 * offered. The real-PostgreSQL side is in test/store/continued-runs.test.ts.
 */
import { describe, expect, it } from 'vitest';
import {
  type ClaimLease,
  type DrainRun,
  enqueueClaimed,
  heldRuns,
  newRun,
  noteWritten,
  type QueuedMessage,
  tellFollower,
} from './drain-run.js';
import type { ClaimedMessage } from './outbox-store.js';
import { resolveSettings } from './resolved-settings.js';

const NOW = 1_000_000;

function aRun(): DrainRun {
  const settings = resolveSettings({
    store: {
      settleFits: (requests) => requests.length,
      claim: () => Promise.reject(new Error('not claimed here')),
      settle: () => Promise.reject(new Error('not settled here')),
    },
    senders: { 'test.kind': async () => {} },
  });
  return newRun(settings, { store: settings.store, senders: settings.senders }, () => 60_000);
}

/** One claim's rows of key `k`, ids as given; `behind` on the first, when it continues a run. */
function claimOf(ids: readonly number[], options: { behind?: number; k?: string } = {}) {
  const token = crypto.randomUUID();
  const lease: ClaimLease = { endsAt: NOW + 60_000, unsettled: ids.length };
  return ids.map((id, index): QueuedMessage => {
    const message: ClaimedMessage = {
      id: String(id),
      key: crypto.randomUUID(),
      kind: 'test.kind',
      payload: {},
      orderingKey: options.k ?? 'k',
      attempts: 1,
      maxAttempts: 10,
      createdAt: new Date(NOW),
      claimToken: token,
    };
    if (index === 0 && options.behind !== undefined) message.behind = String(options.behind);
    return { message, claimToken: token, lease };
  });
}

describe('queueing the runs of ordering keys', () => {
  it('queues a run behind its head, and offers it to the next claim by its first and last row', () => {
    const run = aRun();
    const first = claimOf([1, 2, 3]);
    enqueueClaimed(run, first);
    expect(first.map((queued) => queued.turn)).toEqual([undefined, 'ahead', 'ahead']);
    expect(heldRuns(run, NOW)).toEqual([
      { orderingKey: 'k', firstId: '1', lastId: '3', lastToken: first[2]!.claimToken },
    ]);
  });

  it('puts a continuing run behind the held run it names: waiting, at once when that row was delivered, dropped when it was not', () => {
    const cases = [
      { outcome: undefined, turn: 'ahead' },
      { outcome: true, turn: 'go' },
      { outcome: false, turn: 'drop' },
    ] as const;
    for (const { outcome, turn } of cases) {
      const run = aRun();
      const first = claimOf([1, 2, 3]);
      enqueueClaimed(run, first);
      if (outcome !== undefined) tellFollower(run, first[2]!, outcome);
      const next = claimOf([4, 5], { behind: 3 });
      enqueueClaimed(run, next);
      expect(next[0]!.turn, `after ${String(outcome)}`).toBe(turn);
      if (outcome === undefined) {
        expect(first[2]!.follower).toBe(next[0]);
        // The run now ends at the continuing run's last row.
        expect(heldRuns(run, NOW)[0]).toMatchObject({ firstId: '1', lastId: '5' });
        // Its last row failing drops what waits behind it.
        tellFollower(run, first[2]!, false);
        expect(next[0]!.turn).toBe('drop');
      }
    }
  });

  it('drops a continuing run behind a row that is not the last of the held run', () => {
    const run = aRun();
    enqueueClaimed(run, claimOf([1, 2, 3]));
    const next = claimOf([4, 5], { behind: 2 });
    enqueueClaimed(run, next);
    expect(next[0]!.turn).toBe('drop');
    // The held run still ends where it did.
    expect(heldRuns(run, NOW)[0]).toMatchObject({ lastId: '3' });
  });

  it('offers no run whose last row failed or whose lease ran out, and forgets one written a claim ago', () => {
    const run = aRun();
    const failed = claimOf([1, 2], { k: 'failed' });
    const written = claimOf([3, 4], { k: 'written' });
    enqueueClaimed(run, [...failed, ...written, ...claimOf([5], { k: 'open' })]);
    tellFollower(run, failed[1]!, false);
    tellFollower(run, written[1]!, true);
    noteWritten(run, written[1]!);
    expect(heldRuns(run, NOW).map((held) => held.orderingKey)).toEqual(['open']);
    // A run written a claim ago can still be continued by a claim that was on the wire then.
    const late = claimOf([6], { k: 'written', behind: 4 });
    enqueueClaimed(run, late);
    expect(late[0]!.turn).toBe('go');
    expect(heldRuns(run, NOW + 60_000)).toEqual([]);
  });
});
