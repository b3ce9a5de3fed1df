/**
 * One settle writes one group of delivered history, so a settle stays within a group's size: the
 * drain writes at most MAX_SETTLE_OUTCOMES outcomes and about MAX_SETTLE_PAYLOAD_BYTES of
 * delivered payload per settle, and the store refuses more outcomes than that. A group's id and
 * key bounds come from the settle's deliveries, so they may also cover a delivery that turned out
 * stale; reads look inside the group and find each message where it is.
 */
import { describe, expect, it } from 'vitest';
import { drainOnce } from '../../src/core/drain.js';
import type { JsonValue } from '../../src/core/message.js';
import type { OutboxStore, SettleRequest } from '../../src/core/outbox-store.js';
import { delivered } from '../../src/core/settlement.js';
import type { Outbox } from '../../src/outbox.js';
import {
  MAX_SETTLE_OUTCOMES,
  MAX_SETTLE_PAYLOAD_BYTES,
  placed,
} from '../../src/store/settle-size.js';
import { useTestDatabase } from '../support/database.js';
import { claimRequest, freshOutbox, recordingSender } from '../support/drain-fixtures.js';
import { useDriver } from '../support/drivers.js';

const database = useTestDatabase();
const driver = useDriver('node-pg', database);

/**
 * The store, with every settle written down, and the first held until `release` is called: the
 * drain keeps sending meanwhile, so the outcomes after it pile up as they do behind a slow write.
 */
function heldStore(store: OutboxStore) {
  const settles: SettleRequest[][] = [];
  let release!: () => void;
  const released = new Promise<void>((resolve) => {
    release = resolve;
  });
  const held: OutboxStore = {
    settleFits: (requests) => store.settleFits(requests),
    claim: (request) => store.claim(request),
    async settle(requests, now) {
      settles.push([...requests]);
      if (settles.length === 1) await released;
      return store.settle(requests, now);
    },
  };
  return { settles, release, store: held };
}

async function enqueueMany(outbox: Outbox, count: number, payload: (n: number) => JsonValue) {
  for (let start = 0; start < count; start += 1_000) {
    const size = Math.min(1_000, count - start);
    await outbox.enqueue(
      driver.db,
      Array.from({ length: size }, (_, n) => ({ kind: 'test.kind', payload: payload(start + n) })),
    );
  }
}

async function groupSizes(schema: string): Promise<number[]> {
  const { rows } = await database.pool.query<{ size: number }>(
    `SELECT size FROM ${schema}.delivered_groups ORDER BY id`,
  );
  return rows.map((row) => row.size);
}

/** What a drain of `outbox` settled, with its first settle held until every message was sent. */
async function drainBehindASlowSettle(store: OutboxStore, expected: number) {
  const held = heldStore(store);
  const sender = recordingSender(() => {
    if (sender.calls.length === expected) held.release();
  });
  const report = await drainOnce({
    store: held.store,
    senders: { 'test.kind': sender.send },
    batchSize: 1_000,
  });
  return { report, settles: held.settles };
}

