import { describe, expect, it } from 'vitest';
import { drainOnce } from '../../src/core/drain.js';
import type { DrainResume } from '../../src/core/drain-settings.js';
import { RetryableDeliveryError } from '../../src/core/errors.js';
import type { ClaimedMessage } from '../../src/core/outbox-store.js';
import type { NewMessage } from '../../src/index.js';
import { positionOf, positionText } from '../../src/store/claim-position.js';
import { useTestDatabase } from '../support/database.js';
import {
  claimRequest,
  freshOutbox,
  recordingSender,
  settleDelivered,
  sleep,
  walkKeysNext,
} from '../support/drain-fixtures.js';
import { DRIVER_NAMES, useDriver } from '../support/drivers.js';

const database = useTestDatabase();

/** `perKey` messages for each of `keys` ordering keys, enqueued key after key in turn. */
function keyed(keys: number, perKey: number, name = 'key'): NewMessage[] {
  return Array.from({ length: keys * perKey }, (_, index) => ({
    kind: 'test.kind',
    payload: { index },
    orderingKey: `${name}-${index % keys}`,
  }));
}

/** The claimed rows' ordering keys, each with how many rows of it the claim took. */
function rowsPerKey(claimed: readonly ClaimedMessage[]): Map<string | null, number> {
  const counts = new Map<string | null, number>();
  for (const message of claimed) {
    counts.set(message.orderingKey, (counts.get(message.orderingKey) ?? 0) + 1);
  }
  return counts;
}

