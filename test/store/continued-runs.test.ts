/**
 * Runs that continue each other: a drain holding an ordering key's run claims the rows right
 * behind its last row while that run is still out (ClaimRequest.holding), and sends them only
 * once that row is delivered. What the store checks before it continues a run, and what the
 * drain does with a continuing run.
 */
import { describe, expect, it } from 'vitest';
import { drainOnce } from '../../src/core/drain.js';
import { RetryableDeliveryError } from '../../src/core/errors.js';
import type { ClaimResult, HeldRun, OutboxStore } from '../../src/core/outbox-store.js';
import type { NewMessage } from '../../src/index.js';
import { useTestDatabase } from '../support/database.js';
import {
  claimRequest,
  freshOutbox,
  recordingSender,
  sleep,
  walkKeysNext,
} from '../support/drain-fixtures.js';
import { DRIVER_NAMES, useDriver } from '../support/drivers.js';

const database = useTestDatabase();

/** `perKey` messages for each of `keys` ordering keys, enqueued key after key in turn. */
function keyed(keys: number, perKey: number): NewMessage[] {
  return Array.from({ length: keys * perKey }, (_, index) => ({
    kind: 'test.kind',
    payload: { index },
    orderingKey: `key-${index % keys}`,
  }));
}

/** The held run a drain would offer after claiming `result`'s rows as one run of `key-0`. */
function heldRunOf(result: ClaimResult): HeldRun {
  const first = result.claimed[0]!;
  const last = result.claimed.at(-1)!;
  return {
    orderingKey: 'key-0',
    firstId: first.id,
    lastId: last.id,
    lastToken: last.claimToken,
  };
}

describe('a claim continuing a run the drain holds', () => {
  const driver = useDriver('node-pg', database);

  /** One key of 20 messages, its first five claimed as one run. */
  async function firstRunClaimed() {
    const { outbox, store } = await freshOutbox(driver);
    const keys = await outbox.enqueue(driver.db, keyed(1, 20));
    await walkKeysNext(store);
    const first = await store.claim(claimRequest({ limit: 5, keyShare: 5 }));
    expect(first.claimed.map((message) => message.key)).toEqual(keys.slice(0, 5));
    return { store, keys, first, held: heldRunOf(first) };
  }

  it("takes the rows right behind the held run's last, and says which row they come behind", async () => {
    const { store, keys, held } = await firstRunClaimed();
    // Without the held run, the key's head is out on a live lease: nothing behind it may go.
    const none = await store.claim(claimRequest({ limit: 5, keyShare: 5 }));
    expect(none.claimed).toHaveLength(0);
    const next = await store.claim(claimRequest({ limit: 5, keyShare: 5, holding: [held] }));
    expect(next.claimed.map((message) => message.key)).toEqual(keys.slice(5, 10));
    expect(next.claimed.map((message) => message.behind)).toEqual([
      held.lastId,
      undefined,
      undefined,
      undefined,
      undefined,
    ]);
    // The run grows claim by claim, each time behind the last row taken so far.
    const third = await store.claim(
      claimRequest({ limit: 5, keyShare: 5, holding: [{ ...held, ...lastOf(next) }] }),
    );
    expect(third.claimed.map((message) => message.key)).toEqual(keys.slice(10, 15));
    expect(third.claimed[0]?.behind).toBe(next.claimed.at(-1)?.id);
  });

  it("continues nothing behind a row not claimed under the token given, of another key, or a run that does not hold the key's head", async () => {
    const { store, first, held } = await firstRunClaimed();
    const offers: HeldRun[] = [
      { ...held, lastToken: crypto.randomUUID() },
      { ...held, orderingKey: 'key-1' },
      // The key's first unfinished row is not within the run offered (an older row came back,
      // as a replay or redrive brings one): nothing may pass it.
      { ...held, firstId: first.claimed[1]!.id },
    ];
    for (const offer of offers) {
      const result = await store.claim(claimRequest({ limit: 5, keyShare: 5, holding: [offer] }));
      expect(result.claimed, JSON.stringify(offer)).toHaveLength(0);
    }
  });

  it("starts again at the key's head once the held run's lease has run out", async () => {
    const { store, keys, first, held } = await firstRunClaimed();
    const afterLease = new Date(first.claimed[0]!.createdAt.getTime() + 10 * 60_000);
    const result = await store.claim(
      claimRequest({ now: afterLease, limit: 5, keyShare: 5, holding: [held] }),
    );
    expect(result.claimed.map((message) => message.key)).toEqual(keys.slice(0, 5));
    expect(result.claimed.every((message) => message.behind === undefined)).toBe(true);
  });
});