describe('settle size', () => {
  it('a drain writes outcomes that piled up in settles of at most 1,000, one history group each', async () => {
    const { outbox, store, schema } = await freshOutbox(driver);
    await enqueueMany(outbox, 3_500, (n) => ({ n }));
    const { report, settles } = await drainBehindASlowSettle(store, 3_500);
    expect(report).toMatchObject({ delivered: 3_500, stale: 0 });
    const sizes = settles.map((requests) => requests.length);
    // More than a settle's worth waited behind the first write.
    expect(sizes.slice(1).filter((size) => size === MAX_SETTLE_OUTCOMES).length).toBeGreaterThan(1);
    expect(Math.max(...sizes)).toBe(MAX_SETTLE_OUTCOMES);
    expect(await groupSizes(schema)).toEqual(sizes);
    expect((await store.stats(new Date())).delivered).toBe(3_500);
  });

  it('a drain writes large payloads in settles of about 8 MB of payload at most', async () => {
    const { outbox, store, schema } = await freshOutbox(driver);
    // About 200 kB of JSON each, which compresses poorly: 80 of them are about 16 MB.
    await enqueueMany(outbox, 80, (n) => ({
      n,
      noise: Array.from({ length: 6_000 }, () => crypto.randomUUID()).join(''),
    }));
    const { report, settles } = await drainBehindASlowSettle(store, 80);
    expect(report).toMatchObject({ delivered: 80, stale: 0 });
    expect(settles.length).toBeGreaterThan(2);
    for (const requests of settles) {
      const sizes = requests.map(({ message }) => placed(message).payloadBytes);
      const total = sizes.reduce((sum, bytes) => sum + bytes, 0);
      // The message that passes the bound goes in, so a settle is over it by less than one.
      expect(total - sizes.at(-1)!).toBeLessThan(MAX_SETTLE_PAYLOAD_BYTES);
      expect(Math.min(...sizes)).toBeGreaterThan(100_000);
    }
    expect(await groupSizes(schema)).toEqual(settles.map((requests) => requests.length));
  });

  it('the store refuses more than 1,000 outcomes in one settle and writes nothing', async () => {
    const { outbox, store } = await freshOutbox(driver);
    await enqueueMany(outbox, MAX_SETTLE_OUTCOMES + 1, (n) => ({ n }));
    const requests: SettleRequest[] = [];
    for (const limit of [MAX_SETTLE_OUTCOMES, 1]) {
      const { claimed } = await store.claim(claimRequest({ limit }));
      requests.push(...claimed.map((message) => ({ message, settlement: delivered() })));
    }
    await expect(store.settle(requests, new Date())).rejects.toThrow(
      /at most 1000 outcomes at once, got 1001/,
    );
    expect(await store.stats(new Date())).toMatchObject({
      claimed: MAX_SETTLE_OUTCOMES + 1,
      delivered: 0,
    });
    expect(await store.settle(requests.slice(1), new Date())).toMatchObject({ stale: [] });
  });

  it('the store says how many outcomes fit in one settle, and refuses a message its claim did not return', async () => {
    const { outbox, store } = await freshOutbox(driver);
    await enqueueMany(outbox, 3, (n) => ({ n }));
    const { claimed } = await store.claim(claimRequest({ limit: 3 }));
    const requests = claimed.map((message) => ({ message, settlement: delivered() }));
    expect(store.settleFits(requests)).toBe(3);
    // Fields the drain knows of, without the row's place the claim put beside them.
    const { id, key, claimToken } = claimed[1]!;
    const stranger = { message: { id, key, claimToken }, settlement: delivered() };
    expect(() => store.settleFits([requests[0]!, stranger])).toThrow(
      `settle: message ${id} did not come from this store's claim`,
    );
    await expect(store.settle([requests[0]!, stranger], new Date())).rejects.toThrow(TypeError);
    expect(await store.stats(new Date())).toMatchObject({ claimed: 3, delivered: 0 });
  });
});

describe('a history group whose bounds cover a stale delivery', () => {
  it('finds, lists and discards each message in the group that holds it', async () => {
    const { outbox, store, schema } = await freshOutbox(driver);
    await outbox.enqueue(
      driver.db,
      [1, 2, 3].map((n) => ({ kind: 'test.kind', payload: { n } })),
    );
    const { claimed } = await store.claim(claimRequest());
    const [first, middle, last] = claimed;
    // Another drain took the middle row over (its lease passed): its delivery here is stale.
    const otherToken = crypto.randomUUID();
    const { rows: taken } = await database.pool.query<{ row_id: string }>(
      `UPDATE ${schema}.messages SET claim_token = $2 WHERE id = $1 RETURNING ctid AS row_id`,
      [middle!.id, otherToken],
    );
    const settled = await store.settle(
      claimed.map((message) => ({ message, settlement: delivered() })),
      new Date(),
    );
    expect(settled.stale).toEqual([middle!.id]);
    // The other drain delivers it in a group of its own (its claim left the row where it is now).
    const takenOver = { ...placed(middle!), claimToken: otherToken, rowId: taken[0]!.row_id };
    const late = await store.settle([{ message: takenOver, settlement: delivered() }], new Date());
    expect(late.stale).toEqual([]);

    const { rows } = await database.pool.query<{ size: number; covers: boolean }>(
      `SELECT size, ids @> $1::bigint AND keys @> $2::uuid AS covers
       FROM ${schema}.delivered_groups ORDER BY id`,
      [middle!.id, middle!.key],
    );
    // The first group's bounds cover the stale delivery it does not hold.
    expect(rows).toEqual([
      { size: 2, covers: true },
      { size: 1, covers: true },
    ]);
    for (const message of [first!, middle!, last!]) {
      expect(await store.get(message.id)).toMatchObject({ key: message.key, state: 'delivered' });
      expect(await store.getByKey(message.key)).toMatchObject({ id: message.id });
    }
    const page = await store.list({ state: 'delivered' });
    expect(page.messages.map((message) => message.id).sort()).toEqual(
      [first!.id, middle!.id, last!.id].sort(),
    );
    expect(await store.discard(middle!.id)).toBe('delivered');
    expect(await groupSizes(schema)).toEqual([2, 0]);
    expect(await store.get(middle!.id)).toBeNull();
    expect(await store.get(first!.id)).toMatchObject({ state: 'delivered' });
  });
});