describe('the claim of ordering keys as runs', () => {
  const driver = useDriver('node-pg', database);

  /** Sets the schema's first message aside as dead, as a claim does when its attempts run out. */
  const setFirstDead = (schema: string) =>
    database.pool.query(
      `UPDATE ${schema}.messages SET state = 'dead', dead_at = now(), attempts = 1
       WHERE id = (SELECT min(id) FROM ${schema}.messages)`,
    );

  it("takes each key's head and the rows right behind it, a share per key before any key's second", async () => {
    const { outbox, store } = await freshOutbox(driver);
    const keys = await outbox.enqueue(driver.db, keyed(4, 10));
    await walkKeysNext(store);
    const result = await store.claim(claimRequest({ limit: 12, keyShare: 3 }));
    expect([...rowsPerKey(result.claimed).values()]).toEqual([3, 3, 3, 3]);
    // A key's rows are its first, in id order, queued one after another in turns.
    const ofKey = (n: number) => keys.filter((_, index) => index % 4 === n);
    for (let n = 0; n < 4; n++) {
      const taken = result.claimed.filter((message) => message.orderingKey === `key-${n}`);
      expect(taken.map((message) => message.key)).toEqual(ofKey(n).slice(0, 3));
    }
    expect(result.claimed.slice(0, 4).map((message) => message.key)).toEqual(
      [0, 1, 2, 3].map((n) => ofKey(n)[0]),
    );
  });

  it('lets one key alone fill the claim, and more of every key once each has had its share', async () => {
    const { outbox, store } = await freshOutbox(driver);
    await outbox.enqueue(driver.db, keyed(1, 50, 'one'));
    await walkKeysNext(store);
    const alone = await store.claim(claimRequest({ limit: 40, keyShare: 4 }));
    expect(alone.claimed).toHaveLength(40);
    const { outbox: second, store: secondStore } = await freshOutbox(driver);
    await second.enqueue(driver.db, keyed(3, 20));
    await walkKeysNext(secondStore);
    // Shares of 4 in turns: 4 each, 4 each again, then the last 6 to the keys in walk order.
    const few = await secondStore.claim(claimRequest({ limit: 30, keyShare: 4 }));
    expect([...rowsPerKey(few.claimed).values()]).toEqual([12, 10, 8]);
  });

  it('after a walk its keys filled at a share each, takes first shares only, says a short one is partial, and walks whole after it', async () => {
    const { outbox, store } = await freshOutbox(driver);
    await outbox.enqueue(driver.db, keyed(4, 10));
    await walkKeysNext(store);
    // Four keys at a share of 2 fill a claim of 8.
    const first = await store.claim(claimRequest({ limit: 8, keyShare: 2 }));
    expect([...rowsPerKey(first.claimed).values()]).toEqual([2, 2, 2, 2]);
    await settleDelivered(store, first.claimed);
    // Asked for more than four shares, the next walk takes a share of each key and no second,
    // and, short, says it looked at only some of what was due.
    const shares = await store.claim(claimRequest({ limit: 12, keyShare: 2 }));
    expect([...rowsPerKey(shares.claimed).values()]).toEqual([2, 2, 2, 2]);
    expect(shares.partial).toBe(true);
    await settleDelivered(store, shares.claimed);
    // The walk after it is whole: second shares where the first fall short.
    const whole = await store.claim(claimRequest({ limit: 12, keyShare: 2 }));
    expect(whole.claimed).toHaveLength(12);
    expect(whole.partial).toBeUndefined();
  });

  it('walks whole after a walk that gave a key more than its share, however many keys it took', async () => {
    const { outbox, store } = await freshOutbox(driver);
    // Nine keys of one message each, and one deep key.
    await outbox.enqueue(driver.db, [...keyed(9, 1, 'short'), ...keyed(1, 40, 'deep')]);
    await walkKeysNext(store);
    // Ten keys at a share of 2 would fill a claim of 20, but the nine have one each: the deep
    // key's second shares fill it.
    const first = await store.claim(claimRequest({ limit: 20, keyShare: 2 }));
    expect(rowsPerKey(first.claimed).get('deep-0')).toBe(11);
    await settleDelivered(store, first.claimed);
    const next = await store.claim(claimRequest({ limit: 20, keyShare: 2 }));
    expect(Object.fromEntries(rowsPerKey(next.claimed))).toEqual({ 'deep-0': 20 });
  });

  it('merges unkeyed rows in due order with the runs, and one deep key takes no more than its share', async () => {
    const { outbox, store } = await freshOutbox(driver);
    await outbox.enqueue(driver.db, keyed(1, 500, 'deep'));
    await outbox.enqueue(
      driver.db,
      Array.from({ length: 30 }, (_, index) => ({ kind: 'test.kind', payload: { index } })),
    );
    await walkKeysNext(store);
    const result = await store.claim(claimRequest({ limit: 40, keyShare: 5 }));
    expect(Object.fromEntries(rowsPerKey(result.claimed))).toEqual({ null: 30, 'deep-0': 10 });
    // The unkeyed rows' cursor is the last of them; keyed rows do not move it.
    const lastUnkeyed = result.claimed.filter((message) => message.orderingKey === null).at(-1);
    expect(positionOf(result.resumeAt).cursor?.id).toBe(lastUnkeyed?.id);
  });

  it('takes nothing behind a head another transaction holds, and nothing behind a head out on a live lease', async () => {
    const { outbox, store, schema } = await freshOutbox(driver);
    await outbox.enqueue(driver.db, keyed(2, 5));
    const client = await database.pool.connect();
    try {
      await client.query('BEGIN');
      // Lock key-0's head as another claim in flight would.
      await client.query(
        `SELECT id FROM ${schema}.messages WHERE ordering_key = 'key-0' ORDER BY id LIMIT 1 FOR UPDATE`,
      );
      await walkKeysNext(store);
      const result = await store.claim(claimRequest({ limit: 10, keyShare: 5 }));
      expect(Object.fromEntries(rowsPerKey(result.claimed))).toEqual({ 'key-1': 5 });
    } finally {
      await client.query('ROLLBACK');
      client.release();
    }
    const again = await store.claim(claimRequest({ limit: 10, keyShare: 5 }));
    expect(Object.fromEntries(rowsPerKey(again.claimed))).toEqual({ 'key-0': 5 });
    // Every head is out now: a claim finds nothing, although eight rows behind them are due.
    const none = await store.claim(claimRequest({ limit: 10, keyShare: 5 }));
    expect(none.claimed).toHaveLength(0);
  });

  it('ends a run before a row not yet due, of a kind it has no sender for, or whose attempts are spent', async () => {
    const { outbox, store, schema } = await freshOutbox(driver);
    const now = new Date(Date.now() + 1000);
    const [a1, a2, , b1, b2, , c1] = await outbox.enqueue(driver.db, [
      { kind: 'test.kind', payload: {}, orderingKey: 'a' },
      { kind: 'test.kind', payload: {}, orderingKey: 'a' },
      { kind: 'test.kind', payload: {}, orderingKey: 'a', delayMs: 60_000 },
      { kind: 'test.kind', payload: {}, orderingKey: 'b' },
      { kind: 'test.kind', payload: {}, orderingKey: 'b', maxAttempts: 1 },
      { kind: 'test.kind', payload: {}, orderingKey: 'b' },
      { kind: 'test.kind', payload: {}, orderingKey: 'c' },
      { kind: 'test.kind', payload: {}, orderingKey: 'c' },
    ]);
    // b2's attempt is spent (its drain died holding it), c2 is of a kind this drain cannot send.
    await database.pool.query(
      `UPDATE ${schema}.messages SET attempts = 1 WHERE ordering_key = 'b' AND max_attempts = 1`,
    );
    await database.pool.query(
      `UPDATE ${schema}.messages SET kind = 'other.kind'
       WHERE id = (SELECT max(id) FROM ${schema}.messages WHERE ordering_key = 'c')`,
    );
    await walkKeysNext(store);
    const result = await store.claim(claimRequest({ now, limit: 20, keyShare: 20 }));
    expect(result.claimed.map((message) => message.key)).toEqual([a1, b1, c1, a2]);
    expect(result.exhausted.map((message) => message.key)).toEqual([b2]);
  });

  it("counts only a run's claimable rows against the limit, so the keys after it still get theirs", async () => {
    const { outbox, store } = await freshOutbox(driver);
    const [a1, , , b1, b2] = await outbox.enqueue(driver.db, [
      { kind: 'test.kind', payload: {}, orderingKey: 'a' },
      { kind: 'test.kind', payload: {}, orderingKey: 'a', delayMs: 60_000 },
      { kind: 'test.kind', payload: {}, orderingKey: 'a' },
      { kind: 'test.kind', payload: {}, orderingKey: 'b' },
      { kind: 'test.kind', payload: {}, orderingKey: 'b' },
    ]);
    await walkKeysNext(store);
    // a2 is not due: a's run is a1 alone, and b's two rows fill the claim.
    const result = await store.claim(claimRequest({ limit: 3, keyShare: 3 }));
    expect(result.claimed.map((message) => message.key)).toEqual([a1, b1, b2]);
  });

  it("ends a run at its key's last row: a short key's run takes none of the next key's rows", async () => {
    const { outbox, store } = await freshOutbox(driver);
    // The follower scan reads on in (key, id) order, so behind a1 it meets b's rows next.
    const keys = await outbox.enqueue(driver.db, [
      { kind: 'test.kind', payload: {}, orderingKey: 'a' },
      ...keyed(1, 3, 'b'),
    ]);
    await walkKeysNext(store);
    const result = await store.claim(claimRequest({ limit: 4, keyShare: 3 }));
    expect(result.claimed.map((message) => message.key)).toEqual(keys);
  });

  it("takes for a kick no row whose key's head is unfinished", async () => {
    const { outbox, store } = await freshOutbox(driver);
    const keys = await outbox.enqueue(driver.db, keyed(1, 3, 'kicked'));
    const behind = await store.claim(claimRequest({ keys: [keys[1]!, keys[2]!] }));
    expect(behind.claimed).toHaveLength(0);
    const head = await store.claim(claimRequest({ keys: [keys[0]!, keys[1]!] }));
    expect(head.claimed.map((message) => message.key)).toEqual([keys[0]]);
  });

  it('says the claims after a walk go one at a time while keyed messages wait, even when it took only unkeyed rows', async () => {
    const { outbox, store } = await freshOutbox(driver);
    // Unkeyed messages due first fill the claim; the keys' runs, due after them, are cut.
    await outbox.enqueue(
      driver.db,
      Array.from({ length: 10 }, (_, index) => ({ kind: 'test.kind', payload: { index } })),
    );
    await outbox.enqueue(driver.db, keyed(3, 4));
    await walkKeysNext(store);
    const unkeyedOnly = await store.claim(claimRequest({ limit: 10, keyShare: 2 }));
    expect(Object.fromEntries(rowsPerKey(unkeyedOnly.claimed))).toEqual({ null: 10 });
    // The next claim walks the keys again: a second one beside it would start at the same key
    // and find the first's runs locked (over a mixed backlog, a third of the claims beside came
    // back with nothing of their keys, and every connection they took planned the walk anew).
    expect(unkeyedOnly.oneAtATime).toBe(true);
    const runs = await store.claim(
      claimRequest({ limit: 10, keyShare: 2, resumeAt: unkeyedOnly.resumeAt }),
    );
    expect(Object.fromEntries(rowsPerKey(runs.claimed))).toEqual({
      'key-0': 4,
      'key-1': 4,
      'key-2': 2,
    });
  });

  it("beside the runs' claim, takes unkeyed rows only, leaves the next claim walking, and keeps the walk where the runs' claim left it", async () => {
    const { outbox, store } = await freshOutbox(driver);
    // Keys' heads due first, the unkeyed messages after them.
    await outbox.enqueue(driver.db, keyed(6, 2));
    await outbox.enqueue(
      driver.db,
      Array.from({ length: 6 }, (_, index) => ({ kind: 'test.kind', payload: { index } })),
    );
    await walkKeysNext(store);
    const request = { limit: 4, keyShare: 2, backlog: true };
    const walk = await store.claim(claimRequest(request));
    expect([...rowsPerKey(walk.claimed).keys()]).toEqual(['key-0', 'key-1']);
    // Made beside that walk (so from the position it started at), the claim takes no keyed row,
    // though key-2's head is due before every unkeyed row.
    const beside = await store.claim(claimRequest({ ...request, unkeyedOnly: true }));
    expect(Object.fromEntries(rowsPerKey(beside.claimed))).toEqual({ null: 4 });
    expect(beside.oneAtATime).toBeUndefined();
    // It lands last, so the drain resumes where it says: the walk goes on after key-1, where
    // the walk beside it stopped, not from the first key its request started at.
    expect(positionOf(beside.resumeAt).walkAfter).toBe('key-1');
    const next = await store.claim(claimRequest({ ...request, resumeAt: beside.resumeAt }));
    expect(next.oneAtATime).toBe(true);
    expect([...rowsPerKey(next.claimed).keys()]).toEqual(['key-2', 'key-3']);
  });

  it('starts its walk after the key it is given, and comes round to the first keys last', async () => {
    const { outbox, store } = await freshOutbox(driver);
    await outbox.enqueue(driver.db, keyed(6, 2));
    await walkKeysNext(store);
    const first = await store.claim(claimRequest({ limit: 4, keyShare: 2 }));
    expect([...rowsPerKey(first.claimed).keys()]).toEqual(['key-0', 'key-1']);
    expect(positionOf(first.resumeAt).walkAfter).toBe('key-1');
    expect(first.oneAtATime).toBe(true);
    const next = await store.claim(
      claimRequest({ limit: 4, keyShare: 2, resumeAt: first.resumeAt }),
    );
    expect([...rowsPerKey(next.claimed).keys()]).toEqual(['key-2', 'key-3']);
    // From key-4: key-5, then round from key-0 (key-0 to key-3 are out) to key-4 itself.
    const fromKey4 = positionText({ walkAfter: 'key-4', fromCursor: 0 });
    const round = await store.claim(claimRequest({ limit: 8, keyShare: 2, resumeAt: fromKey4 }));
    expect(new Set(rowsPerKey(round.claimed).keys())).toEqual(new Set(['key-4', 'key-5']));
    expect(positionOf(round.resumeAt).walkAfter).toBe('key-4');
  });

  it('says it caught up only when every key was visited, every run taken to its end and every due unkeyed row', async () => {
    const { outbox, store } = await freshOutbox(driver);
    await outbox.enqueue(driver.db, keyed(2, 5));
    await walkKeysNext(store);
    // Two keys fill the claim with all they have, and no third key lies beyond them.
    const both = await store.claim(claimRequest({ limit: 10, keyShare: 5 }));
    expect([both.claimed.length, both.caughtUp]).toEqual([10, true]);
    // Runs that go on behind what the claim took: a claim continuing them would find more.
    const { outbox: deep, store: deepStore } = await freshOutbox(driver);
    await deep.enqueue(driver.db, keyed(2, 20));
    await walkKeysNext(deepStore);
    const deeper = await deepStore.claim(claimRequest({ limit: 10, keyShare: 5 }));
    expect([deeper.claimed.length, deeper.caughtUp]).toEqual([10, undefined]);
    const { outbox: more, store: moreStore } = await freshOutbox(driver);
    await more.enqueue(driver.db, keyed(3, 20));
    await walkKeysNext(moreStore);
    const third = await moreStore.claim(claimRequest({ limit: 10, keyShare: 5 }));
    expect(third.claimed).toHaveLength(10);
    expect(third.caughtUp).toBeUndefined();
    // Unkeyed rows past the limit are due as well.
    await more.enqueue(
      driver.db,
      Array.from({ length: 12 }, (_, index) => ({ kind: 'test.kind', payload: { index } })),
    );
    const unkeyed = await moreStore.claim(claimRequest({ limit: 10, keyShare: 5 }));
    expect(unkeyed.caughtUp).toBeUndefined();
  });

  it("skips a dead head's key unless dead heads do not block, then starts at the row behind it", async () => {
    const { outbox, store, schema } = await freshOutbox(driver);
    const [, second] = await outbox.enqueue(driver.db, keyed(1, 3));
    await setFirstDead(schema);
    const blocked = await store.claim(claimRequest({ limit: 10 }));
    expect(blocked.claimed).toHaveLength(0);
    const skipping = await store.claim(claimRequest({ limit: 10, deadHeadBlocks: false }));
    expect(skipping.claimed.map((message) => message.key)[0]).toBe(second);
    expect(skipping.claimed).toHaveLength(2);
    await settleDelivered(store, skipping.claimed);
  });

  it('walks on past a key left with dead messages only, where dead heads do not block', async () => {
    const { outbox, store, schema } = await freshOutbox(driver);
    const [, next] = await outbox.enqueue(driver.db, keyed(2, 1));
    // key-0's one message is dead: with dead heads not blocking, key-0 has nothing in its order,
    // and the walk must still go on to key-1.
    await setFirstDead(schema);
    await walkKeysNext(store);
    const claim = await store.claim(claimRequest({ limit: 10, deadHeadBlocks: false }));
    expect(claim.claimed.map((message) => message.key)).toEqual([next]);
  });
});

