/**
 * Every statement the outbox store runs, named and kept in one place. Values always travel as
 * parameters; the only thing placed in the text is the schema, which `quoteSchema` has checked.
 *
 * Claim, settle and release are each ONE statement, so a drain works over Neon's HTTP driver,
 * which cannot hold a transaction open between round trips.
 */
export interface OutboxStatements {
  enqueueMessages: string;
  claimDueMessages: string;
  settleClaimedMessages: string;
  purgeDelivered: string;
  purgeDead: string;
  readStats: string;
  listPending: string;
  listClaimed: string;
  listDelivered: string;
  listDead: string;
  readDeliveryCounts: string;
  purgeDeliveryCounts: string;
  listRecentErrors: string;
  readMessage: string;
  readMessageByKey: string;
  retryDeadMessage: string;
  retryAllDead: string;
  discardMessage: string;
}

/**
 * The columns a claim hands to the drain, and that lists show operators. A claimed row shows its
 * lease expiry as its due time: when it may next be claimed, as the state machine says.
 */
const MESSAGE_COLUMNS = `m.id, m.key, m.kind, m.payload, m.ordering_key, m.dedupe_key, m.state,
  m.attempts, m.max_attempts,
  CASE WHEN m.state = 'claimed' THEN m.lease_expires_at ELSE m.due_at END AS due_at,
  m.claimed_at, m.last_error, m.created_at, m.delivered_at, m.dead_at`;

/** The same columns from delivered history (alias h), where every row is delivered. */
const DELIVERED_COLUMNS = `h.id, h.key, h.kind, h.payload, h.ordering_key,
  NULL::text AS dedupe_key, 'delivered'::text AS state, h.attempts, h.max_attempts, h.due_at,
  NULL::timestamptz AS claimed_at, h.last_error, h.created_at, h.delivered_at,
  NULL::timestamptz AS dead_at`;

/**
 * Adds a statement's outcomes to the per-minute counters, inside the statement that produced
 * them. Kinds are inserted in a fixed order so concurrent settles lock counter rows in the same
 * order (a deadlock would still be retried, as 40P01 is retryable).
 */
function countOutcomes(quotedSchema: string, outcomes: string, now: string): string {
  return `INSERT INTO ${quotedSchema}.delivery_counts AS c (minute, kind, delivered, failed, dead)
        SELECT date_trunc('minute', ${now}::timestamptz), o.kind,
          count(*) FILTER (WHERE o.outcome = 'delivered'),
          count(*) FILTER (WHERE o.outcome IN ('retry', 'dead')),
          count(*) FILTER (WHERE o.outcome = 'dead')
        FROM ${outcomes} o
        WHERE o.outcome <> 'release'
        GROUP BY o.kind
        ORDER BY o.kind
        ON CONFLICT (minute, kind) DO UPDATE SET
          delivered = c.delivered + excluded.delivered,
          failed = c.failed + excluded.failed,
          dead = c.dead + excluded.dead`;
}

/** $1 kind or null, $2 cursor time, $3 cursor id, $4 limit: dead rows newest first. */
function listDead(messages: string): string {
  return `
      SELECT ${MESSAGE_COLUMNS}
      FROM ${messages} m
      WHERE m.dead_at IS NOT NULL
        AND ($1::text IS NULL OR m.kind = $1)
        AND ($2::timestamptz IS NULL OR (m.dead_at, m.id) < ($2, $3::bigint))
      ORDER BY m.dead_at DESC, m.id DESC
      LIMIT $4`;
}

/**
 * $1 kind or null, $2 cursor time, $3 cursor id, $4 limit: delivered messages newest first, from
 * history and from the rows a dedupe key keeps in messages, each side read in order on its
 * delivered_at index and merged.
 */
