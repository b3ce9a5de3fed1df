/**
 * While no message with an ordering key is unfinished, due claims leave the walk of the keys out
 * (src/store/due-claim.ts), a store's first claim too: each says whether a keyed message is
 * unfinished now (an empty one too), the claim after one that does walks the keys again, and a
 * short claim that left one out is partial, so the drain claims again instead of stopping. The
 * statement is the same over every driver; these run over node-pg.
 */
import { describe, expect, it } from 'vitest';
import { drainOnce } from '../../src/core/drain.js';
import type { OutboxStore } from '../../src/core/outbox-store.js';
import type { Outbox } from '../../src/outbox.js';
import { useTestDatabase } from '../support/database.js';
import {
  claimRequest,
  freshOutbox,
  recordingSender,
  walkKeysNext,
  watchedExecutor,
} from '../support/drain-fixtures.js';
import { type Driver, useDriver } from '../support/drivers.js';

const database = useTestDatabase();

async function enqueueUnkeyed(outbox: Outbox, driver: Driver, count: number): Promise<void> {
  await outbox.enqueue(
    driver.db,
    Array.from({ length: count }, (_, n) => ({ kind: 'test.kind', payload: { n } })),
  );
}

/** A store that notes the text of every statement it runs in `texts`. */
function recordingStore(outbox: Outbox, driver: Driver, texts: string[]): OutboxStore {
  return outbox.store(watchedExecutor(driver.db, (text) => texts.push(text)));
}

/**
 * For each statement noted since the last read, whether it walked the keys (the recursive CTE
 * claim-walk.ts names walk); the notes are taken.
 */
