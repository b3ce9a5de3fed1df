/**
 * The store's operator reads and actions the dashboard's lists use: filters, the head that holds
 * a message back, and retry and discard of selected rows or of all that match, bounded.
 */
import { describe, expect, it } from 'vitest';
import { drainOnce } from '../../src/core/drain.js';
import { PermanentDeliveryError } from '../../src/core/errors.js';
import { isValidationError } from '../../src/index.js';
import { useTestDatabase } from '../support/database.js';
import { fakeClock, freshOutbox } from '../support/drain-fixtures.js';
import { DRIVER_NAMES, useDriver } from '../support/drivers.js';

const database = useTestDatabase();
const HOUR = 60 * 60 * 1000;

describe.each(DRIVER_NAMES)('operator actions through %s', (driverName) => {
  const driver = useDriver(driverName, database);

  /** Enqueues one message per error text and drains them dead; returns their ids in order. */
  async function deadWith(errors: string[], orderingKey?: string) {
    const { outbox, store, schema } = await freshOutbox(driver);
    const clock = fakeClock();
    const keys = await outbox.enqueue(
      driver.db,
      errors.map((error) => ({ kind: 'test.kind', payload: { error }, orderingKey })),
    );
    // One message at a time: with an ordering key, only the head is ever claimable.
    await drainOnce({
      store,
      clock,
      deadHeadBlocks: false,
      senders: {
        'test.kind': async (message) => {
          throw new PermanentDeliveryError((message.payload as { error: string }).error);
        },
      },
    });
    const { rows } = await database.pool.query<{ id: string; state: string }>(
      `SELECT id::text, state FROM ${schema}.messages WHERE key = ANY($1::uuid[]) ORDER BY id`,
      [keys],
    );
    expect(rows.map((row) => row.state)).toEqual(errors.map(() => 'dead'));
    return { outbox, store, schema, clock, ids: rows.map((row) => row.id) };
  }

  it('filters a list by error text in any case, taking % and _ literally, and by ordering key', async () => {
    const { store, ids } = await deadWith(['HTTP 503 from hooks', 'timeout 100%', 'http 410 gone']);
    const listed = async (filter: object) =>
      (await store.list({ state: 'dead', ...filter })).messages.map((m) => m.id).sort();
    expect(await listed({ error: 'http' })).toEqual([ids[0], ids[2]].sort());
    expect(await listed({ error: '100%' })).toEqual([ids[1]]);
    expect(await listed({ error: '1_0' })).toEqual([]);
    expect(await listed({ orderingKey: 'nobody' })).toEqual([]);
    expect(await listed({ kind: 'test.kind', error: '410' })).toEqual([ids[2]]);
  });

  it('filters a list by time range: from inclusive, until exclusive', async () => {
    const { store, ids, schema } = await deadWith(['a', 'b']);
    await database.pool.query(
      `UPDATE ${schema}.messages SET dead_at = '2025-01-01T10:00:00Z' WHERE id = $1`,
      [ids[0]],
    );
    await database.pool.query(
      `UPDATE ${schema}.messages SET dead_at = '2025-01-01T11:00:00Z' WHERE id = $1`,
      [ids[1]],
    );
    const listed = async (from?: string, until?: string) =>
      (
        await store.list({
          state: 'dead',
          from: from ? new Date(from) : undefined,
          until: until ? new Date(until) : undefined,
        })
      ).messages.map((m) => m.id);
    expect(await listed('2025-01-01T10:00:00Z', '2025-01-01T11:00:00Z')).toEqual([ids[0]]);
    expect(await listed('2025-01-01T10:00:01Z')).toEqual([ids[1]]);
    expect(await listed(undefined, '2025-01-01T10:00:00Z')).toEqual([]);
  });

  it('names the head that holds a pending message back, and why: pending, claimed or dead', async () => {
    const { outbox, store, schema, ids } = await deadWith(['head died'], 'customer-7');
    const [deadHead] = ids;
    const [behindDead] = await outbox.enqueue(driver.db, {
      kind: 'test.kind',
      payload: {},
      orderingKey: 'customer-7',
    });
    const [freeHead, behindPending] = await outbox.enqueue(driver.db, [
      { kind: 'test.kind', payload: {}, orderingKey: 'customer-8', delayMs: HOUR },
      { kind: 'test.kind', payload: {}, orderingKey: 'customer-8' },
    ]);
    const [alone] = await outbox.enqueue(driver.db, { kind: 'test.kind', payload: {} });
    const idOf = async (key: string) =>
      (
        await database.pool.query<{ id: string }>(
          `SELECT id::text FROM ${schema}.messages WHERE key = $1`,
          [key],
        )
      ).rows[0]!.id;
    const held = [await idOf(behindDead!), await idOf(behindPending!)];
    const heads = await store.holdingHeads([...held, await idOf(freeHead!), await idOf(alone!)]);
    expect([...heads.keys()].sort()).toEqual(held.sort());
    expect(heads.get(held[0]!)).toMatchObject({ id: deadHead, state: 'dead' });
    expect(heads.get(held[1]!)).toMatchObject({ id: await idOf(freeHead!), state: 'pending' });
    expect(heads.get(held[1]!)?.key).toBe(freeHead);
    // Where drains let dead heads pass, the message behind the dead one is held by nothing.
    const passing = await store.holdingHeads(held, { deadHeadBlocks: false });
    expect([...passing.keys()]).toEqual([held[1]!]);

    await database.pool.query(
      `UPDATE ${schema}.messages SET state = 'claimed', claim_token = gen_random_uuid(), attempts = 1,
         claimed_at = now(), lease_expires_at = now() + interval '1 minute' WHERE key = $1`,
      [freeHead],
    );
    expect((await store.holdingHeads([held[1]!])).get(held[1]!)?.state).toBe('claimed');
    expect(await store.holdingHeads([])).toEqual(new Map());
  });

  it('retries and discards only the selected rows still in the state the operator saw', async () => {
    const { store, clock, ids, schema } = await deadWith(['a', 'b', 'c']);
    const [first, second, third] = ids as [string, string, string];
    expect(await store.retryMessages([first, second], 'dead', clock.now())).toHaveLength(2);
    // Already pending: a second retry as dead changes nothing.
    expect(await store.retryMessages([first], 'dead', clock.now())).toEqual([]);
    expect(await store.discardMessages([second, third], 'dead')).toEqual([third]);
    const { rows } = await database.pool.query<{ id: string; state: string; attempts: number }>(
      `SELECT id::text, state, attempts FROM ${schema}.messages ORDER BY id`,
    );
    expect(rows).toEqual([
      { id: first, state: 'pending', attempts: 0 },
      { id: second, state: 'pending', attempts: 0 },
    ]);
    // A pending row waiting out a backoff is made due now, its attempts kept.
    await database.pool.query(
      `UPDATE ${schema}.messages SET attempts = 2, due_at = $2 WHERE id = $1`,
      [first, new Date(clock.now().getTime() + HOUR)],
    );
    expect(await store.retryMessages([first], 'pending', clock.now())).toEqual([first]);
    const after = await database.pool.query(
      `SELECT attempts, due_at FROM ${schema}.messages WHERE id = $1`,
      [first],
    );
    expect(after.rows[0]).toEqual({ attempts: 2, due_at: clock.now() });
  });

  it('retries or discards at most the limit of all that match, and refuses a claimed state', async () => {
    const { store, clock, ids } = await deadWith(['503 a', '503 b', '503 c', '410 d']);
    expect(await store.retryMatching({ state: 'dead', error: '503' }, 2, clock.now())).toBe(2);
    expect(await store.retryMatching({ state: 'dead', error: '503' }, 2, clock.now())).toBe(1);
    expect(await store.retryMatching({ state: 'dead', error: '503' }, 2, clock.now())).toBe(0);
    expect((await store.list({ state: 'dead' })).messages.map((m) => m.id)).toEqual([ids[3]]);
    expect(await store.discardMatching({ state: 'pending', kind: 'other.kind' }, 10)).toBe(0);
    expect(await store.discardMatching({ state: 'pending', error: '503 B' }, 10)).toBe(1);
    for (const attempt of [
      () => store.retryMatching({ state: 'claimed' }, 10, clock.now()),
      () => store.discardMessages([ids[0]!], 'delivered'),
      () => store.discardMatching({ state: 'dead' }, 0),
    ]) {
      const error = await attempt().catch((caught: unknown) => caught);
      expect(isValidationError(error)).toBe(true);
    }
    expect((await store.list({ state: 'dead' })).messages).toHaveLength(1);
  });
});
