/**
 * Delivered history as settle writes it: one row of delivered_groups per settle group, its
 * messages in one array (migrations/0005_history_by_settle_group.sql).
 */

/**
 * An INSERT that appends history groups made from `source`, rows in the columns of
 * `delivered_message` (id, key, kind, payload, ordering_key, attempts, max_attempts, due_at,
 * last_error, created_at) plus `delivered_at`, one group per value of `groupBy` (none when
 * there are no rows). Each group
 * gets its size, its ids as a multirange (exact), its keys' range from smallest to largest, and
 * its messages as one array. The key range compares keys as text in the "C" collation, which
 * orders them as uuid does (PostgreSQL has no min or max for uuid). Settle uses it, and so do the tests and the bench that write history directly.
 */
export function insertHistoryGroups(quotedSchema: string, source: string, groupBy: string): string {
  return `INSERT INTO ${quotedSchema}.delivered_groups (delivered_at, size, ids, keys, messages)
        SELECT max(delivered_at), count(*), range_agg(int8range(id, id, '[]')),
          ${quotedSchema}.message_key_range(min(key::text COLLATE "C")::uuid,
            max(key::text COLLATE "C")::uuid, '[]'),
          array_agg(ROW(id, key, kind, payload, ordering_key, attempts, max_attempts, due_at,
            last_error, created_at)::${quotedSchema}.delivered_message)
        FROM ${source}
        GROUP BY ${groupBy}`;
}

/** Messages in one history group at most: a settle's deliveries past it go to further groups. */
export const HISTORY_GROUP_MESSAGES = 1_000;

/**
 * Payload bytes in one history group, about, at most: a group is one value, read whole by a get
 * and written whole by a discard, and a value cannot pass 1 GB. A group takes messages until
 * the payloads before it pass this (so one large payload still fits).
 */
export const HISTORY_GROUP_PAYLOAD_BYTES = 8 * 1024 * 1024;

/**
 * The settle's step (a CTE over `moved`, the rows it deleted, and `$6`, its time) that appends
 * those messages to delivered history, stamped with the settle's time: one row for the group's
 * deliveries (more past {@link HISTORY_GROUP_MESSAGES} messages or
 * {@link HISTORY_GROUP_PAYLOAD_BYTES} of payload), none when it delivered nothing.
 */
export function archiveMoved(quotedSchema: string): string {
  const parts = `(SELECT *, $6::timestamptz AS delivered_at,
            greatest((row_number() OVER running - 1) / ${HISTORY_GROUP_MESSAGES},
              (sum(pg_column_size(payload)) OVER running - pg_column_size(payload))
                / ${HISTORY_GROUP_PAYLOAD_BYTES}) AS part
          FROM moved
          WINDOW running AS (ROWS UNBOUNDED PRECEDING)) moved`;
  return `archived AS (
        ${insertHistoryGroups(quotedSchema, parts, 'part')}
      ),`;
}
