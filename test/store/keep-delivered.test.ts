/**
 * `keepDelivered: false`: a delivered message is deleted at settle and kept nowhere but in the
 * per-minute counters, while everything else a settle records, and the dedupe-key promise,
 * stays as it is with history.
 */
import { describe, expect, it } from 'vitest';
import { drainOnce } from '../../src/core/drain.js';
import { RetryableDeliveryError } from '../../src/core/errors.js';
import { useTestDatabase } from '../support/database.js';
import { freshOutbox, recordingSender } from '../support/drain-fixtures.js';
import { DRIVER_NAMES, useDriver } from '../support/drivers.js';

const database = useTestDatabase();

describe.each(DRIVER_NAMES)('an outbox that keeps no delivered history, through %s', (name) => {
  const driver = useDriver(name, database);

  it('deletes delivered messages at settle, counts them, and still records every other outcome', async () => {
    const { outbox, store, schema } = await freshOutbox(driver, { keepDelivered: false });
    const [plain, failing, deduped] = await outbox.enqueue(driver.db, [
      { kind: 'test.kind', payload: { n: 1 } },
      { kind: 'test.kind', payload: { n: 2 } },
      { kind: 'test.kind', payload: { n: 3 }, dedupeKey: 'order-42/receipt' },
    ]);
    const sender = recordingSender((message) => {
      if (message.key === failing) throw new RetryableDeliveryError('503 from receiver');
    });
    const report = await drainOnce({ store, senders: { 'test.kind': sender.send } });
    expect(report).toMatchObject({ delivered: 2, retried: 1 });

    const { rows } = await database.pool.query<{ key: string; state: string }>(
      `SELECT key::text, state FROM ${schema}.all_messages ORDER BY id`,
    );
    // The plain delivery is gone; the retry waits; the deduplicated one keeps its key taken.
    expect(rows).toEqual([
      { key: failing, state: 'pending' },
      { key: deduped, state: 'delivered' },
    ]);
    expect(await store.getByKey(plain!)).toBeNull();
    const counts = await store.deliveryCounts(new Date(0));
    expect(counts.reduce((sum, minute) => sum + minute.delivered, 0)).toBe(2);
    // The dedupe key still answers with the stored message instead of a second one.
    const [again] = await outbox.enqueue(driver.db, {
      kind: 'test.kind',
      payload: { n: 3 },
      dedupeKey: 'order-42/receipt',
    });
    expect(again).toBe(deduped);
  });
});