const walked = (texts: string[]) => texts.splice(0).map((text) => /\bwalk\(step/.test(text));

/** One keyed message, due before every row enqueued so far. */
async function enqueueKeyedEarly(outbox: Outbox, driver: Driver): Promise<string> {
  const [key] = await outbox.enqueue(driver.db, [
    {
      kind: 'test.kind',
      payload: { keyed: true },
      orderingKey: 'order-1',
      dueAt: new Date(Date.now() - 60_000),
    },
  ]);
  return key!;
}

describe('claims while no ordering key is unfinished', () => {
  const driver = useDriver('node-pg', database);

  it('take a keyed message enqueued meanwhile on the claim after the next', async () => {
    const { outbox, store } = await freshOutbox(driver);
    await enqueueUnkeyed(outbox, driver, 30);
    const keysOf = async () =>
      (await store.claim(claimRequest({ limit: 10 }))).claimed.map((m) => m.orderingKey);
    // The first claim leaves keyed rows out, and finds none waiting.
    expect(await keysOf()).toEqual(Array(10).fill(null));
    // Due first, but the next claim leaves keyed rows out; it says one waits now.
    await enqueueKeyedEarly(outbox, driver);
    expect(await keysOf()).toEqual(Array(10).fill(null));
    // So this one walks the keys, and the keyed message, due first, comes first.
    expect(await keysOf()).toEqual(['order-1', ...Array(9).fill(null)]);
  });

  it('a claim that left keyed rows out and came back short is partial only when one waits', async () => {
    const { outbox, store } = await freshOutbox(driver);
    const claim = async () => {
      const result = await store.claim(claimRequest({ limit: 10 }));
      return [result.claimed.length, result.partial];
    };
    // Short, or empty, with no keyed message anywhere: nothing more was due.
    await enqueueUnkeyed(outbox, driver, 5);
    expect(await claim()).toEqual([5, undefined]);
    expect(await claim()).toEqual([0, undefined]);
    await enqueueUnkeyed(outbox, driver, 12);
    expect(await claim()).toEqual([10, undefined]);
    expect(await claim()).toEqual([2, undefined]);
    // Short while a keyed message waits: partial, and the next claim walks the keys and takes it.
    await enqueueUnkeyed(outbox, driver, 10);
    expect(await claim()).toEqual([10, undefined]);
    await enqueueUnkeyed(outbox, driver, 2);
    const key = await enqueueKeyedEarly(outbox, driver);
    expect(await claim()).toEqual([2, true]);
    const last = await store.claim(claimRequest({ limit: 10 }));
    expect([last.claimed.map((m) => m.key), last.partial]).toEqual([[key], undefined]);
  });

  it('an empty claim that left keyed rows out says whether one waits', async () => {
    const { outbox } = await freshOutbox(driver);
    const key = await enqueueKeyedEarly(outbox, driver);
    // A store's first claim leaves keyed rows out: it takes nothing, and is partial.
    const store = outbox.store(driver.db);
    const first = await store.claim(claimRequest({ limit: 10 }));
    expect([first.claimed.length, first.partial]).toEqual([0, true]);
    const second = await store.claim(claimRequest({ limit: 10 }));
    expect([second.claimed.map((m) => m.key), second.partial]).toEqual([[key], undefined]);
  });

  it("a store's first claim says whether the walk is needed even when it takes nothing; a later keyed claim that takes nothing keeps it", async () => {
    const { outbox, schema } = await freshOutbox(driver);
    const texts: string[] = [];
    const store = recordingStore(outbox, driver, texts);
    const key = await enqueueKeyedEarly(outbox, driver);
    await walkKeysNext(store);
    expect((await store.claim(claimRequest({ limit: 10 }))).claimed.map((m) => m.key)).toEqual([
      key,
    ]);
    // Its delivery takes it out of messages, as a settle does.
    await database.pool.query(`DELETE FROM ${schema}.messages`);
    // A keyed claim that takes nothing does not say whether a key is unfinished: it keeps the
    // walk (its rows skip the copy that answering when empty costs).
    expect((await store.claim(claimRequest({ limit: 10 }))).claimed).toEqual([]);
    await store.claim(claimRequest({ limit: 10 }));
    expect(walked(texts)).toEqual([false, true, true, true]);
    // A new store over the schema starts with the walk (the last claim said nothing else), and
    // its first claim, empty, says no key is unfinished: the next leaves the walk out.
    const next = recordingStore(outbox, driver, texts);
    expect((await next.claim(claimRequest({ limit: 10 }))).claimed).toEqual([]);
    await next.claim(claimRequest({ limit: 10 }));
    expect(walked(texts)).toEqual([true, false]);
  });

  it('a new store starts from what the last claim over its schema said', async () => {
    const { outbox, store } = await freshOutbox(driver);
    const key = await enqueueKeyedEarly(outbox, driver);
    // No claim over the schema yet: the first leaves keyed rows out, and says one waits.
    expect((await store.claim(claimRequest({ limit: 10 }))).partial).toBe(true);
    // A store built after it (as a cron invocation builds one per tick) walks at once.
    const next = outbox.store(driver.db);
    const first = await next.claim(claimRequest({ limit: 10 }));
    expect([first.claimed.map((m) => m.key), first.partial]).toEqual([[key], undefined]);
  });

  it('a drain with nothing due makes one claim, without the walk of the keys', async () => {
    const { outbox } = await freshOutbox(driver);
    const texts: string[] = [];
    const store = recordingStore(outbox, driver, texts);
    const report = await drainOnce({ store, senders: { 'test.kind': recordingSender().send } });
    expect([report.batches, report.roundTrips, report.stopReason]).toEqual([1, 1, 'empty']);
    expect(walked(texts)).toEqual([false]);
  });

  it('a drain delivers a keyed message enqueued after a full claim it could not send', async () => {
    const { outbox, store, schema } = await freshOutbox(driver);
    // A full claim of messages whose final attempt's lease ran out: it sets them all aside as
    // dead, so nothing of it is left to record, and the claim after it starts with nothing
    // unrecorded. It leaves keyed rows out and finds nothing; only because it is partial does
    // the drain claim once more, walking the keys, instead of stopping.
    await enqueueUnkeyed(outbox, driver, 10);
    await database.pool.query(
      `UPDATE ${schema}.messages SET state = 'claimed', attempts = max_attempts,
         claim_token = gen_random_uuid(), claimed_at = now() - interval '2 minutes',
         lease_expires_at = now() - interval '1 minute'`,
    );
    let keyed: Promise<string> | undefined;
    const claiming: OutboxStore = {
      settleFits: (requests) => store.settleFits(requests),
      async claim(request) {
        const result = await store.claim(request);
        keyed ??= enqueueKeyedEarly(outbox, driver);
        await keyed;
        return result;
      },
      settle: (requests, now) => store.settle(requests, now),
    };
    const sender = recordingSender();
    const report = await drainOnce({
      store: claiming,
      senders: { 'test.kind': sender.send },
      batchSize: 10,
      prefetch: false,
    });
    expect([report.dead, report.delivered]).toEqual([10, 1]);
    expect(sender.delivered).toEqual([await keyed]);
  });
});
