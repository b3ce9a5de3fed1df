import { describe, expect, it } from 'vitest';
import { drainOnce } from '../../src/core/drain.js';
import { purgeOnce } from '../../src/core/purge.js';
import { useTestDatabase } from '../support/database.js';
import { freshOutbox } from '../support/drain-fixtures.js';
import { DRIVER_NAMES, useDriver } from '../support/drivers.js';
import { waitFor } from '../support/wait-for.js';

const database = useTestDatabase();

interface TableBytes {
  /** Heap and TOAST of messages and of history, without their indexes. */
  heap: number;
  /** The same with their indexes. */
  total: number;
}

async function tableBytes(schema: string): Promise<TableBytes> {
  const { rows } = await database.pool.query<{ heap: string; total: string }>(
    `SELECT pg_table_size('${schema}.messages') + pg_table_size('${schema}.delivered_groups') AS heap,
       pg_total_relation_size('${schema}.messages')
       + pg_total_relation_size('${schema}.delivered_groups') AS total`,
  );
  return { heap: Number(rows[0]!.heap), total: Number(rows[0]!.total) };
}

describe.each(DRIVER_NAMES)('purge space through %s', (driverName) => {
  const driver = useDriver(driverName, database);

  it('a purge that deleted rows leaves their space reusable: cycles do not grow the tables', async () => {
    const { outbox, store, schema } = await freshOutbox(driver);
    const cycle = async () => {
      await outbox.enqueue(
        driver.db,
        Array.from({ length: 1000 }, (_, index) => ({ kind: 'test.kind', payload: { index } })),
      );
      const drained = await drainOnce({
        store,
        senders: { 'test.kind': async () => {} },
        batchSize: 100,
      });
      expect(drained.delivered).toBe(1000);
      // delivered_at < now is strict: look a second ahead so this cycle's rows go too.
      const purged = await purgeOnce({
        store,
        deliveredOlderThanMs: 0,
        clock: { now: () => new Date(Date.now() + 1000) },
      });
      expect(purged.deliveredDeleted).toBe(1000);
      return tableBytes(schema);
    };
    const sizes: TableBytes[] = [];
    for (let i = 0; i < 10; i++) sizes.push(await cycle());
    const { rows } = await database.pool.query<{ version: number }>(
      "SELECT current_setting('server_version_num')::int AS version",
    );
    if (rows[0]!.version >= 180000) {
      // Without the vacuum every cycle adds its rows' size again. With it, the pages the purge
      // freed are refilled by the next cycle, the indexes' too: the second vacuum recycles the
      // index pages the first deleted (with one vacuum they held two cycles' pages: cycle 10 was
      // about 2x cycle 1). So the tables stay about the size of one cycle.
      expect(sizes[9]!.heap).toBeLessThan(sizes[0]!.heap * 1.5);
      expect(sizes[9]!.total).toBeLessThan(sizes[0]!.total * 1.5);
      return;
    }
    // Before 18, whether a vacuum can free what the purge deleted depends on every other
    // transaction open at that moment, and here other test files run beside this one: on 14 the
    // total was seen at 3.24x cycle 2, and once the heap alone at 4.6x cycle 1, while the same
    // file alone kept the heap at one cycle's 73,728 bytes. (Before 16, nbtree also checks a
    // deleted index page against every database's transactions.) What the purge itself does is
    // held instead: it vacuumed both tables in every cycle, or autovacuum was on the table when
    // it came (SKIP_LOCKED); statistics reach the view a moment later on 14.
    await waitFor('a vacuum of both tables in every cycle', async () => {
      const { rows: counts } = await database.pool.query<{ vacuums: string }>(
        `SELECT min(vacuum_count + autovacuum_count) AS vacuums FROM pg_stat_user_tables
         WHERE schemaname = $1 AND relname IN ('messages', 'delivered_groups')`,
        [schema],
      );
      return Number(counts[0]!.vacuums) >= sizes.length;
    });
  });

  it('a purge that deleted nothing runs no VACUUM', async () => {
    const { store } = await freshOutbox(driver);
    const report = await purgeOnce({ store });
    // The per-minute counters' delete and one delete each for delivered and dead rows.
    expect(report).toEqual({ deliveredDeleted: 0, deadDeleted: 0, statements: 3 });
  });
});
