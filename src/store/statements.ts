import { appendedAttemptLog } from './attempt-log.js';
import { claimStatement, claimStatements } from './claim-statements.js';
import { HEALTH_CHANGES, settleHealthStatements } from './destination-statements.js';
import { ARCHIVED_COLUMNS, archiveMoved } from './history-groups.js';
import { type MetricStatements, metricStatements } from './metric-statements.js';
import { type OperatorStatements, operatorStatements } from './operator-statements.js';
import { countOutcomes } from './outcome-counts.js';

/**
 * The statements of the hot path and housekeeping: enqueue, claim, settle, purge. The claim is
 * built in claim-statements.ts, operators' reads and actions in operator-statements.ts. Values
 * always travel as parameters; the only thing placed in the text is the schema, which
 * `quoteSchema` has checked.
 *
 * Claim, settle and release are each ONE statement, so a drain works over Neon's HTTP driver,
 * which cannot hold a transaction open between round trips.
 */
export interface DrainStatements {
  enqueueMessages: string;
  /**
   * The claim of up to `limit` due rows. The limit is written into the text (a checked whole
   * number, never a caller's value), so the statement has one plan that PostgreSQL can keep:
   * with the limit, or the keys below, as a parameter it plans every claim anew (a custom plan
   * each time; about 6 µs of server CPU per message at batch 100, docs/benchmarks.md). With
   * `after`, rows after $6 due time, $7 id in due order come first (see claimStatement in
   * claim-statements.ts).
   */
  claimDueMessages(limit: number, after?: boolean): string;
  /** The claim of the given keys if they are due (the after-commit kick); planned per call. */
  claimMessagesByKey: string;
  settleClaimedMessages: string;
  purgeDelivered: string;
  purgeDead: string;
  purgeDeliveryCounts: string;
  reclaimPurgedSpace: string;
  takeTransactionId: string;
}

/** Every statement of the store: the drain's and housekeeping's here, operators' and metrics' beside. */
export type OutboxStatements = DrainStatements & OperatorStatements & MetricStatements;

/** How the statements are built beyond the schema. */
export interface StatementOptions {
  /**
   * Whether a delivered message is appended to delivered history at settle (the default) or
   * only deleted. See `OutboxOptions.keepDelivered`.
   */
  keepDelivered?: boolean;
}

