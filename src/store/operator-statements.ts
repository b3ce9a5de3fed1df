/**
 * The statements operators run through the store (admin API, dashboard, CLI): counts, keyset
 * lists, one message by id or key, retry and discard. Delivered messages live in history once
 * settled, as groups (delivered_groups, one row per settle, its messages in an array), so every
 * read of a message looks in messages and in the groups that may hold it.
 */
import { DELIVERED_ATTEMPT_COLUMNS, LIVE_ATTEMPT_COLUMNS } from './attempt-log.js';
import { DELIVERED_COLUMNS, MESSAGE_COLUMNS } from './message-columns.js';
import { ACTION_FILTERS, filterClauses } from './message-filter-sql.js';

export interface OperatorStatements {
  readStats: string;
  listPending: string;
  listClaimed: string;
  listDelivered: string;
  listDead: string;
  readDeliveryCounts: string;
  listRecentErrors: string;
  listHoldingHeads: string;
  readMessage: string;
  readMessageByKey: string;
  retryDeadMessage: string;
  retryAllDead: string;
  retrySelected: string;
  retryMatching: string;
  discardSelected: string;
  discardMatching: string;
  discardMessage: string;
}

/**
 * What a retry does to a row, `now` its parameter: a dead one is pending again with a fresh set
 * of attempts, due now; a pending one (waiting out a backoff) is due now, its attempts as they
 * were. Either way it keeps its key, so a receiver that did get an earlier send still drops the
 * duplicate.
 */
function retrySet(now: string): string {
  return `state = 'pending',
        attempts = CASE WHEN state = 'dead' THEN 0 ELSE attempts END,
        due_at = CASE WHEN state = 'dead' THEN ${now}::timestamptz
          ELSE least(due_at, ${now}::timestamptz) END,
        dead_at = NULL`;
}

/** The states an operator may retry or discard in bulk: never claimed (a drain holds it). */
const ACTIONABLE = `('dead', 'pending')`;

/**
 * $1 state, $2 limit, $3-$7 the filters ({@link ACTION_FILTERS}): the rows in that state that
 * match, at most $2, oldest first, locked. SKIP LOCKED: a row a drain is claiming right now is
 * left to it. The time filtered on is when a dead row died, or when a pending one is due, as
 * the lists show them.
 */
function matchingRows(messages: string): string {
  return `SELECT m.id FROM ${messages} m
        WHERE m.state = $1::text AND m.state IN ${ACTIONABLE}
        ${filterClauses('m', 'coalesce(m.dead_at, m.due_at)', ACTION_FILTERS)}
        ORDER BY m.id
        LIMIT $2
        FOR UPDATE OF m SKIP LOCKED`;
}

/**
 * $1 kind, $2 cursor time, $3 cursor id, $4 limit, $5-$8 the filters ({@link filterClauses}):
 * dead rows newest first.
 */
function listDead(messages: string): string {
  return `
      SELECT ${MESSAGE_COLUMNS}
      FROM ${messages} m
      WHERE m.dead_at IS NOT NULL
        ${filterClauses('m', 'm.dead_at')}
        AND ($2::timestamptz IS NULL OR (m.dead_at, m.id) < ($2, $3::bigint))
      ORDER BY m.dead_at DESC, m.id DESC
      LIMIT $4`;
}

/** History's messages, one row each (alias h), with their group (alias g). */
function historyMessages(groups: string): string {
  return `${groups} g CROSS JOIN LATERAL unnest(g.messages) h`;
}

/**
 * $1 kind, $2 cursor time, $3 cursor id, $4 limit, $5-$8 the filters ({@link filterClauses}):
 * delivered messages newest first, from
 * history and from the rows a dedupe key keeps in messages, each side read in order on its
 * delivered_at index and merged. History's side walks groups newest first and sorts each
 * group's messages by id, stopping once it has the limit.
 */
function listDelivered(messages: string, groups: string): string {
  return `
      SELECT * FROM (
        (SELECT ${MESSAGE_COLUMNS}
         FROM ${messages} m
         WHERE m.delivered_at IS NOT NULL
           ${filterClauses('m', 'm.delivered_at')}
           AND ($2::timestamptz IS NULL OR (m.delivered_at, m.id) < ($2, $3::bigint))
         ORDER BY m.delivered_at DESC, m.id DESC
         LIMIT $4)
        UNION ALL
        (SELECT ${DELIVERED_COLUMNS}
         FROM ${historyMessages(groups)}
         WHERE ($2::timestamptz IS NULL OR g.delivered_at <= $2)
           ${filterClauses('h', 'g.delivered_at')}
           AND ($2::timestamptz IS NULL OR (g.delivered_at, h.id) < ($2, $3::bigint))
         ORDER BY g.delivered_at DESC, h.id DESC
         LIMIT $4)
      ) u
      ORDER BY u.delivered_at DESC, u.id DESC
      LIMIT $4`;
}

