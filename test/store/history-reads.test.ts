import { describe, expect, it } from 'vitest';
import { useTestDatabase } from '../support/database.js';
import { freshOutbox } from '../support/drain-fixtures.js';
import { useDriver } from '../support/drivers.js';

const database = useTestDatabase();
const driver = useDriver('node-pg', database);

/**
 * History as settles leave it, in delivery order: ids mostly rising, every 50th delivered late
 * (a retry), so BRIN ranges hold out-of-order ids. Returns the ids in insertion order.
 */
async function insertHistoryOutOfOrder(schema: string, count: number): Promise<string[]> {
  const { rows } = await database.pool.query<{ id: string }>(
    `INSERT INTO ${schema}.delivered_messages
       (id, key, kind, payload, attempts, max_attempts, due_at, created_at, delivered_at)
     SELECT CASE WHEN g % 50 = 0 THEN 100000 + g * 10 - 49995 ELSE 100000 + g * 10 END,
       gen_random_uuid(),
       'test.kind', jsonb_build_object('g', g), 1, 10, now(), now(),
       now() - interval '1 hour' + g * interval '1 millisecond'
     FROM generate_series(1, $1::int) AS g
     ORDER BY g
     RETURNING id`,
    [count],
  );
  return rows.map((row) => String(row.id));
}

describe('reads of delivered history by id (BRIN) and key', () => {
  for (const summarized of [false, true]) {
    it(`finds every row by id and key, out-of-order ids included, ${summarized ? 'with' : 'before'} range summaries`, async () => {
      const { schema, store } = await freshOutbox(driver);
      const ids = await insertHistoryOutOfOrder(schema, 5_000);
      if (summarized) {
        await database.pool.query(
          `SELECT brin_summarize_new_values('${schema}.delivered_messages_id'::regclass)`,
        );
      }
      const sample = ids.filter((_, index) => index % 97 === 0 || (index + 1) % 50 === 0);
      for (const id of sample) {
        const record = await store.get(id);
        expect(record, `id ${id}`).toMatchObject({ id, state: 'delivered' });
        expect(await store.getByKey(record!.key)).toMatchObject({ id });
      }
      expect(await store.get('3')).toBeNull();
      expect(await store.discard(sample[1]!)).toBe('delivered');
      expect(await store.get(sample[1]!)).toBeNull();
    });
  }

  it('reads by id through the BRIN index once ranges are summarized, not by a scan', async () => {
    const { schema } = await freshOutbox(driver);
    const ids = await insertHistoryOutOfOrder(schema, 5_000);
    await database.pool.query(`ANALYZE ${schema}.delivered_messages`);
    await database.pool.query(
      `SELECT brin_summarize_new_values('${schema}.delivered_messages_id'::regclass)`,
    );
    const { rows } = await database.pool.query(
      `EXPLAIN (ANALYZE, COSTS OFF) SELECT * FROM ${schema}.delivered_messages WHERE id = $1`,
      [ids[2_500]],
    );
    const plan = rows.map((row) => row['QUERY PLAN']).join('\n');
    expect(plan).toContain('delivered_messages_id');
    // A handful of 16-page ranges, not the table's pages.
    const heapBlocks = Number(/Heap Blocks: lossy=(\d+)/.exec(plan)?.[1]);
    const { rows: pages } = await database.pool.query<{ relpages: number }>(
      `SELECT relpages FROM pg_class WHERE oid = '${schema}.delivered_messages'::regclass`,
    );
    expect(heapBlocks).toBeLessThanOrEqual(48);
    expect(pages[0]!.relpages).toBeGreaterThan(3 * heapBlocks);
  });
});
