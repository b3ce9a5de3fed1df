import type pg from 'pg';
import { describe, expect, it } from 'vitest';
import {
  EXACT_HISTORY_GROUPS_LIMIT,
  operatorStatements,
} from '../../src/store/operator-statements.js';
import { useTestDatabase } from '../support/database.js';
import { freshOutbox } from '../support/drain-fixtures.js';
import { useDriver } from '../support/drivers.js';
import { insertHistory } from '../support/history.js';
import { waitFor } from '../support/wait-for.js';

const database = useTestDatabase();
const driver = useDriver('node-pg', database);

/**
 * Runs a write and asks its session to hand its statistics to the server as soon as it is idle
 * (PostgreSQL 15+ otherwise batches them for up to ten seconds or more; 14 has no such function
 * and sends them at the end of the transaction).
 */
async function writeAndFlushStats(write: (client: pg.PoolClient) => Promise<unknown>) {
  const client = await database.pool.connect();
  try {
    await write(client);
    await client.query('SELECT pg_stat_force_next_flush()').catch(() => {});
  } finally {
    client.release();
  }
}

/** Messages per group in these tests' history. */
const GROUP_SIZE = 3;

/**
 * Delivered history as settle leaves it, written directly: `groups` groups of
 * {@link GROUP_SIZE} messages, numbered after group `from`.
 */
async function insertHistoryGroups(schema: string, from: number, groups: number): Promise<void> {
  const source = `(SELECT g * ${GROUP_SIZE} + m AS id, gen_random_uuid() AS key,
      'test.kind' AS kind, '{}'::jsonb AS payload, NULL::text AS ordering_key, 1 AS attempts,
      10 AS max_attempts, now() AS due_at, NULL::text AS last_error, now() AS created_at,
      now() AS delivered_at
    FROM generate_series($1::bigint, $2::bigint) AS g, generate_series(0, ${GROUP_SIZE - 1}) AS m)
    history`;
  await writeAndFlushStats((client) =>
    insertHistory(client, schema, source, `id / ${GROUP_SIZE}`, [from + 1, from + groups]),
  );
}

const LIMIT = EXACT_HISTORY_GROUPS_LIMIT;

describe('stats over a large delivered history', () => {
  it('sums history exactly while it holds at most the limit of groups', async () => {
    const { schema, store } = await freshOutbox(driver);
    await insertHistoryGroups(schema, 0, LIMIT);
    expect((await store.stats(new Date())).delivered).toBe(LIMIT * GROUP_SIZE);
  });

  it('beyond the limit reports the live-row statistic times the mean group size, following inserts and deletes', async () => {
    const { schema, store } = await freshOutbox(driver);
    // The statistic follows this test's writes alone: history's own autovacuum settings start a
    // vacuum after these inserts, and a vacuum running across the delete can report a count from
    // before it, which no later write corrects (the likely cause of one timeout here, on
    // PostgreSQL 14 in CI).
    await database.pool.query(
      `ALTER TABLE ${schema}.delivered_groups SET (autovacuum_enabled = false)`,
    );
    await insertHistoryGroups(schema, 0, LIMIT + 2_500);
    await waitFor('stats to show the inserted history', async () => {
      return (await store.stats(new Date())).delivered === (LIMIT + 2_500) * GROUP_SIZE;
    });
    await writeAndFlushStats((client) =>
      client.query(
        `DELETE FROM ${schema}.delivered_groups WHERE lower(ids) <= ${1000 * GROUP_SIZE}`,
      ),
    );
    await waitFor('stats to show the deletes', async () => {
      return (await store.stats(new Date())).delivered === (LIMIT + 1_500) * GROUP_SIZE;
    });
  });

  it('reads at most one group past the limit from history, however many it holds', async () => {
    const { schema } = await freshOutbox(driver);
    await insertHistoryGroups(schema, 0, 3 * LIMIT);
    const statement = operatorStatements(`"${schema}"`).readStats;
    const { rows } = await database.pool.query(`EXPLAIN (ANALYZE, FORMAT JSON) ${statement}`, [
      new Date(),
      true,
    ]);
    const historyScans: { 'Actual Rows': number; 'Actual Loops': number }[] = [];
    const walk = (node: Record<string, unknown>) => {
      if (node['Relation Name'] === 'delivered_groups') historyScans.push(node as never);
      for (const child of (node.Plans as Record<string, unknown>[] | undefined) ?? []) walk(child);
    };
    walk(rows[0]['QUERY PLAN'][0].Plan);
    expect(historyScans).toHaveLength(1);
    const [scan] = historyScans;
    expect(scan!['Actual Rows'] * scan!['Actual Loops']).toBe(LIMIT + 1);
  });

  it('after a statistics reset falls back to the table size from the last ANALYZE', async () => {
    const { schema, store } = await freshOutbox(driver);
    await insertHistoryGroups(schema, 0, LIMIT + 700);
    await database.pool.query(`ANALYZE ${schema}.delivered_groups`);
    await database.pool.query(
      `SELECT pg_stat_reset_single_table_counters('${schema}.delivered_groups'::regclass)`,
    );
    // PostgreSQL 14 applies a reset asynchronously; later versions at once.
    await waitFor('stats to fall back to reltuples', async () => {
      return (await store.stats(new Date())).delivered === (LIMIT + 700) * GROUP_SIZE;
    });
  });

  it('never reports fewer than it summed once past the limit, whatever the statistics say', async () => {
    const { schema, store } = await freshOutbox(driver);
    await insertHistoryGroups(schema, 0, LIMIT + 10);
    // Never analyzed, counters reset: reltuples is -1 and the live-row statistic 0.
    await database.pool.query(
      `SELECT pg_stat_reset_single_table_counters('${schema}.delivered_groups'::regclass)`,
    );
    await waitFor('stats to report the floor', async () => {
      return (await store.stats(new Date())).delivered === (LIMIT + 1) * GROUP_SIZE;
    });
  });
});