/**
 * History groups summed one by one in stats, at most. Each is one row however many messages it
 * holds, and the sum reads only their sizes, about 1 ms per 10,000 groups when cached; beyond
 * this the count is an estimate, so a dashboard refreshing stats costs the same at any size.
 */
export const EXACT_HISTORY_GROUPS_LIMIT = 10_000;

/**
 * Messages in delivered history: exact while it holds at most {@link EXACT_HISTORY_GROUPS_LIMIT}
 * groups (a sum that stops one group past it), otherwise PostgreSQL's live-row statistic for the
 * groups times the mean size of the groups summed: the first in the table's physical order, so
 * when group sizes change over time (a backlog's full groups, then a trickle's groups of one)
 * the estimate follows the older ones. That statistic is rows inserted minus rows
 * deleted, as the server's statistics saw them. It lags commits: a session hands its counts
 * over when it goes idle, at most once a second (PostgreSQL 15+ may hold them for 10 to 60 s
 * while the session stays busy). After a crash or a statistics reset it is zero until
 * autovacuum analyzes the table, so the estimate falls back to pg_class.reltuples (as of the
 * last VACUUM or ANALYZE). Either way it is never below the messages summed.
 */
function historyCount(groups: string): string {
  return `
        SELECT CASE WHEN capped.groups <= ${EXACT_HISTORY_GROUPS_LIMIT} THEN capped.messages
          ELSE greatest(capped.messages, round(capped.messages::numeric / capped.groups
            * coalesce(nullif(pg_stat_get_live_tuples(c.oid), 0), c.reltuples::bigint))::bigint)
          END
        FROM (SELECT count(*) AS groups, coalesce(sum(size), 0) AS messages
              FROM (SELECT size FROM ${groups} LIMIT ${EXACT_HISTORY_GROUPS_LIMIT + 1}) sample)
            capped,
          pg_class c
        WHERE c.oid = '${groups}'::regclass`;
}

