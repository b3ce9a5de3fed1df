/**
 * Two claims on the wire (MAX_CLAIMS_ON_WIRE): when sends outrun one claim per round trip, a
 * second claim starts beside the first; when sends are slow or under a small subrequest budget,
 * claims go one at a time, and while claims take ordering keys' runs, those go one at a time,
 * with at most a claim of unkeyed rows beside each. Every claim here waits 20 ms before it reaches the
 * database (an injected round trip, as from a far region), so the lanes empty the queue long
 * before a claim lands whenever sends are instant.
 */
import { describe, expect, it } from 'vitest';
import { drainOnce } from '../../src/core/drain.js';
import { type DrainOptions, MIN_BUDGET_FOR_CLAIM_BESIDE } from '../../src/core/drain-settings.js';
import type { OutboxStore } from '../../src/core/outbox-store.js';
import { dueClaimNamed } from '../../src/store/due-claim-shape.js';
import { useTestDatabase } from '../support/database.js';
import {
  claimCountingStore,
  freshOutbox,
  recordingSender,
  sleep,
  watchedExecutor,
} from '../support/drain-fixtures.js';
import { countingExecutor, DRIVER_NAMES, useDriver } from '../support/drivers.js';

const database = useTestDatabase();

const ROUND_TRIP_MS = 20;

