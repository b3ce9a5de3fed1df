import { describe, expect, it } from 'vitest';
import {
  EXACT_HISTORY_COUNT_LIMIT,
  operatorStatements,
} from '../../src/store/operator-statements.js';
import { useTestDatabase } from '../support/database.js';
import { freshOutbox } from '../support/drain-fixtures.js';
import { useDriver } from '../support/drivers.js';
import { waitFor } from '../support/wait-for.js';

const database = useTestDatabase();
const driver = useDriver('node-pg', database);

/**
 * Runs a write and asks its session to hand its statistics to the server as soon as it is idle
 * (PostgreSQL 15+ otherwise batches them for up to ten seconds or more; 14 has no such function
 * and sends them at the end of the transaction).
 */
async function writeAndFlushStats(text: string, params: unknown[] = []): Promise<void> {
  const client = await database.pool.connect();
  try {
    await client.query(text, params);
    await client.query('SELECT pg_stat_force_next_flush()').catch(() => {});
  } finally {
    client.release();
  }
}

/** Delivered history as settle leaves it, written directly: `count` rows after id `from`. */
async function insertHistory(schema: string, from: number, count: number): Promise<void> {
  await writeAndFlushStats(
    `INSERT INTO ${schema}.delivered_messages
       (id, key, kind, payload, attempts, max_attempts, due_at, created_at, delivered_at)
     SELECT g, gen_random_uuid(), 'test.kind', '{}'::jsonb, 1, 10, now(), now(), now()
     FROM generate_series($1::bigint, $2::bigint) AS g`,
    [from + 1, from + count],
  );
}

describe('stats over a large delivered history', () => {
  it('counts history exactly up to the limit', async () => {
    const { schema, store } = await freshOutbox(driver);
    await insertHistory(schema, 0, EXACT_HISTORY_COUNT_LIMIT);
    expect((await store.stats(new Date())).delivered).toBe(EXACT_HISTORY_COUNT_LIMIT);
  });

  it('beyond the limit reports the live-row statistic, following inserts and deletes', async () => {
    const { schema, store } = await freshOutbox(driver);
    await insertHistory(schema, 0, EXACT_HISTORY_COUNT_LIMIT + 2_500);
    await waitFor('stats to show the inserted history', async () => {
      return (await store.stats(new Date())).delivered === EXACT_HISTORY_COUNT_LIMIT + 2_500;
    });
    await writeAndFlushStats(`DELETE FROM ${schema}.delivered_messages WHERE id <= 1000`);
    await waitFor('stats to show the deletes', async () => {
      return (await store.stats(new Date())).delivered === EXACT_HISTORY_COUNT_LIMIT + 1_500;
    });
  });

  it('reads at most one row past the limit from history, however many it holds', async () => {
    const { schema } = await freshOutbox(driver);
    await insertHistory(schema, 0, 3 * EXACT_HISTORY_COUNT_LIMIT);
    const statement = operatorStatements(`"${schema}"`).readStats;
    const { rows } = await database.pool.query(`EXPLAIN (ANALYZE, FORMAT JSON) ${statement}`, [
      new Date(),
    ]);
    const historyScans: { 'Actual Rows': number; 'Actual Loops': number }[] = [];
    const walk = (node: Record<string, unknown>) => {
      if (node['Relation Name'] === 'delivered_messages') historyScans.push(node as never);
      for (const child of (node.Plans as Record<string, unknown>[] | undefined) ?? []) walk(child);
    };
    walk(rows[0]['QUERY PLAN'][0].Plan);
    expect(historyScans).toHaveLength(1);
    const [scan] = historyScans;
    expect(scan!['Actual Rows'] * scan!['Actual Loops']).toBe(EXACT_HISTORY_COUNT_LIMIT + 1);
  });

  it('after a statistics reset falls back to the table size from the last ANALYZE', async () => {
    const { schema, store } = await freshOutbox(driver);
    await insertHistory(schema, 0, EXACT_HISTORY_COUNT_LIMIT + 700);
    await database.pool.query(`ANALYZE ${schema}.delivered_messages`);
    await database.pool.query(
      `SELECT pg_stat_reset_single_table_counters('${schema}.delivered_messages'::regclass)`,
    );
    // PostgreSQL 14 applies a reset asynchronously; later versions at once.
    await waitFor('stats to fall back to reltuples', async () => {
      return (await store.stats(new Date())).delivered === EXACT_HISTORY_COUNT_LIMIT + 700;
    });
  });

  it('never reports fewer than the limit once the count passed it, whatever the statistics say', async () => {
    const { schema, store } = await freshOutbox(driver);
    await insertHistory(schema, 0, EXACT_HISTORY_COUNT_LIMIT + 10);
    // Never analyzed, counters reset: reltuples is -1 and the live-row statistic 0.
    await database.pool.query(
      `SELECT pg_stat_reset_single_table_counters('${schema}.delivered_messages'::regclass)`,
    );
    await waitFor('stats to report the floor', async () => {
      return (await store.stats(new Date())).delivered === EXACT_HISTORY_COUNT_LIMIT + 1;
    });
  });
});