export function outboxStatements(
  quotedSchema: string,
  options: StatementOptions = {},
): OutboxStatements {
  const keepDelivered = options.keepDelivered ?? true;
  const messages = `${quotedSchema}.messages`;
  const groups = `${quotedSchema}.delivered_groups`;
  // Destination health's parameters follow delivered history's (see settleParameters).
  const h = keepDelivered ? 15 : 12;
  return {
    ...operatorStatements(quotedSchema),
    ...metricStatements(quotedSchema),
    /**
     * $1 keys, $2 kinds, $3 payloads (JSON text), $4 ordering keys, $5 dedupe keys,
     * $6 max attempts, $7 due times (null = now() + $8 delay ms), $9 destinations.
     *
     * One INSERT for the whole list, so a thousand messages cost one round trip inside the
     * caller's transaction. `due_at` defaults to the transaction's own now(), the same clock the
     * caller's domain write sees, truncated to milliseconds like every time we write from JS, so
     * keyset cursors (which carry JS Dates) compare exactly. On a dedupe-key conflict the no-op update makes RETURNING yield
     * the existing row's key, so the caller learns which message stands for its request.
     */
    enqueueMessages: `
      INSERT INTO ${messages} AS m
        (key, kind, payload, ordering_key, dedupe_key, max_attempts, due_at, destination)
      SELECT i.key, i.kind, i.payload::jsonb, i.ordering_key, i.dedupe_key, i.max_attempts,
        date_trunc('milliseconds', coalesce(i.due_at, now() + i.delay_ms * interval '1 millisecond')),
        i.destination
      FROM unnest($1::uuid[], $2::text[], $3::text[], $4::text[], $5::text[], $6::integer[],
        $7::timestamptz[], $8::bigint[], $9::text[])
        WITH ORDINALITY AS i(key, kind, payload, ordering_key, dedupe_key, max_attempts, due_at,
          delay_ms, destination, position)
      ORDER BY i.position
      ON CONFLICT (dedupe_key) WHERE dedupe_key IS NOT NULL
        DO UPDATE SET dedupe_key = excluded.dedupe_key
      RETURNING m.key, m.dedupe_key, (xmax = 0) AS inserted`,

    claimDueMessages: claimStatements(quotedSchema),
    claimMessagesByKey: claimStatement(quotedSchema, 'keys'),

    /**
     * $1 ids, $2 the row version each claim returned (ctid), $3 each outcome's claim token as a
     * number from 1 into $4 (a group's outcomes come from a few claims, so each token is written
     * and parsed once, not once per outcome), $5 outcomes ('delivered' | 'retry' | 'dead' |
     * 'release'), $6 next due times (retry, release), $7 errors, $8 now, $9 each failed
     * attempt as JSON text (null for other outcomes), $10 each delivery's HTTP status and $11 its
     * duration in ms (nulls for other outcomes); with delivered history also $12 the delivered
     * ids as an int8multirange and $13, $14 their smallest and largest key (see archiveMoved);
     * then (from $12, or $15 with delivered history) destination health's: each outcome's
     * failure flag and Retry-After, the failures that pause, the first and the longest pause in
     * ms (see settleHealthStatements), and $8 again as their now.
     *
     * Destination health is counted here too (destination-statements.ts): a group's failures
     * per destination, pausing those that keep failing, and a delivery resets its destination
     * when it had anything to reset. The statement returns a row for each destination it
     * paused or resumed, beside the stale outcomes' ids.
     *
     * Attempt history is written here too (attempt-log.ts): a retry or a dead letter appends its
     * attempt to the row's attempt_log, and a delivery takes its status and duration into
     * history with the failures before it. A message that never failed has no log, so the
     * happy path writes two small numbers per message more and nothing else.
     *
     * Every outcome of a batch in one statement. The token in the WHERE clause proves this drain
     * still owns each claim: a row whose lease expired and that another drain re-claimed has a
     * new token and is left alone. The statement returns the ids of those stale outcomes.
     * 'release' hands back a row that was claimed but never sent: due now, attempt uncounted.
     *
     * A delivered message leaves the hot table here: deleted from messages (a small WAL record,
     * no new row version, no index entries) and appended to delivered history, one row for the
     * group (unless the outbox keeps no delivered history). One with a dedupe key stays in
     * messages as 'delivered' instead, so its key stays taken until purge.
     * The two writes touch disjoint rows of messages and read the same snapshot.
     *
     * The token alone proves the row is still claimed: a CHECK keeps claim_token null outside
     * 'claimed'. Statistics often date from a quiet moment (a drain's end: pages of dead rows)
     * and make the planner expect one row in messages. A join it could turn around then read
     * all of messages and rescanned the outcomes for each row: a group of 1,200 outcomes took
     * 340 ms instead of 6, and one of a few thousand 11 minutes (docs/benchmarks.md). So each
     * outcome reads its row from the outcome's side, by the ctid its claim returned (a probe of
     * the primary key cost five times as much), and the writes take rows by ctid
     * (test/store/settle-plan.test.ts).
     */
    settleClaimedMessages: `
      WITH o AS (
        SELECT o.id, o.row_id, ($4::uuid[])[o.token] AS claim_token, o.outcome, o.due_at,
          o.error, o.attempt::jsonb AS attempt, o.status, o.ms, coalesce(o.failed, false) AS failed,
          o.retry_after_ms
        FROM unnest($1::bigint[], $2::tid[], $3::integer[], $5::text[], $6::timestamptz[],
          $7::text[], $9::text[], $10::integer[], $11::integer[], $${h}::boolean[],
          $${h + 1}::bigint[])
          AS o(id, row_id, token, outcome, due_at, error, attempt, status, ms, failed,
            retry_after_ms)
      ),
      -- Each outcome's row, if this drain still owns it, read where the claim left it: a TID
      -- scan per outcome, one heap fetch whatever the statistics say. The LATERAL subquery keeps
      -- the outcomes outer (its LIMIT keeps the planner from folding it into a join it may turn
      -- around). A row another drain re-claimed since has a new version elsewhere, and the old
      -- one is no longer visible: the outcome is stale, as is any whose row has moved (VACUUM
      -- FULL rewrote the table), whose lease then runs out and which goes out again.
      owned AS (
        SELECT o.*, o.outcome = 'delivered' AND m.dedupe_key IS NULL AS moves, m.destination
        FROM o CROSS JOIN LATERAL (
          SELECT dedupe_key, destination FROM ${messages} m
          WHERE m.ctid = o.row_id
            AND m.id = o.id
            AND m.claim_token = o.claim_token
          LIMIT 1) m
      ),
      -- The delete and the update take their rows by those ctids (a TID scan, never a scan of
      -- messages) and name the claim token again (the delete: one of this settle's, each
      -- matched to its own row above). A row another drain re-claimed since has a new version
      -- with another token, which the re-check under READ COMMITTED refuses: the outcome is
      -- stale. The ctid alone is not enough: before PostgreSQL's fix dee21ea (minor releases
      -- from 2025 on) a TID scan's re-check did not test the ctid.
      moved AS (
        DELETE FROM ${messages} m
        WHERE m.ctid = ANY (ARRAY(SELECT row_id FROM owned WHERE moves))
          AND m.claim_token = ANY ($4::uuid[])
        RETURNING ${keepDelivered ? ARCHIVED_COLUMNS : 'm.id, m.kind'}
      ),
      ${keepDelivered ? archiveMoved(quotedSchema) : ''}
      -- Anything but a delivery, and a delivered message with a dedupe key. In a group of plain
      -- deliveries there is none, and the update reads nothing.
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
          delivered_at = CASE WHEN o.outcome = 'delivered' THEN $8::timestamptz END,
          dead_at = CASE WHEN o.outcome = 'dead' THEN $8::timestamptz END,
          last_error = CASE WHEN o.outcome IN ('retry', 'dead') THEN o.error ELSE m.last_error END,
          attempt_log = ${appendedAttemptLog('$8::timestamptz')}
        FROM owned o
        WHERE m.ctid = ANY (ARRAY(SELECT row_id FROM owned WHERE NOT moves))
          AND m.ctid = o.row_id
          AND m.claim_token = o.claim_token
          AND NOT o.moves
        RETURNING m.id, m.kind, o.outcome
      ),${settleHealthStatements(quotedSchema, {
        failuresToPause: h + 2,
        pauseMs: h + 3,
        maxPauseMs: h + 4,
        now: 8,
      })}
      counted AS (
        ${countOutcomes(
          quotedSchema,
          `(SELECT kind, 'delivered' AS outcome FROM moved
            UNION ALL SELECT kind, outcome FROM updated)`,
          '$8',
        )}
      )
      -- Only the outcomes that changed nothing (stale: another drain owns the row now), so a
      -- group normally returns no rows at all for the driver to read. Looked for only when
      -- fewer rows changed than there were outcomes: the usual group skips the search. The ids
      -- are read from $1 again rather than from o, which owned is then the only one to read, so
      -- o is not stored.
      SELECT o.id, NULL::text AS destination, NULL::text AS change, NULL::text AS paused_by,
        NULL::timestamptz AS paused_until, NULL::integer AS failures, NULL::text AS last_error
      FROM unnest($1::bigint[]) AS o(id)
      WHERE (SELECT count(*) FROM moved) + (SELECT count(*) FROM updated) < cardinality($1::bigint[])
        AND o.id NOT IN (SELECT id FROM moved UNION ALL SELECT id FROM updated)${HEALTH_CHANGES}`,

    /**
     * $1 delivered before, $2 limit; returns one row: `deleted`, how many messages went, and
     * `taken`, what that cost against the limit (a group a discard emptied counts as one, so a
     * purge of many emptied groups still reaches its limit and runs again). Bounded, oldest
     * first: delivered rows a dedupe key keeps in messages, then history groups while what was
     * taken before each is less than the rest of the limit. A group goes whole, so a statement
     * may delete up to one group's messages past its limit, and a group larger than the limit
     * still goes. SKIP LOCKED on both sides: a purge never waits for a drain, or for another
     * purge or a discard holding a group.
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
      room AS (SELECT count(*) AS kept, $2 - count(*) AS messages FROM kept),
      moved AS (
        DELETE FROM ${groups} h
        WHERE h.id IN (
          SELECT g.id FROM (
            SELECT oldest.id,
              sum(greatest(oldest.size, 1)) OVER (ORDER BY oldest.delivered_at, oldest.id)
                - greatest(oldest.size, 1) AS before
            FROM (
              SELECT id, size, delivered_at FROM ${groups}
              WHERE delivered_at < $1
              ORDER BY delivered_at, id
              LIMIT greatest(0, (SELECT messages FROM room))
              FOR UPDATE SKIP LOCKED) oldest) g
          WHERE g.before < (SELECT messages FROM room))
        RETURNING h.size
      )
      SELECT (room.kept + coalesce((SELECT sum(size) FROM moved), 0))::int AS deleted,
        (room.kept + coalesce((SELECT sum(greatest(size, 1)) FROM moved), 0))::int AS taken
      FROM room`,

    /** $1 dead before, $2 limit. As purgeDelivered, for dead letter. */
    purgeDead: `
      WITH gone AS (
        DELETE FROM ${messages} m
        WHERE m.id IN (
          SELECT id FROM ${messages}
          WHERE dead_at IS NOT NULL AND dead_at < $1
          ORDER BY dead_at, id
          LIMIT $2
          FOR UPDATE SKIP LOCKED)
        RETURNING 1
      )
      SELECT count(*)::int AS deleted, count(*)::int AS taken FROM gone`,

    /**
     * $1 older than. Counters are small, but one row a minute per kind adds up over a year. The
     * minutes deleted are added to outcome_totals in the same statement, so the `_total`
     * counters (readOutcomeTotals: totals plus the minutes kept) read the same before and after,
     * and never go down. Kinds in a fixed order, as the settle's countOutcomes does.
     */
    purgeDeliveryCounts: `
      WITH gone AS (
        DELETE FROM ${quotedSchema}.delivery_counts WHERE minute < $1
        RETURNING kind, delivered, failed, dead
      )
      INSERT INTO ${quotedSchema}.outcome_totals AS t (kind, delivered, failed, dead)
      SELECT kind, sum(delivered), sum(failed), sum(dead) FROM gone
      GROUP BY kind
      ORDER BY kind
      ON CONFLICT (kind) DO UPDATE SET
        delivered = t.delivered + excluded.delivered,
        failed = t.failed + excluded.failed,
        dead = t.dead + excluded.dead`,

    /**
     * No parameters; run after a purge that deleted rows, outside any transaction block, twice
     * with {@link takeTransactionId} between. Makes the space of rows deleted by settle
     * (messages) and purge (both tables) reusable now, instead of at autovacuum's next wake-up
     * (autovacuum_naptime, 60 s by default): until a vacuum, every enqueue and settle extends
     * the files, and files never shrink back. Measured in docs/benchmarks.md, scenario 7.
     * SKIP_LOCKED: a table that another vacuum (autovacuum, a concurrent purge) is working on is
     * skipped rather than waited for. Only a table's owner may vacuum it; any other role gets a
     * warning per table and nothing is done.
     */
    reclaimPurgedSpace: `VACUUM (SKIP_LOCKED) ${messages}, ${groups}`,

    /**
     * No parameters; run between the purge's two VACUUMs. An index page a VACUUM deletes may be
     * handed out again only once every transaction that could still reach it has ended, which
     * PostgreSQL judges by transaction ids: with none taken since, the pages wait for the next
     * VACUUM, and the indexes hold two purges' worth of pages. Taking one (and committing) lets
     * the second VACUUM recycle them at once, when no older transaction is still open.
     */
    takeTransactionId: 'SELECT pg_current_xact_id()',
  };
}