describe.each(DRIVER_NAMES)('claims on the wire, through %s', (driverName) => {
  const driver = useDriver(driverName, database);

  /**
   * Drains `count` fresh messages in batches of 10 through a store 20 ms away; with
   * `orderingKeys`, message i has ordering key i modulo that many.
   */
  async function drainFar(
    count: number,
    options: Partial<DrainOptions> & { sendMs?: number; orderingKeys?: number } = {},
  ) {
    const { outbox } = await freshOutbox(driver);
    const { sendMs = 0, orderingKeys, ...drainOptions } = options;
    const keys = await outbox.enqueue(
      driver.db,
      Array.from({ length: count }, (_, index) => ({
        kind: 'test.kind',
        payload: { index },
        orderingKey: orderingKeys ? `key-${index % orderingKeys}` : undefined,
      })),
    );
    const counted = countingExecutor(driver.db);
    const far = claimCountingStore(outbox.store(counted), ROUND_TRIP_MS);
    const sender = recordingSender(() => (sendMs > 0 ? sleep(sendMs) : undefined));
    const report = await drainOnce({
      store: far.store,
      senders: { 'test.kind': sender.send },
      batchSize: 10,
      concurrency: 4,
      ...drainOptions,
    });
    return { report, seen: far.seen, sender, keys, statements: counted.statements };
  }

  it('keeps two claims on the wire while instant sends outrun one, and sends each row once', async () => {
    const { report, seen, sender } = await drainFar(300);
    expect(seen.mostOnWire).toBe(2);
    expect(report).toMatchObject({ claimed: 300, delivered: 300, released: 0, stale: 0 });
    expect(sender.calls).toHaveLength(300);
    expect(new Set(sender.calls.map((call) => call.key)).size).toBe(300);
  });

  it("claims one at a time while claims take ordering keys' runs, and keeps each key in enqueue order", async () => {
    // Two claims made before either lands would walk the keys from one place, and the second
    // would find the first's runs locked. (Over a few deep keys claims always walk; over many
    // shallow ones they may take heads instead, two on the wire: heads-claims.test.ts.)
    const { report, seen, sender, keys } = await drainFar(300, { orderingKeys: 3 });
    expect(seen.mostOnWire).toBe(1);
    expect(report.delivered).toBe(300);
    for (let group = 0; group < 3; group++) {
      const inGroup = (key: string) => keys.indexOf(key) % 3 === group;
      expect(sender.delivered.filter(inGroup)).toEqual(keys.filter(inGroup));
    }
  });

  it("puts a claim without keyed rows beside each claim of keys' runs while unkeyed messages wait, and keeps each key in enqueue order", async () => {
    // 300 messages, every other one without a key, the rest over 3 keys: the walks of the keys
    // go one at a time (each continues the last one's runs), and beside each a claim of the
    // unkeyed rows only, so those do not go at the runs' pace. (Where the backlog's last walk
    // comes back with runs shorter than a share, the claims after it take heads, and those may
    // go two on the wire: heads-claims.test.ts.)
    const { outbox } = await freshOutbox(driver);
    const keys = await outbox.enqueue(
      driver.db,
      Array.from({ length: 300 }, (_, index) => ({
        kind: 'test.kind',
        payload: { index },
        orderingKey: index % 2 === 0 ? undefined : `key-${index % 3}`,
      })),
    );
    const ways: string[] = [];
    /** The way each claim's text took keyed rows, by its claim token (its second parameter). */
    const wayByToken = new Map<unknown, string>();
    const store = outbox.store(
      watchedExecutor(driver.db, (text, params) => {
        const claim = dueClaimNamed(text);
        if (!claim) return;
        ways.push(claim.keyed);
        wayByToken.set(params?.[1], claim.keyed);
      }),
    );
    /** Each claim: whether it was to take unkeyed rows only, and what it took. */
    const claims: { unkeyedOnly: boolean; keyedTaken: number }[] = [];
    /** The claims that could take keyed rows, each from the step it started to the one it landed. */
    const keyedClaims: { token: string; from: number; to: number }[] = [];
    let step = 0;
    let keyedOnWire = 0;
    let besideRuns = 0;
    const far = claimCountingStore(store, ROUND_TRIP_MS).store;
    const watched: OutboxStore = {
      settleFits: (requests) => far.settleFits(requests),
      async claim(request) {
        const unkeyedOnly = request.unkeyedOnly === true;
        if (unkeyedOnly && keyedOnWire > 0) besideRuns += 1;
        if (!unkeyedOnly) keyedOnWire += 1;
        const from = step++;
        try {
          const result = await far.claim(request);
          const keyedTaken = result.claimed.filter((row) => row.orderingKey !== null).length;
          claims.push({ unkeyedOnly, keyedTaken });
          return result;
        } finally {
          if (!unkeyedOnly) {
            keyedOnWire -= 1;
            keyedClaims.push({ token: request.claimToken, from, to: step++ });
          }
        }
      },
      settle: (requests, now) => far.settle(requests, now),
    };
    const sender = recordingSender();
    const report = await drainOnce({
      store: watched,
      senders: { 'test.kind': sender.send },
      batchSize: 10,
      concurrency: 4,
    });
    expect(report).toMatchObject({ claimed: 300, delivered: 300, released: 0, stale: 0 });
    expect(new Set(sender.delivered).size).toBe(300);
    for (let group = 0; group < 3; group++) {
      const inGroup = (key: string) => {
        const index = keys.indexOf(key);
        return index % 2 === 1 && index % 3 === group;
      };
      expect(sender.delivered.filter(inGroup)).toEqual(keys.filter(inGroup));
    }
    // No walk went beside another claim that could take keyed rows; claims beside the walks,
    // asked for unkeyed rows only, ran the claim without keyed rows and took none.
    const walks = keyedClaims.filter((claim) => wayByToken.get(claim.token) === 'walk');
    expect(walks.length).toBeGreaterThanOrEqual(5);
    const besideWalks = walks.flatMap((walk) =>
      keyedClaims.filter((other) => other !== walk && other.from < walk.to && walk.from < other.to),
    );
    expect(besideWalks.map((other) => wayByToken.get(other.token))).toEqual([]);
    const beside = claims.filter((claim) => claim.unkeyedOnly);
    expect(beside.length).toBeGreaterThanOrEqual(5);
    expect(besideRuns).toBe(beside.length);
    expect(beside.map((claim) => claim.keyedTaken)).toEqual(beside.map(() => 0));
    expect(ways.filter((way) => way === 'none').length).toBeGreaterThanOrEqual(beside.length);
  });

  it('does not end the drain on an empty claim while earlier rows are unrecorded', async () => {
    const { outbox, store } = await freshOutbox(driver);
    const keys = await outbox.enqueue(driver.db, [
      { kind: 'test.kind', payload: { n: 1 }, orderingKey: 'a' },
      { kind: 'test.kind', payload: { n: 2 }, orderingKey: 'a' },
      { kind: 'test.kind', payload: { n: 3 }, orderingKey: 'a' },
      { kind: 'test.kind', payload: { n: 4 }, orderingKey: 'b', delayMs: 60_000 },
    ]);
    // Settles land late, so the claim ahead (b's head not due, a's out) finds nothing. It offers
    // no held run, as a store that does not continue runs would not take one (and as a held run
    // whose last outcome is being written is not offered): a's third waits for the write.
    const slowSettles: OutboxStore = {
      settleFits: (requests) => store.settleFits(requests),
      claim: (request) => store.claim({ ...request, holding: undefined }),
      async settle(requests, now) {
        await sleep(5 * ROUND_TRIP_MS);
        return store.settle(requests, now);
      },
    };
    const sender = recordingSender();
    const report = await drainOnce({
      store: slowSettles,
      senders: { 'test.kind': sender.send },
      batchSize: 2,
      concurrency: 1,
    });
    // The empty claim proved nothing while a's run was unrecorded: once it was, one more claim
    // took a's third message in the same drain.
    expect(report.delivered).toBe(3);
    expect(sender.delivered).toEqual(keys.slice(0, 3));
  });

  it('claims one batch at a time when the sends are slower than a claim', async () => {
    const { report, seen } = await drainFar(20, { sendMs: 10 * ROUND_TRIP_MS, concurrency: 2 });
    expect(seen.mostOnWire).toBe(1);
    expect(report.delivered).toBe(20);
  });

  it('counts the rows a claim on the wire may bring against maxMessages', async () => {
    const { report, seen } = await drainFar(200, { maxMessages: 45 });
    expect(seen.mostOnWire).toBe(2);
    // The last claim asks only for what the cap leaves beside the claim on the wire.
    expect(report).toMatchObject({ claimed: 45, delivered: 45, released: 0 });
  });

  it('claims one at a time under a small subrequest budget, where a claim beside another may be wasted', async () => {
    const { report, seen, statements } = await drainFar(200, { subrequestBudget: 60 });
    expect(seen.mostOnWire).toBe(1);
    expect(statements + report.sends).toBeLessThanOrEqual(60);
    expect(report).toMatchObject({ released: 0, stopReason: 'budget' });
    expect(report.delivered).toBeGreaterThan(40);
  });

  it('keeps two claims on the wire under a large budget, within it', async () => {
    const budget = MIN_BUDGET_FOR_CLAIM_BESIDE;
    const { report, seen, statements } = await drainFar(1000, {
      subrequestBudget: budget,
      // Groups of 32 outcomes, not the default 100: one write then covers ten claims of 10,
      // while the budget keeps one free per claim, and that slack hid claims sized without the
      // other claim's rows (one row unsent, as here).
      settleGroupSize: 32,
    });
    expect(seen.mostOnWire).toBe(2);
    expect(statements + report.sends).toBeLessThanOrEqual(budget);
    expect(report.stopReason).toBe('budget');
    // Claims are sized by what the budget can send, the other claim's rows counted: at most one
    // row came back unsent (a settle group written meanwhile took its subrequest). Sized without
    // the rows on the wire, the claims took seven the budget could not send.
    expect(report.released).toBeLessThanOrEqual(1);
    expect(report.delivered + report.released).toBe(report.claimed);
  });
});