function listDelivered(messages: string, delivered: string): string {
  return `
      SELECT * FROM (
        (SELECT ${MESSAGE_COLUMNS}
         FROM ${messages} m
         WHERE m.delivered_at IS NOT NULL
           AND ($1::text IS NULL OR m.kind = $1)
           AND ($2::timestamptz IS NULL OR (m.delivered_at, m.id) < ($2, $3::bigint))
         ORDER BY m.delivered_at DESC, m.id DESC
         LIMIT $4)
        UNION ALL
        (SELECT ${DELIVERED_COLUMNS}
         FROM ${delivered} h
         WHERE ($1::text IS NULL OR h.kind = $1)
           AND ($2::timestamptz IS NULL OR (h.delivered_at, h.id) < ($2, $3::bigint))
         ORDER BY h.delivered_at DESC, h.id DESC
         LIMIT $4)
      ) u
      ORDER BY u.delivered_at DESC, u.id DESC
      LIMIT $4`;
}

export function outboxStatements(quotedSchema: string): OutboxStatements {
  const messages = `${quotedSchema}.messages`;
  const delivered = `${quotedSchema}.delivered_messages`;
  return {
    /**
     * $1 keys, $2 kinds, $3 payloads (JSON text), $4 ordering keys, $5 dedupe keys,
     * $6 max attempts, $7 due times (null = now() + $8 delay ms).
     *
     * One INSERT for the whole list, so a thousand messages cost one round trip inside the
     * caller's transaction. `due_at` defaults to the transaction's own now(), the same clock the
     * caller's domain write sees, truncated to milliseconds like every time we write from JS, so
     * keyset cursors (which carry JS Dates) compare exactly. On a dedupe-key conflict the no-op update makes RETURNING yield
     * the existing row's key, so the caller learns which message stands for its request.
     */
    enqueueMessages: `
      INSERT INTO ${messages} AS m
        (key, kind, payload, ordering_key, dedupe_key, max_attempts, due_at)
      SELECT i.key, i.kind, i.payload::jsonb, i.ordering_key, i.dedupe_key, i.max_attempts,
        date_trunc('milliseconds', coalesce(i.due_at, now() + i.delay_ms * interval '1 millisecond'))
      FROM unnest($1::uuid[], $2::text[], $3::text[], $4::text[], $5::text[], $6::integer[],
        $7::timestamptz[], $8::bigint[])
        WITH ORDINALITY AS i(key, kind, payload, ordering_key, dedupe_key, max_attempts, due_at,
          delay_ms, position)
      ORDER BY i.position
      ON CONFLICT (dedupe_key) WHERE dedupe_key IS NOT NULL
        DO UPDATE SET dedupe_key = excluded.dedupe_key
      RETURNING m.key, m.dedupe_key, (xmax = 0) AS inserted`,

    /**
     * $1 now, $2 claim token, $3 batch size, $4 lease ms, $5 only these keys (null = any),
     * $6 whether a dead message blocks later messages with its ordering key, $7 the kinds this
     * drain has senders for (a drain never claims what it cannot send).
     *
     * FOR UPDATE SKIP LOCKED: overlapping drains each lock different rows and never wait on each
     * other; a row another drain is claiming right now is simply not ours. The UPDATE in the same
     * statement makes the claim visible the moment this statement commits, with a fresh token
     * and a lease (lease_expires_at = now + lease), and counts the attempt. A claimed row whose
     * lease has passed is claimable again (its drain died). A row whose attempts are already
     * spent (its final drain died holding it) is set aside as dead here instead of being sent
     * again. The ordering check lets only the head of each ordering key through: nothing
     * earlier with that key may still be pending or claimed (or dead, when dead heads block).
     *
     * The UPDATE changes no indexed column and no column of an index predicate (state,
     * attempts, token, claimed_at and the lease are in none), so with room on the page it is a
     * HOT update: one small row version, no index entries. due_at keeps the due time, so rows
     * claimed right now stay at the head of messages_claimable and the scan steps over them;
     * they are at most the batches in flight.
     */
    claimDueMessages: `
      WITH due AS (
        SELECT m.id
        FROM ${messages} m
        WHERE m.delivered_at IS NULL AND m.dead_at IS NULL
          AND m.due_at <= $1
          AND (m.state = 'pending' OR (m.state = 'claimed' AND m.lease_expires_at <= $1))
          AND m.kind = ANY($7::text[])
          AND ($5::uuid[] IS NULL OR m.key = ANY($5::uuid[]))
          AND (m.ordering_key IS NULL OR NOT EXISTS (
            SELECT 1 FROM ${messages} earlier
            WHERE earlier.ordering_key = m.ordering_key
              AND earlier.id < m.id
              AND (earlier.state IN ('pending', 'claimed')
                OR (earlier.state = 'dead' AND $6::boolean))
              -- Implied by the line above, but spelled out so the planner can use the partial
              -- index messages_ordering_unfinished.
              AND earlier.delivered_at IS NULL))
        ORDER BY m.due_at, m.id
        LIMIT $3
        FOR UPDATE OF m SKIP LOCKED
      ),
      claimed AS (
        UPDATE ${messages} m SET
          state = CASE WHEN m.attempts >= m.max_attempts THEN 'dead' ELSE 'claimed' END,
          attempts = least(m.attempts + 1, m.max_attempts),
          claim_token = CASE WHEN m.attempts >= m.max_attempts THEN NULL ELSE $2::uuid END,
          claimed_at = CASE WHEN m.attempts >= m.max_attempts THEN NULL ELSE $1 END,
          lease_expires_at = CASE WHEN m.attempts >= m.max_attempts THEN NULL
            ELSE $1::timestamptz + $4 * interval '1 millisecond' END,
          dead_at = CASE WHEN m.attempts >= m.max_attempts THEN $1 END,
          last_error = CASE WHEN m.attempts >= m.max_attempts
            THEN 'attempts exhausted: the final attempt''s lease expired without an outcome '
              || '(the drain crashed or was killed); previous error: '
              || coalesce(m.last_error, 'none')
            ELSE m.last_error END
        -- = ANY(ARRAY(...)) rather than a join: on a small table the planner hashed a join
        -- against a full scan; this always probes the primary key (docs/benchmarks.md).
        WHERE m.id = ANY(ARRAY(SELECT id FROM due))
        RETURNING ${MESSAGE_COLUMNS}
      ),
      counted AS (
        ${countOutcomes(quotedSchema, "(SELECT kind, 'dead' AS outcome FROM claimed WHERE state = 'dead')", '$1')}
      )
      SELECT * FROM claimed m ORDER BY m.due_at, m.id`,

    /**
     * $1 ids, $2 claim tokens, $3 outcomes ('delivered' | 'retry' | 'dead' | 'release'),
     * $4 next due times (retry, release), $5 errors, $6 now.
     *
     * Every outcome of a batch in one statement. The token in the WHERE clause proves this drain
     * still owns each claim: a row whose lease expired and that another drain re-claimed has a
     * new token and is left alone. The caller counts ids missing from RETURNING as stale.
     * 'release' hands back a row that was claimed but never sent: due now, attempt uncounted.
     *
     * A delivered message leaves the hot table here: deleted from messages (a small WAL record,
     * no new row version, no index entries) and appended to delivered_messages. One with a
     * dedupe key stays in messages as 'delivered' instead, so its key stays taken until purge.
     * The two writes touch disjoint rows of messages and read the same snapshot.
     */
    settleClaimedMessages: `
      WITH o AS (
        SELECT * FROM unnest($1::bigint[], $2::uuid[], $3::text[], $4::timestamptz[], $5::text[])
          AS o(id, claim_token, outcome, due_at, error)
      ),
      moved AS (
        DELETE FROM ${messages} m
        USING o
        WHERE m.id = o.id
          AND m.claim_token = o.claim_token
          AND m.state = 'claimed'
          AND o.outcome = 'delivered' AND m.dedupe_key IS NULL
        RETURNING m.id, m.key, m.kind, m.payload, m.ordering_key, m.attempts, m.max_attempts,
          m.due_at, m.last_error, m.created_at
      ),
      archived AS (
        INSERT INTO ${delivered}
          (id, key, kind, payload, ordering_key, attempts, max_attempts, due_at, last_error,
           created_at, delivered_at)
        SELECT id, key, kind, payload, ordering_key, attempts, max_attempts, due_at, last_error,
          created_at, $6::timestamptz
        FROM moved
      ),
      updated AS (
        UPDATE ${messages} m SET
          state = CASE o.outcome
            WHEN 'delivered' THEN 'delivered'
            WHEN 'dead' THEN 'dead'
            ELSE 'pending' END,
          claim_token = NULL,
          claimed_at = NULL,
          lease_expires_at = NULL,
          attempts = CASE WHEN o.outcome = 'release' THEN m.attempts - 1 ELSE m.attempts END,
          due_at = CASE WHEN o.outcome IN ('retry', 'release') THEN o.due_at ELSE m.due_at END,
          delivered_at = CASE WHEN o.outcome = 'delivered' THEN $6::timestamptz END,
          dead_at = CASE WHEN o.outcome = 'dead' THEN $6::timestamptz END,
          last_error = CASE WHEN o.outcome IN ('retry', 'dead') THEN o.error ELSE m.last_error END
        FROM o
        WHERE m.id = o.id
          AND m.claim_token = o.claim_token
          AND m.state = 'claimed'
          AND NOT (o.outcome = 'delivered' AND m.dedupe_key IS NULL)
        RETURNING m.id, m.kind, o.outcome
      ),
      settled AS (
        SELECT id, kind, 'delivered' AS outcome FROM moved
        UNION ALL
        SELECT id, kind, outcome FROM updated
      ),
      counted AS (
        ${countOutcomes(quotedSchema, 'settled', '$6')}
      )
      SELECT id FROM settled`,

    /**
     * $1 delivered before, $2 limit. Bounded, oldest first: delivered rows a dedupe key keeps in
     * messages (SKIP LOCKED, so a purge never blocks a drain), then history up to the rest of
     * the limit. Each side walks its delivered_at index without reading pending rows.
     */
    purgeDelivered: `
      WITH kept AS (
        DELETE FROM ${messages} m
        WHERE m.id IN (
          SELECT id FROM ${messages}
          WHERE delivered_at IS NOT NULL AND delivered_at < $1
          ORDER BY delivered_at, id
          LIMIT $2
          FOR UPDATE SKIP LOCKED)
        RETURNING m.id
      ),
      moved AS (
        DELETE FROM ${delivered} h
        WHERE h.id IN (
          SELECT id FROM ${delivered}
          WHERE delivered_at < $1
          ORDER BY delivered_at, id
          LIMIT greatest(0, $2 - (SELECT count(*) FROM kept))
          FOR UPDATE SKIP LOCKED)
        RETURNING h.id
      )
      SELECT id FROM kept UNION ALL SELECT id FROM moved`,

    /** $1 dead before, $2 limit. As purgeDelivered, for dead letter. */
    purgeDead: `
      DELETE FROM ${messages} m
      WHERE m.id IN (
        SELECT id FROM ${messages}
        WHERE dead_at IS NOT NULL AND dead_at < $1
        ORDER BY dead_at, id
        LIMIT $2
        FOR UPDATE SKIP LOCKED)`,

    /**
     * $1 now. Counts per state in one statement. `claimed` counts live leases; a claimed row
     * whose lease has passed is due again and counts as due. Lag is the age of the oldest message
     * that is due now and not held by a live lease: how far behind the drains are. Delivered
     * counts history too.
     */
    readStats: `
      SELECT
        count(*) FILTER (WHERE state = 'pending') AS pending,
        count(*) FILTER (WHERE state = 'pending' AND due_at <= $1) AS due,
        count(*) FILTER (WHERE state = 'claimed' AND lease_expires_at > $1) AS claimed,
        count(*) FILTER (WHERE state = 'claimed' AND lease_expires_at <= $1) AS lease_expired,
        count(*) FILTER (WHERE state = 'delivered')
          + (SELECT count(*) FROM ${delivered}) AS delivered,
        count(*) FILTER (WHERE state = 'dead') AS dead,
        min(CASE WHEN state = 'claimed' THEN lease_expires_at ELSE due_at END) FILTER (
          WHERE (state = 'pending' AND due_at <= $1)
            OR (state = 'claimed' AND lease_expires_at <= $1)) AS oldest_due_at
      FROM ${messages}`,

    /**
     * $1 kind or null, $2 cursor due_at, $3 cursor id, $4 limit.
     * Keyset pagination in the order the claim uses, on the claimable index.
     */
    listPending: `
      SELECT ${MESSAGE_COLUMNS}
      FROM ${messages} m
      WHERE m.delivered_at IS NULL AND m.dead_at IS NULL AND m.state = 'pending'
        AND ($1::text IS NULL OR m.kind = $1)
        AND ($2::timestamptz IS NULL OR (m.due_at, m.id) > ($2, $3::bigint))
      ORDER BY m.due_at, m.id
      LIMIT $4`,

    /**
     * $1 kind or null, $2 cursor lease expiry, $3 cursor id, $4 limit. Claimed rows by lease
     * expiry (their due time as records show it); few at any moment, so no index of their own.
     */
    listClaimed: `
      SELECT ${MESSAGE_COLUMNS}
      FROM ${messages} m
      WHERE m.state = 'claimed'
        AND ($1::text IS NULL OR m.kind = $1)
        AND ($2::timestamptz IS NULL OR (m.lease_expires_at, m.id) > ($2, $3::bigint))
      ORDER BY m.lease_expires_at, m.id
      LIMIT $4`,

    listDelivered: listDelivered(messages, delivered),
    listDead: listDead(messages),

    /** $1 since. Outcomes per minute, all kinds together, for metrics and the dashboard chart. */
    readDeliveryCounts: `
      SELECT minute, sum(delivered)::int AS delivered, sum(failed)::int AS failed,
        sum(dead)::int AS dead
      FROM ${quotedSchema}.delivery_counts
      WHERE minute >= $1
      GROUP BY minute
      ORDER BY minute`,

    /** $1 older than. Counters are small, but one row a minute per kind adds up over a year. */
    purgeDeliveryCounts: `DELETE FROM ${quotedSchema}.delivery_counts WHERE minute < $1`,

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

    /** $1 id. In messages or, once delivered, in history (never both: settle moves it). */
    readMessage: `
      SELECT ${MESSAGE_COLUMNS} FROM ${messages} m WHERE m.id = $1
      UNION ALL
      SELECT ${DELIVERED_COLUMNS} FROM ${delivered} h WHERE h.id = $1`,

    /**
     * $1 key (a uuid). Operators arrive with the key from a receiver's log; messages_key_unique
     * and delivered_messages_key_unique.
     */
    readMessageByKey: `
      SELECT ${MESSAGE_COLUMNS} FROM ${messages} m WHERE m.key = $1::uuid
      UNION ALL
      SELECT ${DELIVERED_COLUMNS} FROM ${delivered} h WHERE h.key = $1::uuid`,

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
     * $1 id. Deletes a message that is not mid-delivery, from messages or from history. A
     * claimed row is refused: its drain may be sending it right now, and deleting it would turn
     * that send's settle stale.
     */
    discardMessage: `
      WITH live AS (
        DELETE FROM ${messages} WHERE id = $1 AND state <> 'claimed' RETURNING id, state
      ),
      archived AS (
        DELETE FROM ${delivered} WHERE id = $1 RETURNING id, 'delivered'::text AS state
      )
      SELECT id, state FROM live UNION ALL SELECT id, state FROM archived`,
  };
}
