import { claimStatement, claimStatements } from './claim-statements.js';
import type { DueClaimShape } from './due-claim-shape.js';
import { type MetricStatements, metricStatements } from './metric-statements.js';
import { type OperatorStatements, operatorStatements } from './operator-statements.js';
import { settleStatement } from './settle-statement.js';

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
   * each time; about 6 µs of server CPU per message at batch 100, docs/benchmarks.md). So is a
   * key's share. $6 is the ordering key the walk starts after; with `after`, unkeyed rows after
   * $7 due time, $8 id in due order come first (see claimStatement in claim-statements.ts).
   */
  claimDueMessages(shape: DueClaimShape): string;
  /** The claim of the given keys if they are due (the after-commit kick); planned per call. */
  claimMessagesByKey: string;
  /** The settle (settle-statement.ts): without destination health, and with it. */
  settleClaimedMessages: string;
  settleClaimedMessagesWithHealth: string;
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
  const destinations = `${quotedSchema}.destinations`;
  const groups = `${quotedSchema}.delivered_groups`;
  return {
    ...operatorStatements(quotedSchema),
    ...metricStatements(quotedSchema),
    /**
     * $1 keys, $2 kinds, $3 payloads (JSON text), $4 ordering keys, $5 dedupe keys,
     * $6 max attempts, $7 due times (null = now() + $8 delay ms), $9 destinations, $10
     * traceparents and $11 tracestates (each null when no message has one: unnest pads a
     * missing array with nulls).
     *
     * One INSERT for the whole list, so a thousand messages cost one round trip inside the
     * caller's transaction. `due_at` defaults to the transaction's own now(), the same clock the
     * caller's domain write sees, truncated to milliseconds like every time we write from JS, so
     * keyset cursors (which carry JS Dates) compare exactly. On a dedupe-key conflict the no-op update makes RETURNING yield
     * the existing row's key, so the caller learns which message stands for its request.
     *
     * A message for a destination whose pause is open is due at the pause's end at the
     * earliest (parked, as the pause parked the messages waiting when it opened), so claims do
     * not step over it at the head of due order while the pause lasts. Its destination is looked
     * up only when some pause is open (one probe of destinations_paused per statement): the
     * happy path reads nothing else.
     */
    enqueueMessages: `
      INSERT INTO ${messages} AS m
        (key, kind, payload, ordering_key, dedupe_key, max_attempts, due_at, destination,
         traceparent, tracestate)
      SELECT i.key, i.kind, i.payload::jsonb, i.ordering_key, i.dedupe_key, i.max_attempts,
        greatest(
          date_trunc('milliseconds', coalesce(i.due_at, now() + i.delay_ms * interval '1 millisecond')),
          CASE WHEN i.destination IS NOT NULL
              AND (SELECT EXISTS (SELECT 1 FROM ${destinations} WHERE paused_until > now()))
            THEN (SELECT d.paused_until FROM ${destinations} d
              WHERE d.destination = i.destination AND d.paused_until > now()) END),
        i.destination, i.traceparent, i.tracestate
      FROM unnest($1::uuid[], $2::text[], $3::text[], $4::text[], $5::text[], $6::integer[],
        $7::timestamptz[], $8::bigint[], $9::text[], $10::text[], $11::text[])
        WITH ORDINALITY AS i(key, kind, payload, ordering_key, dedupe_key, max_attempts, due_at,
          delay_ms, destination, traceparent, tracestate, position)
      ORDER BY i.position
      ON CONFLICT (dedupe_key) WHERE dedupe_key IS NOT NULL
        DO UPDATE SET dedupe_key = excluded.dedupe_key
      RETURNING m.key, m.dedupe_key, (xmax = 0) AS inserted`,

    claimDueMessages: claimStatements(quotedSchema),
    claimMessagesByKey: claimStatement(quotedSchema, 'keys'),

    settleClaimedMessages: settleStatement(quotedSchema, keepDelivered, false),
    settleClaimedMessagesWithHealth: settleStatement(quotedSchema, keepDelivered, true),

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