export function operatorStatements(quotedSchema: string): OperatorStatements {
  const messages = `${quotedSchema}.messages`;
  const groups = `${quotedSchema}.delivered_groups`;
  return {
    /**
     * $1 now, $2 whether a dead message blocks later messages with its ordering key (the
     * drains' `deadHeadBlocks`). Counts per state in one statement. `claimed` counts live
     * leases; a claimed row whose lease has passed is due again. `held` counts pending rows due
     * now that the claim would pass over: an earlier message with their ordering key is still
     * pending or claimed (or dead, when dead heads block). `due` is the rest of the pending rows
     * due now, the ones a drain can take. Lag is the age of the oldest message a drain could
     * take now (due, or its lease passed, and not held): how far behind the drains are, which a
     * dead head holding its key's backlog does not make look worse.
     *
     * Held is worked out with one aggregate, not a probe per row: `heads` is the first
     * unfinished id of each ordering key, read from messages_ordering_unfinished, and a keyed
     * row is held when that head is not the row itself (the claim's NOT EXISTS, in
     * claim-statements.ts, asks the same question of each row it takes). The one scan of
     * messages stays the statement's cost, with the heads hashed beside it
     * (test/store/held-stats.test.ts). Delivered counts history too: exactly while history
     * holds at most {@link EXACT_HISTORY_GROUPS_LIMIT} groups, and beyond that as an estimate
     * (see {@link historyCount}), so a stats call never reads millions of rows.
     */
    readStats: `
      WITH heads AS (
        SELECT ordering_key, min(id) AS head
        FROM ${messages}
        WHERE ordering_key IS NOT NULL AND delivered_at IS NULL
          AND (state IN ('pending', 'claimed') OR (state = 'dead' AND $2::boolean))
        GROUP BY ordering_key
      ),
      rows AS (
        SELECT m.state,
          CASE WHEN m.state = 'claimed' THEN m.lease_expires_at ELSE m.due_at END AS due_at,
          (m.state = 'pending' AND m.due_at <= $1)
            OR (m.state = 'claimed' AND m.lease_expires_at <= $1) AS takeable,
          coalesce(h.head < m.id, false) AS held
        FROM ${messages} m LEFT JOIN heads h ON h.ordering_key = m.ordering_key
      )
      SELECT
        count(*) FILTER (WHERE state = 'pending') AS pending,
        count(*) FILTER (WHERE state = 'pending' AND takeable AND NOT held) AS due,
        count(*) FILTER (WHERE state = 'pending' AND takeable AND held) AS held,
        count(*) FILTER (WHERE state = 'claimed' AND NOT takeable) AS claimed,
        count(*) FILTER (WHERE state = 'claimed' AND takeable) AS lease_expired,
        count(*) FILTER (WHERE state = 'delivered') + (${historyCount(groups)}) AS delivered,
        count(*) FILTER (WHERE state = 'dead') AS dead,
        min(due_at) FILTER (WHERE takeable AND NOT held) AS oldest_due_at
      FROM rows`,

    /**
     * $1 kind, $2 cursor due_at, $3 cursor id, $4 limit, $5-$8 the filters (see
     * filterClauses). Keyset pagination in the order the claim uses, on the claimable index.
     */
    listPending: `
      SELECT ${MESSAGE_COLUMNS}
      FROM ${messages} m
      WHERE m.delivered_at IS NULL AND m.dead_at IS NULL AND m.state = 'pending'
        ${filterClauses('m', 'm.due_at')}
        AND ($2::timestamptz IS NULL OR (m.due_at, m.id) > ($2, $3::bigint))
      ORDER BY m.due_at, m.id
      LIMIT $4`,

    /**
     * $1 kind, $2 cursor lease expiry, $3 cursor id, $4 limit, $5-$8 the filters (see
     * filterClauses). Claimed rows by lease expiry (their due time as records show it); few at
     * any moment, so no index of their own.
     */
    listClaimed: `
      SELECT ${MESSAGE_COLUMNS}
      FROM ${messages} m
      WHERE m.state = 'claimed'
        ${filterClauses('m', 'm.lease_expires_at')}
        AND ($2::timestamptz IS NULL OR (m.lease_expires_at, m.id) > ($2, $3::bigint))
      ORDER BY m.lease_expires_at, m.id
      LIMIT $4`,

    listDelivered: listDelivered(messages, groups),
    listDead: listDead(messages),

    /** $1 since. Outcomes per minute, all kinds together, for metrics and the dashboard chart. */
    readDeliveryCounts: `
      SELECT minute, sum(delivered)::int AS delivered, sum(failed)::int AS failed,
        sum(dead)::int AS dead
      FROM ${quotedSchema}.delivery_counts
      WHERE minute >= $1
      GROUP BY minute
      ORDER BY minute`,

    /**
     * $1 limit. The latest failures an operator should see: dead rows and pending rows that have
     * failed at least once, newest first.
     */
    listRecentErrors: `
      SELECT ${MESSAGE_COLUMNS}
      FROM ${messages} m
      WHERE m.last_error IS NOT NULL AND m.state IN ('pending', 'dead')
      ORDER BY coalesce(m.dead_at, m.due_at) DESC, m.id DESC
      LIMIT $1`,

    /**
     * $1 ids, $2 whether dead messages block (the drains' deadHeadBlocks). For each pending
     * message among them that has an ordering key, the message at the head of that key: the
     * oldest unfinished (pending, claimed, or dead when $2) message with the key and a smaller
     * id, which the claim waits for. One probe of messages_ordering_unfinished per message: its
     * predicate (delivered_at IS NULL) is spelled out so the planner can use it.
     */
    listHoldingHeads: `
      SELECT m.id, head.id AS head_id, head.key AS head_key, head.state AS head_state,
        CASE WHEN head.state = 'claimed' THEN head.lease_expires_at ELSE head.due_at END
          AS head_due_at
      FROM ${messages} m
      CROSS JOIN LATERAL (
        SELECT earlier.id, earlier.key, earlier.state, earlier.due_at, earlier.lease_expires_at
        FROM ${messages} earlier
        WHERE earlier.ordering_key = m.ordering_key
          AND earlier.id < m.id
          AND earlier.delivered_at IS NULL
          AND (earlier.dead_at IS NULL OR $2::boolean)
        ORDER BY earlier.id
        LIMIT 1) head
      WHERE m.id = ANY($1::bigint[]) AND m.ordering_key IS NOT NULL AND m.state = 'pending'`,

    /**
     * $1 id. In messages or, once delivered, in history (never both: settle moves it): in the
     * groups whose id multirange holds it (exact), on delivered_groups_ids. With its attempt
     * history (attempt-log.ts), which lists leave out.
     */
    readMessage: `
      SELECT ${MESSAGE_COLUMNS}, ${LIVE_ATTEMPT_COLUMNS} FROM ${messages} m WHERE m.id = $1
      UNION ALL
      SELECT ${DELIVERED_COLUMNS}, ${DELIVERED_ATTEMPT_COLUMNS} FROM ${historyMessages(groups)}
      WHERE g.ids @> $1::bigint AND h.id = $1`,

    /**
     * $1 key (a uuid). Operators arrive with the key from a receiver's log; messages_key_unique,
     * then the groups whose key range holds it, on delivered_groups_keys. Time-ordered keys (the
     * default) keep those ranges narrow; random keys make every group's range wide, and the read
     * then looks through all of history.
     */
    readMessageByKey: `
      SELECT ${MESSAGE_COLUMNS}, ${LIVE_ATTEMPT_COLUMNS} FROM ${messages} m WHERE m.key = $1::uuid
      UNION ALL
      SELECT ${DELIVERED_COLUMNS}, ${DELIVERED_ATTEMPT_COLUMNS} FROM ${historyMessages(groups)}
      WHERE g.keys @> $1::uuid AND h.key = $1::uuid`,

    /**
     * $1 id, $2 now. Dead -> pending with a fresh set of attempts; the row keeps its key, so a
     * receiver that did get an earlier send still drops the duplicate.
     */
    retryDeadMessage: `
      UPDATE ${messages} SET state = 'pending', attempts = 0, due_at = $2, dead_at = NULL
      WHERE id = $1 AND state = 'dead'
      RETURNING id`,

    /** $1 now, $2 kind or null. */
    retryAllDead: `
      UPDATE ${messages} SET state = 'pending', attempts = 0, due_at = $1, dead_at = NULL
      WHERE state = 'dead' AND ($2::text IS NULL OR kind = $2)
      RETURNING id`,

    /**
     * $1 ids, $2 state, $3 now: retries those of the ids still in the state the operator saw
     * (dead or pending, see retrySet). A row that moved on since the page was drawn is left as
     * it is; the ids returned say which changed.
     */
    retrySelected: `
      UPDATE ${messages} SET ${retrySet('$3')}
      WHERE id = ANY($1::bigint[]) AND state = $2::text AND state IN ${ACTIONABLE}
      RETURNING id`,

    /**
     * $1 state, $2 limit, $3-$7 the filters, $8 now: retries at most $2 of the rows that
     * match, in one statement, so one press never locks more than that.
     */
    retryMatching: `
      WITH picked AS (${matchingRows(messages)})
      UPDATE ${messages} SET ${retrySet('$8')}
      WHERE id IN (SELECT id FROM picked) AND state = $1::text
      RETURNING id`,

    /** $1 ids, $2 state: deletes those of the ids still in that state (dead or pending). */
    discardSelected: `
      DELETE FROM ${messages}
      WHERE id = ANY($1::bigint[]) AND state = $2::text AND state IN ${ACTIONABLE}
      RETURNING id`,

    /** $1 state, $2 limit, $3-$7 the filters: deletes at most $2 of the rows that match. */
    discardMatching: `
      WITH picked AS (${matchingRows(messages)})
      DELETE FROM ${messages}
      WHERE id IN (SELECT id FROM picked) AND state = $1::text
      RETURNING id`,

    /**
     * $1 id. Deletes a message that is not mid-delivery, from messages or from history. A
     * claimed row is refused: its drain may be sending it right now, and deleting it would turn
     * that send's settle stale. In history the message's group is written again without it (an
     * emptied group stays until purge); the group keeps its id and key ranges, which still bound
     * what is left. The WHERE is checked again on the newest version of the group, so two
     * discards in one group at once each take out their own message.
     */
    discardMessage: `
      WITH live AS (
        DELETE FROM ${messages} WHERE id = $1 AND state <> 'claimed' RETURNING id, state
      ),
      archived AS (
        UPDATE ${groups} g SET
          size = g.size - 1,
          messages = ARRAY(SELECT kept FROM unnest(g.messages) kept WHERE kept.id <> $1)
        WHERE g.ids @> $1::bigint
          AND EXISTS (SELECT FROM unnest(g.messages) gone WHERE gone.id = $1)
        RETURNING $1::bigint AS id, 'delivered'::text AS state
      )
      SELECT id, state FROM live UNION ALL SELECT id, state FROM archived`,
  };
}
