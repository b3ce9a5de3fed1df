/**
 * Delivered history as settle writes it: one row of delivered_groups per settle group, its
 * messages in one array (migrations/0005_history_by_settle_group.sql).
 */

/**
 * A SELECT that makes history groups from `source`, rows in the columns of `delivered_message`
 * plus `delivered_at`, one group per value of `groupBy` (one group of all rows, or none when
 * there are none, without it). Each group gets its size, its ids as a multirange (exact), its
 * keys' range from smallest to largest, and its messages as one array. The key range compares
 * keys as text in the "C" collation, which orders them as uuid does (PostgreSQL has no min or
 * max for uuid). Settle uses it, and so do the tests and the bench that write history directly.
 */
export function historyGroupsFrom(quotedSchema: string, source: string, groupBy?: string): string {
  return `SELECT max(delivered_at), count(*), range_agg(int8range(id, id, '[]')),
          ${quotedSchema}.message_key_range(min(key::text COLLATE "C")::uuid,
            max(key::text COLLATE "C")::uuid, '[]'),
          array_agg(ROW(id, key, kind, payload, ordering_key, attempts, max_attempts, due_at,
            last_error, created_at)::${quotedSchema}.delivered_message)
        FROM ${source}
        ${groupBy === undefined ? 'HAVING count(*) > 0' : `GROUP BY ${groupBy}`}`;
}