/** The `lastId` and `lastToken` of a held run that ends at `result`'s last row. */
function lastOf(result: ClaimResult): Pick<HeldRun, 'lastId' | 'lastToken'> {
  const last = result.claimed.at(-1)!;
  return { lastId: last.id, lastToken: last.claimToken };
}

/** A store whose claims are remembered with what each came back with. */
function claimsRecorded(store: OutboxStore) {
  const results: ClaimResult[] = [];
  const recorded: OutboxStore = {
    settleFits: (requests) => store.settleFits(requests),
    async claim(request) {
      const result = await store.claim(request);
      results.push(result);
      return result;
    },
    settle: (requests, now, options) => store.settle(requests, now, options),
  };
  const continued = () =>
    results.flatMap((result) => result.claimed.filter((message) => message.behind !== undefined));
  return { store: recorded, results, continued };
}

describe.each(DRIVER_NAMES)('a drain continuing its runs through %s', (driverName) => {
  const driver = useDriver(driverName, database);

  it('claims the next run of a deep key while the last is out, and sends each row only after the one before it was delivered', async () => {
    const { outbox, store } = await freshOutbox(driver);
    const keys = await outbox.enqueue(driver.db, keyed(2, 30));
    const inFlight = new Map<string, number>();
    let mostInFlightOfOneKey = 0;
    const sender = recordingSender(async (message) => {
      const key = message.orderingKey!;
      inFlight.set(key, (inFlight.get(key) ?? 0) + 1);
      mostInFlightOfOneKey = Math.max(mostInFlightOfOneKey, inFlight.get(key)!);
      await sleep(2);
      inFlight.set(key, inFlight.get(key)! - 1);
    });
    const claims = claimsRecorded(store);
    const report = await drainOnce({
      store: claims.store,
      senders: { 'test.kind': sender.send },
      batchSize: 10,
      concurrency: 2,
    });
    expect(report).toMatchObject({ delivered: 60, released: 0, stale: 0 });
    expect(claims.continued().length).toBeGreaterThan(0);
    expect(mostInFlightOfOneKey).toBe(1);
    for (const key of ['key-0', 'key-1']) {
      const ofKey = keys.filter((_, index) => `key-${index % 2}` === key);
      expect(
        sender.calls.filter((call) => call.orderingKey === key).map((call) => call.key),
      ).toEqual(ofKey);
    }
  });

  it('sends nothing of a continuing run when the row it comes behind fails, and releases it unspent', async () => {
    const { outbox, store } = await freshOutbox(driver);
    const keys = await outbox.enqueue(driver.db, keyed(1, 20));
    const failing = keys[4]!; // the first run's last row
    const sender = recordingSender(async (message) => {
      if (message.key !== failing) return;
      // Out long enough for the claim ahead to continue the run behind it.
      await sleep(50);
      throw new RetryableDeliveryError('receiver busy');
    });
    const claims = claimsRecorded(store);
    const report = await drainOnce({
      store: claims.store,
      senders: { 'test.kind': sender.send },
      batchSize: 5,
      concurrency: 1,
      backoff: { baseMs: 60_000, capMs: 60_000 },
    });
    // The drain's first claim leaves keyed rows out and takes nothing; the run is the next's.
    const failingId = claims.results
      .find((result) => result.claimed.length > 0)!
      .claimed.at(-1)!.id;
    expect(claims.continued().map((message) => message.behind)).toContain(failingId);
    expect(sender.calls.map((call) => call.key)).toEqual(keys.slice(0, 5));
    expect(report).toMatchObject({ delivered: 4, retried: 1, sends: 5 });
    // What came behind the failed row went back unsent: its attempts are not spent.
    for (const key of keys.slice(5, 10)) {
      expect((await store.getByKey(key))?.attempts, key).toBe(0);
    }
  });
});
