/**
 * While no message with an ordering key is unfinished, due claims leave the walk of the keys out
 * (src/store/due-claim.ts): each says whether a keyed message is unfinished now, the claim after
 * one that does walks the keys again, and a short claim that could have missed one is partial,
 * so the drain claims again instead of stopping. The statement is the same over every driver;
 * these run over node-pg.
 */
import { describe, expect, it } from 'vitest';
import { drainOnce } from '../../src/core/drain.js';
import type { OutboxStore } from '../../src/core/outbox-store.js';
import type { Outbox } from '../../src/outbox.js';
import { useTestDatabase } from '../support/database.js';
import { claimRequest, freshOutbox, recordingSender } from '../support/drain-fixtures.js';
import { type Driver, useDriver } from '../support/drivers.js';

const database = useTestDatabase();

async function enqueueUnkeyed(outbox: Outbox, driver: Driver, count: number): Promise<void> {
  await outbox.enqueue(
    driver.db,
    Array.from({ length: count }, (_, n) => ({ kind: 'test.kind', payload: { n } })),
  );
}

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
    // The first claim walks the keys and finds none.
    expect(await keysOf()).toEqual(Array(10).fill(null));
    // Due first, but the next claim leaves keyed rows out; it says one waits now.
    await enqueueKeyedEarly(outbox, driver);
    expect(await keysOf()).toEqual(Array(10).fill(null));
    // So this one walks the keys, and the keyed message, due first, comes first.
    expect(await keysOf()).toEqual(['order-1', ...Array(9).fill(null)]);
  });

  it('a claim that left keyed rows out and came back short is partial only when one may wait', async () => {
    const { outbox, store } = await freshOutbox(driver);
    await enqueueUnkeyed(outbox, driver, 5);
    const first = await store.claim(claimRequest({ limit: 10 }));
    expect([first.claimed.length, first.partial]).toEqual([5, undefined]);
    // Short, with no keyed message anywhere: nothing more was due.
    await enqueueUnkeyed(outbox, driver, 2);
    const second = await store.claim(claimRequest({ limit: 10 }));
    expect([second.claimed.length, second.partial]).toEqual([2, undefined]);
    // Short while a keyed message waits: partial, and the next claim takes it.
    await enqueueUnkeyed(outbox, driver, 2);
    const key = await enqueueKeyedEarly(outbox, driver);
    const third = await store.claim(claimRequest({ limit: 10 }));
    expect([third.claimed.length, third.partial]).toEqual([2, true]);
    const fourth = await store.claim(claimRequest({ limit: 10 }));
    expect([fourth.claimed.map((m) => m.key), fourth.partial]).toEqual([[key], undefined]);
    // Empty, but it walked the keys (the keyed message, out on its claim, is unfinished): not
    // partial, nothing more was due.
    const fifth = await store.claim(claimRequest({ limit: 10 }));
    expect(fifth).toEqual({ claimed: [], exhausted: [] });
  });

  it('a drain delivers a keyed message enqueued as it finishes the unkeyed ones', async () => {
    const { outbox, store } = await freshOutbox(driver);
    await enqueueUnkeyed(outbox, driver, 250);
    // Enqueued right after the first claim to come back short (it left keyed rows out and found
    // none): the drain's claim once all is recorded leaves them out too and finds nothing, and
    // only because it is partial does the drain claim once more, walking the keys.
    let keyed: Promise<string> | undefined;
    const claiming: OutboxStore = {
      async claim(request) {
        const result = await store.claim(request);
        if (result.claimed.length < request.limit) keyed ??= enqueueKeyedEarly(outbox, driver);
        await keyed;
        return result;
      },
      settle: (requests, now) => store.settle(requests, now),
    };
    const sender = recordingSender();
    const report = await drainOnce({
      store: claiming,
      senders: { 'test.kind': sender.send },
      batchSize: 100,
      prefetch: false,
    });
    expect(report.delivered).toBe(251);
    expect(sender.delivered).toContain(await keyed);
  });
});
