/**
 * Delivered history written directly, in the groups settle makes (one row per group, its messages
 * in an array), for tests that need more history, or other groups, than a drain leaves.
 */
import type pg from 'pg';
import { insertHistoryGroups } from '../../src/store/history-groups.js';

/**
 * Appends the messages `source` (a parenthesised SELECT with an alias, giving the columns
 * {@link insertHistoryGroups} names) selects to history, one group per value of `groupBy`.
 */
export async function insertHistory(
  db: pg.Pool | pg.PoolClient,
  schema: string,
  source: string,
  groupBy: string,
  params: unknown[] = [],
): Promise<void> {
  await db.query(insertHistoryGroups(schema, source, groupBy), params);
}

/**
 * Writes all of history again in other groups: one per value of `groupBy` over its messages
 * (their columns, unprefixed), each message delivered at `deliveredAt` (an expression over the
 * message, alias h, and its old group, alias old). For a history as a trickle of traffic leaves
 * it (a group per message), or aged history.
 */
export async function regroupHistory(
  pool: pg.Pool,
  schema: string,
  options: { groupBy: string; deliveredAt?: string },
): Promise<void> {
  await pool.query(
    `WITH old AS (DELETE FROM ${schema}.delivered_groups RETURNING delivered_at, messages)
     ${insertHistoryGroups(
       schema,
       `(SELECT h.id, h.key, h.kind, h.payload, h.ordering_key, h.attempts, h.max_attempts,
           h.due_at, h.last_error, h.created_at,
           ${options.deliveredAt ?? 'old.delivered_at'} AS delivered_at
         FROM old CROSS JOIN LATERAL unnest(old.messages) h) regrouped`,
       options.groupBy,
     )}`,
  );
}
