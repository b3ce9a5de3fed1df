/**
 * Delivered history as settle writes it: one row of delivered_groups per settle, its messages in
 * one array (migrations/0005_history_by_settle_group.sql).
 */
import { compareMessageIds } from '../core/message-id.js';

/**
 * An INSERT that appends history groups made from `source`, rows in the columns of
 * `delivered_message` (id, key, kind, payload, ordering_key, attempts, max_attempts, due_at,
 * last_error, created_at) plus `delivered_at`, one group per value of `groupBy` (none when
 * there are no rows), with no attempt history (as history before migration 0007) and no trace
 * context (as before 0012). Each group
 * gets its size, its ids as a multirange (exact), its keys' range from smallest to largest, and
 * its messages as one array. The key range compares keys as text in the "C" collation, which
 * orders them as uuid does (PostgreSQL has no min or max for uuid). For history written straight
 * from SQL (the tests and the bench; migration 0005 has the same shape): settle writes its group
 * with {@link archiveMoved} instead, its bounds computed by the drain.
 */
export function insertHistoryGroups(quotedSchema: string, source: string, groupBy: string): string {
  return `INSERT INTO ${quotedSchema}.delivered_groups (delivered_at, size, ids, keys, messages)
        SELECT max(delivered_at), count(*), range_agg(int8range(id, id, '[]')),
          ${quotedSchema}.message_key_range(min(key::text COLLATE "C")::uuid,
            max(key::text COLLATE "C")::uuid, '[]'),
          array_agg(ROW(id, key, kind, payload, ordering_key, attempts, max_attempts, due_at,
            last_error, created_at, NULL::jsonb, NULL::integer, NULL::integer, NULL::text,
            NULL::text)
            ::${quotedSchema}.delivered_message)
        FROM ${source}
        GROUP BY ${groupBy}`;
}

/**
 * The columns the settle's delete returns for history, in the order of `delivered_message`.
 */
export const ARCHIVED_COLUMNS = `m.id, m.key, m.kind, m.payload, m.ordering_key, m.attempts,
          m.max_attempts, m.due_at, m.last_error, m.created_at, m.attempt_log, m.traceparent,
          m.tracestate`;

/**
 * The settle's step (a CTE over `moved`, the rows its delete took) that appends those messages
 * to delivered history as ONE group, stamped with the settle's time ($8), none when it delivered
 * nothing, each with its attempt log and its delivery's status and duration (from its outcome
 * in `owned`). The group's ids ($12, an int8multirange) and key range ($13 to $14) come with the
 * statement, from {@link historyBounds} over the settle's deliveries: the drain has them at
 * hand, and aggregating them here (range_agg, and keys compared as text, since PostgreSQL has
 * no min or max for uuid) cost more server CPU than the rest of the group (docs/benchmarks.md).
 * The store's settleFits keeps a settle within one group's size (settle-size.ts).
 *
 * The bounds cover every delivery of the settle, so they may also hold the id or key of one that
 * is not in the group: stale (another drain owns the row now) or kept in messages by its dedupe
 * key. Every read therefore looks for the message inside the groups the bounds point to.
 */
export function archiveMoved(quotedSchema: string): string {
  return `archived AS (
        INSERT INTO ${quotedSchema}.delivered_groups (delivered_at, size, ids, keys, messages)
        SELECT $8::timestamptz, count(*), $12::int8multirange,
          ${quotedSchema}.message_key_range($13::uuid, $14::uuid, '[]'),
          array_agg(ROW(mv.id, mv.key, mv.kind, mv.payload, mv.ordering_key, mv.attempts,
            mv.max_attempts, mv.due_at, mv.last_error, mv.created_at, mv.attempt_log, o.status,
            o.ms, mv.traceparent, mv.tracestate)::${quotedSchema}.delivered_message)
        FROM moved mv JOIN owned o ON o.id = mv.id
        HAVING count(*) > 0
      ),`;
}

/** What a settle's history group is bounded by: its delivered ids and keys (see archiveMoved). */
export interface HistoryBounds {
  /** The ids as an int8multirange literal, runs of consecutive ids merged: `{[1,5],[9,9]}`. */
  ids: string;
  smallestKey: string;
  largestKey: string;
}

/**
 * The bounds of the messages `delivered`, or null when there are none. Keys are compared as
 * lowercase text, which orders uuids as PostgreSQL does.
 */
export function historyBounds(
  delivered: readonly { id: string; key: string }[],
): HistoryBounds | null {
  if (delivered.length === 0) return null;
  const ids = delivered.map((message) => message.id).sort(compareMessageIds);
  let smallestKey = delivered[0]!.key.toLowerCase();
  let largestKey = smallestKey;
  for (const { key } of delivered) {
    const lower = key.toLowerCase();
    if (lower < smallestKey) smallestKey = lower;
    else if (lower > largestKey) largestKey = lower;
  }
  const runs: string[] = [];
  let first = ids[0]!;
  let last = BigInt(first);
  for (const id of ids.slice(1)) {
    const value = BigInt(id);
    if (value === last || value === last + 1n) {
      last = value;
      continue;
    }
    runs.push(`[${first},${last}]`);
    first = id;
    last = value;
  }
  runs.push(`[${first},${last}]`);
  return { ids: `{${runs.join(',')}}`, smallestKey, largestKey };
}
