import { describe, expect, it } from 'vitest';
import { drainOnce } from '../../src/core/drain.js';
import { PermanentDeliveryError } from '../../src/core/errors.js';
import { purgeOnce } from '../../src/core/purge.js';
import { isValidationError } from '../../src/index.js';
import { useTestDatabase } from '../support/database.js';
import {
  claimRequest,
  fakeClock,
  freshOutbox,
  recordingSender,
} from '../support/drain-fixtures.js';
import { DRIVER_NAMES, useDriver } from '../support/drivers.js';
import { regroupHistory } from '../support/history.js';

const database = useTestDatabase();
const HOUR = 60 * 60 * 1000;

describe.each(DRIVER_NAMES)('store operations through %s', (driverName) => {
  const driver = useDriver(driverName, database);

  it('stats count each state and measure lag from the oldest due message', async () => {
    const { outbox, store } = await freshOutbox(driver);
    const clock = fakeClock();
    await outbox.enqueue(driver.db, [
      { kind: 'test.kind', payload: { fate: 'deliver' } },
      { kind: 'test.kind', payload: { fate: 'die' } },
      { kind: 'test.kind', payload: { fate: 'wait' }, delayMs: HOUR },
    ]);
    const sender = recordingSender((message) => {
      if ((message.payload as { fate: string }).fate === 'die') {
        throw new PermanentDeliveryError('no');
      }
    });
    await drainOnce({ store, senders: { 'test.kind': sender.send }, clock });
    const [stillDue] = await outbox.enqueue(driver.db, { kind: 'test.kind', payload: {} });
    clock.advance(5000);
    const stats = await store.stats(clock.now());
    expect(stats).toMatchObject({ pending: 2, due: 1, claimed: 0, delivered: 1, dead: 1 });
    expect(stats.lagMs).toBeGreaterThanOrEqual(5000);
    expect(stats.lagMs).toBeLessThan(60_000);
    // Lag is measured from the oldest message due now: the one enqueued after the drain.
    const { rows } = await database.pool.query(
      `SELECT due_at FROM ${store.schema}.messages WHERE key = $1`,
      [stillDue],
    );
    expect(stats.oldestDueAt).toEqual(rows[0].due_at);
    expect(stats.lagMs).toBe(clock.now().getTime() - rows[0].due_at.getTime());
  });

  it('lists a state page by page with a cursor, each message exactly once', async () => {
    const { outbox, store } = await freshOutbox(driver);
    const keys = await outbox.enqueue(
      driver.db,
      Array.from({ length: 23 }, (_, index) => ({ kind: 'test.kind', payload: { index } })),
    );
    const seen: string[] = [];
    let cursor: string | undefined;
    let pages = 0;
    do {
      const page = await store.list({ state: 'pending', limit: 5, cursor });
      seen.push(...page.messages.map((m) => m.key));
      cursor = page.nextCursor ?? undefined;
      pages += 1;
    } while (cursor);
    expect(pages).toBe(5);
    expect(seen).toEqual(keys);

    await drainOnce({ store, senders: { 'test.kind': recordingSender().send } });
    const delivered: string[] = [];
    cursor = undefined;
    do {
      const page = await store.list({ state: 'delivered', limit: 10, cursor });
      delivered.push(...page.messages.map((m) => m.key));
      cursor = page.nextCursor ?? undefined;
    } while (cursor);
    expect(delivered.sort()).toEqual([...keys].sort());
  });

  it('rejects a bad list request naming the field', async () => {
    const { store } = await freshOutbox(driver);
    for (const [request, field] of [
      [{ state: 'sent' }, 'state'],
      [{ state: 'dead', limit: 0 }, 'limit'],
      [{ state: 'dead', cursor: 'not-a-cursor' }, 'cursor'],
    ] as const) {
      const error = await store.list(request as never).catch((e: unknown) => e);
      expect(isValidationError(error) && error.field).toBe(field);
    }
  });

  it('retries every dead message, and discards any message that is not mid-delivery', async () => {
    const { outbox, store } = await freshOutbox(driver);
    await outbox.enqueue(
      driver.db,
      Array.from({ length: 3 }, () => ({ kind: 'test.kind', payload: {} })),
    );
    const failing = recordingSender(() => {
      throw new PermanentDeliveryError('rejected');
    });
    await drainOnce({ store, senders: { 'test.kind': failing.send } });
    expect(await store.retryAllDead(new Date())).toBe(3);
    expect((await store.stats(new Date())).pending).toBe(3);

    const [first, second] = (await store.list({ state: 'pending' })).messages;
    expect(await store.discard(first!.id)).toBe('pending');
    expect(await store.get(first!.id)).toBeNull();
    // A claimed message may be in a sender right now: discarding it is refused.
    await store.claim(claimRequest());
    expect(await store.discard(second!.id)).toBeNull();
    expect((await store.get(second!.id))?.state).toBe('claimed');
  });

  it('moves a delivered message out of the hot table, and every read still finds it', async () => {
    const { outbox, store, schema } = await freshOutbox(driver);
    const keys = await outbox.enqueue(
      driver.db,
      Array.from({ length: 7 }, (_, index) => ({ kind: 'test.kind', payload: { index } })),
    );
    const clock = fakeClock();
    const sender = recordingSender();
    await drainOnce({ store, senders: { 'test.kind': sender.send }, clock });
    const { rows } = await database.pool.query(`SELECT count(*)::int AS n FROM ${schema}.messages`);
    expect(rows[0].n).toBe(0);

    const byKey = await store.getByKey(keys[3]!);
    expect(byKey).toMatchObject({
      key: keys[3],
      kind: 'test.kind',
      payload: { index: 3 },
      state: 'delivered',
      attempts: 1,
      dedupeKey: null,
      claimedAt: null,
      deadAt: null,
    });
    expect(byKey?.deliveredAt).toEqual(clock.now());
    expect(await store.get(byKey!.id)).toEqual(byKey);

    const listed: string[] = [];
    let cursor: string | undefined;
    do {
      const page = await store.list({ state: 'delivered', limit: 3, cursor });
      listed.push(...page.messages.map((m) => m.key));
      cursor = page.nextCursor ?? undefined;
    } while (cursor);
    expect(listed.sort()).toEqual([...keys].sort());
    expect(await store.stats(clock.now())).toMatchObject({ pending: 0, delivered: 7 });

    expect(await store.discard(byKey!.id)).toBe('delivered');
    expect(await store.getByKey(keys[3]!)).toBeNull();
  });

  it('keeps a dedupe key taken after delivery, until purge frees it', async () => {
    const { outbox, store } = await freshOutbox(driver);
    const dedupeKey = `${driverName}-once-only`;
    const [first] = await outbox.enqueue(driver.db, {
      kind: 'test.kind',
      payload: { n: 1 },
      dedupeKey,
    });
    const clock = fakeClock();
    const sender = recordingSender();
    await drainOnce({ store, senders: { 'test.kind': sender.send }, clock });
    expect(sender.calls).toHaveLength(1);
    expect(await store.getByKey(first!)).toMatchObject({ state: 'delivered', dedupeKey });

    const [again] = await outbox.enqueue(driver.db, {
      kind: 'test.kind',
      payload: { n: 2 },
      dedupeKey,
    });
    expect(again).toBe(first);
    await drainOnce({ store, senders: { 'test.kind': sender.send }, clock });
    expect(sender.calls).toHaveLength(1);

    clock.advance(HOUR);
    await purgeOnce({ store, clock, deliveredOlderThanMs: 0 });
    const [fresh] = await outbox.enqueue(driver.db, {
      kind: 'test.kind',
      payload: { n: 3 },
      dedupeKey,
    });
    expect(fresh).not.toBe(first);
  });

  it('purges old delivered and dead rows in bounded statements and keeps the rest', async () => {
    const { outbox, store, schema } = await freshOutbox(driver);
    await outbox.enqueue(
      driver.db,
      Array.from({ length: 30 }, (_, index) => ({ kind: 'test.kind', payload: { index } })),
    );
    const clock = fakeClock();
    const sender = recordingSender((message) => {
      if ((message.payload as { index: number }).index >= 25) throw new PermanentDeliveryError('x');
    });
    await drainOnce({ store, senders: { 'test.kind': sender.send }, clock });
    await outbox.enqueue(driver.db, { kind: 'test.kind', payload: { fresh: true } });
    // Ten of the delivered rows are recent; the rest are eight days old. Delivered messages
    // without a dedupe key live in delivered history, here a group each, as a trickle of
    // traffic leaves them.
    await regroupHistory(database.pool, schema, {
      groupBy: 'id',
      deliveredAt: `CASE WHEN (h.payload->>'index')::int >= 10
        THEN old.delivered_at - interval '8 days' ELSE old.delivered_at END`,
    });

    const bounded = await purgeOnce({
      store,
      clock,
      limit: 7,
      batchSize: 3,
      deadOlderThanMs: null,
    });
    // Three bounded deletes (3 + 3 + 1), one for the old per-minute counters, and the two
    // VACUUMs (with a transaction id taken between) that make the deleted rows' space reusable.
    expect(bounded).toEqual({ deliveredDeleted: 7, deadDeleted: 0, statements: 7 });

    clock.advance(31 * 24 * HOUR);
    const rest = await purgeOnce({
      store,
      clock,
      deliveredOlderThanMs: 7 * 24 * HOUR + 31 * 24 * HOUR,
    });
    expect(rest).toMatchObject({ deliveredDeleted: 8, deadDeleted: 5 });
    const stats = await store.stats(new Date());
    expect(stats).toMatchObject({ pending: 1, delivered: 10, dead: 0 });
  });

  /** A fresh outbox with `count` messages (payload `{ index }`) delivered into history. */
  async function deliveredOutbox(count: number) {
    const fresh = await freshOutbox(driver);
    await fresh.outbox.enqueue(
      driver.db,
      Array.from({ length: count }, (_, index) => ({ kind: 'test.kind', payload: { index } })),
    );
    await drainOnce({ store: fresh.store, senders: { 'test.kind': async () => {} } });
    return fresh;
  }

  it('purges groups that discards emptied without stopping short of older history', async () => {
    const { store, schema } = await deliveredOutbox(6);
    // Six old groups of one; an operator discarded the first four messages.
    await regroupHistory(database.pool, schema, {
      groupBy: 'id',
      deliveredAt: `old.delivered_at - interval '8 days' + h.id * interval '1 second'`,
    });
    const { rows } = await database.pool.query<{ id: string }>(
      `SELECT id FROM ${schema}.delivered_messages ORDER BY id LIMIT 4`,
    );
    for (const row of rows) expect(await store.discard(String(row.id))).toBe('delivered');
    const purged = await purgeOnce({ store, batchSize: 2, deadOlderThanMs: null });
    expect(purged.deliveredDeleted).toBe(2);
    const { rows: left } = await database.pool.query(
      `SELECT count(*)::int AS n FROM ${schema}.delivered_groups`,
    );
    expect(left).toEqual([{ n: 0 }]);
  });

  it('purges history a whole group at a time: a group larger than the limit still goes', async () => {
    const { store, schema } = await deliveredOutbox(12);
    // Two groups of six, both eight days old.
    await regroupHistory(database.pool, schema, {
      groupBy: `(payload->>'index')::int / 6`,
      deliveredAt: `old.delivered_at - interval '8 days'`,
    });
    const purged = await purgeOnce({ store, limit: 4, batchSize: 4, deadOlderThanMs: null });
    // The first group's six, past the limit of four; the second waits for the next purge.
    expect(purged.deliveredDeleted).toBe(6);
    expect((await store.stats(new Date())).delivered).toBe(6);
    expect(await purgeOnce({ store, deadOlderThanMs: null })).toMatchObject({
      deliveredDeleted: 6,
    });
    expect((await store.stats(new Date())).delivered).toBe(0);
  });
});