describe.each(DRIVER_NAMES)('a drain sending runs through %s', (driverName) => {
  const driver = useDriver(driverName, database);

  it('sends a run in order in one lane at a time, and after a failure sends nothing behind it', async () => {
    const { outbox, store } = await freshOutbox(driver);
    const keys = await outbox.enqueue(driver.db, keyed(2, 6));
    const failing = keys[4]; // key-0's third
    let inFlightOfKey0 = 0;
    let mostInFlightOfKey0 = 0;
    const sender = recordingSender(async (message) => {
      if (message.orderingKey === 'key-0') {
        inFlightOfKey0 += 1;
        mostInFlightOfKey0 = Math.max(mostInFlightOfKey0, inFlightOfKey0);
        await sleep(5);
        inFlightOfKey0 -= 1;
      }
      if (message.key === failing) throw new RetryableDeliveryError('receiver busy');
    });
    const report = await drainOnce({
      store,
      senders: { 'test.kind': sender.send },
      batchSize: 12,
      concurrency: 4,
      backoff: { baseMs: 60_000, capMs: 60_000 },
    });
    expect(mostInFlightOfKey0).toBe(1);
    // key-0: two delivered, the third failed (due again in a minute), the three behind it went
    // back unsent; key-1 delivered whole.
    const key0 = keys.filter((_, index) => index % 2 === 0);
    const key1 = keys.filter((_, index) => index % 2 === 1);
    expect(
      sender.calls.filter((call) => call.orderingKey === 'key-0').map((call) => call.key),
    ).toEqual(key0.slice(0, 3));
    expect(sender.delivered.filter((key) => key1.includes(key))).toEqual(key1);
    expect(report).toMatchObject({ delivered: 8, retried: 1, sends: 9 });
    const stats = await store.stats(new Date());
    expect(stats.pending).toBe(4);
    // Released unsent: their attempts are not spent.
    for (const key of key0.slice(3)) {
      expect((await store.getByKey(key))?.attempts).toBe(0);
    }
  });

  it('drains that share where they left off serve the keys in turn; one of its own starts at the first key', async () => {
    const { outbox, store } = await freshOutbox(driver);
    await outbox.enqueue(driver.db, keyed(6, 6));
    // Each drain stops after 4 messages: two runs of two (the batch over the lanes).
    const drainFour = async (resume?: DrainResume) => {
      const sender = recordingSender();
      const options = { store, senders: { 'test.kind': sender.send }, batchSize: 4 };
      await drainOnce({ ...options, concurrency: 2, maxMessages: 4, resume });
      return [...new Set(sender.calls.map((call) => call.orderingKey))].sort();
    };
    const shared: DrainResume = {};
    expect(await drainFour(shared)).toEqual(['key-0', 'key-1']);
    // A drain of its own walks from the first key, as every drain did before.
    expect(await drainFour()).toEqual(['key-0', 'key-1']);
    expect(await drainFour(shared)).toEqual(['key-2', 'key-3']);
    expect(await drainFour(shared)).toEqual(['key-4', 'key-5']);
    // Round again, to the two messages key-0 and key-1 have left.
    expect(await drainFour(shared)).toEqual(['key-0', 'key-1']);
  });
});
