/**
 * The statements of replay (src/core/replay.ts): the walk's bounds, a stretch's count and sample,
 * a stretch's replay, and the audit rows (migrations/0008_replays.sql).
 *
 * A replay walks the selection in stretches of ids, {@link REPLAY_WINDOW_IDS} at a time, in id
 * order, each stretch one statement. A stretch reads at most that many ids from messages (on the
 * primary key) and the history groups whose ids overlap it (on delivered_groups_ids), so no
 * statement's work grows with the table, and no transaction spans two of them. In id order, a
 * replayed head of an ordering key is back before its followers are: the claim then lets none of
 * them pass it.
 *
 * Parameters shared by the count and the replay of a stretch (see {@link selectionParameters}):
 * $1 kinds, $2 destination (LIKE-escaped), $3 ordering keys, $4 error text (as typed),
 * $5 since, $6 until, $7 ids, $8 the stretch's start (exclusive), $9 its end (inclusive).
 */
import { resentAttemptLog } from './attempt-log.js';
import { lastErrorContains } from './message-filter-sql.js';

/**
 * Ids per stretch: counting 10,000 rows of messages by primary key, or the groups holding 10,000
 * ids of history, stays far under the 1 s any one statement may take (docs/replay.md,
 * "Measured"), and a walk over a million ids is a hundred statements.
 */
export const REPLAY_WINDOW_IDS = 10_000n;

/**
 * Where a resend gets a delivered message's columns from history: messages' column, and its value
 * from the message (alias a, a `delivered_message`). The attempt count, due time and state are
 * the resend's own (fresh attempts, due now, pending); everything else a message kept when it
 * moved to history comes back from here, so a column added to both goes in this one list.
 */
export const RESENT_FROM_HISTORY: readonly (readonly [column: string, value: string])[] = [
  ['id', 'a.id'],
  ['key', 'a.key'],
  ['kind', 'a.kind'],
  ['payload', 'a.payload'],
  ['ordering_key', 'a.ordering_key'],
  ['max_attempts', 'a.max_attempts'],
  ['last_error', 'a.last_error'],
  ['created_at', 'a.created_at'],
  ['attempt_log', resentAttemptLog('a.group_delivered_at')],
  ['traceparent', 'a.traceparent'],
  ['tracestate', 'a.tracestate'],
];

/**
 * The selection's filter over a message (alias `x`) at time `at` (dead_at or the delivered
 * time), inside the stretch. A destination is a webhook URL's prefix once the scheme is cut
 * off, or text in an email's recipients; both compare without regard to case.
 */
function matches(x: string, at: string): string {
  return `($1::text[] IS NULL OR ${x}.kind = ANY($1::text[]))
        AND ($2::text IS NULL OR CASE WHEN jsonb_typeof(${x}.payload -> 'url') = 'string'
          THEN regexp_replace(${x}.payload ->> 'url', '^[A-Za-z][A-Za-z0-9+.-]*://', '')
            ILIKE $2 || '%'
          ELSE concat_ws(' ', ${x}.payload ->> 'to', ${x}.payload ->> 'cc', ${x}.payload ->> 'bcc')
            ILIKE '%' || $2 || '%' END)
        AND ($3::text[] IS NULL OR ${x}.ordering_key = ANY($3::text[]))
        AND ($4::text IS NULL OR ${lastErrorContains(x, '$4::text')})
        AND ($5::timestamptz IS NULL OR ${at} >= $5)
        AND ($6::timestamptz IS NULL OR ${at} < $6)
        AND ($7::bigint[] IS NULL OR ${x}.id = ANY($7::bigint[]))
        AND ${x}.id > $8::bigint AND ${x}.id <= $9::bigint`;
}

/** History's messages (alias h) in groups (alias g) whose ids overlap the stretch. */
function historyInStretch(groups: string): string {
  return `${groups} g CROSS JOIN LATERAL unnest(g.messages) h
        WHERE g.ids && int8multirange(int8range($8::bigint, $9::bigint, '(]'))`;
}

/** A sample row as the store reads it. */
function sampleOf(x: string): string {
  return `jsonb_build_object('id', ${x}.id::text, 'key', ${x}.key, 'kind', ${x}.kind,
          'orderingKey', ${x}.ordering_key, 'lastError', left(${x}.last_error, 200))`;
}

/** The first $11 matches in messages in `state` (dead or delivered, kept by a dedupe key). */
function firstInMessages(messages: string, state: 'dead' | 'delivered'): string {
  return `
        SELECT m.id FROM ${messages} m
        WHERE m.state = '${state}' AND ${matches('m', `m.${state}_at`)}
        ORDER BY m.id LIMIT $11
      `;
}

/**
 * The end of both replay statements: `done` (the ids replayed) added to audit row $12, and the
 * one row the store reads: how many were replayed, the last of them, and how far `chosen` read.
 */
function auditedAndReported(replays: string): string {
  return `audited AS (
        UPDATE ${replays} SET replayed = replayed + (SELECT count(*) FROM done) WHERE id = $12
      )
      SELECT (SELECT count(*) FROM done) AS replayed, (SELECT max(id) FROM done)::text AS last_id,
        (SELECT count(*) FROM chosen) AS chosen, (SELECT max(id) FROM chosen)::text AS last_chosen`;
}

export interface ReplayStatements {
  readDeadBounds: string;
  readDeliveredBounds: string;
  countDeadStretch: string;
  countDeliveredStretch: string;
  replayDeadStretch: string;
  resendDeliveredStretch: string;
  insertReplayAudit: string;
  finishReplayAudit: string;
  listReplayAudits: string;
}

export function replayStatements(quotedSchema: string): ReplayStatements {
  const messages = `${quotedSchema}.messages`;
  const groups = `${quotedSchema}.delivered_groups`;
  const replays = `${quotedSchema}.replays`;
  const resentColumns = RESENT_FROM_HISTORY.map(([column]) => column).join(', ');
  const resentValues = RESENT_FROM_HISTORY.map(([, value]) => value).join(', ');
  return {
    /** The ids messages holds now, smallest and largest (primary key ends: two probes). */
    readDeadBounds: `SELECT min(id)::text AS low, max(id)::text AS high FROM ${messages}`,

    /**
     * The same over messages and history. History's ends read every group's ids: one row per
     * settle, not per message, so about a thousandth of the rows delivered (at batch 100 up to
     * a hundredth).
     */
    readDeliveredBounds: `
      SELECT least(m.low, h.low)::text AS low, greatest(m.high, h.high)::text AS high
      FROM (SELECT min(id) AS low, max(id) AS high FROM ${messages}) m,
        (SELECT min(lower(ids)) AS low, max(upper(ids)) - 1 AS high FROM ${groups}) h`,

    /** $1 to $9, $10 sample size: dead matches in the stretch, and the first few. */
    countDeadStretch: `
      SELECT
        (SELECT count(*) FROM ${messages} m
         WHERE m.state = 'dead' AND ${matches('m', 'm.dead_at')}) AS matched,
        (SELECT coalesce(jsonb_agg(s.one ORDER BY s.id), '[]') FROM (
           SELECT m.id, ${sampleOf('m')} AS one FROM ${messages} m
           WHERE m.state = 'dead' AND ${matches('m', 'm.dead_at')}
           ORDER BY m.id LIMIT $10) s) AS sample`,

    /**
     * $1 to $9, $10 sample size: delivered matches in the stretch, kept in messages by a dedupe
     * key or in history, and the first few.
     */
    countDeliveredStretch: `
      WITH hits AS (
        SELECT m.id, ${sampleOf('m')} AS one FROM ${messages} m
        WHERE m.state = 'delivered' AND ${matches('m', 'm.delivered_at')}
        UNION ALL
        SELECT h.id, ${sampleOf('h')} FROM ${historyInStretch(groups)}
          AND ${matches('h', 'g.delivered_at')}
      )
      SELECT (SELECT count(*) FROM hits) AS matched,
        (SELECT coalesce(jsonb_agg(s.one ORDER BY s.id), '[]')
         FROM (SELECT id, one FROM hits ORDER BY id LIMIT $10) s) AS sample`,

    /**
     * $1 to $9, $10 now, $11 limit, $12 audit row: up to $11 dead matches of the stretch back to
     * pending, in id order, with a fresh set of attempts, due now, key and id kept; and their
     * count added to the audit row in the same statement. The update checks `state = 'dead'`
     * again on the row's newest version, so a message an operator retried or discarded
     * meanwhile is not counted. chosen and last_chosen say how far the stretch was read.
     */
    replayDeadStretch: `
      WITH chosen AS (${firstInMessages(messages, 'dead')}),
      done AS (
        UPDATE ${messages} m SET state = 'pending', attempts = 0, due_at = $10, dead_at = NULL
        WHERE m.id = ANY(ARRAY(SELECT id FROM chosen)) AND m.state = 'dead'
        RETURNING m.id
      ),
      ${auditedAndReported(replays)}`,

    /**
     * $1 to $9, $10 now, $11 limit, $12 audit row: up to $11 delivered matches of the stretch
     * sent again, in id order, with a fresh set of attempts, due now, id and key kept. One kept
     * in messages by its dedupe key goes back to pending there. One in history leaves its group
     * (written again without it, as a discard does) and returns to messages as it was before
     * delivery ({@link RESENT_FROM_HISTORY}), pending. The groups are locked (FOR UPDATE OF g),
     * so a discard or another replay in the same group waits, and then this one reads the
     * group's newest version: no message is restored that a discard just took out. Counted
     * into the audit row in the same statement.
     */
    resendDeliveredStretch: `
      WITH live AS (${firstInMessages(messages, 'delivered')}),
      archived AS (
        SELECT h.*, g.id AS group_id, g.delivered_at AS group_delivered_at
        FROM ${historyInStretch(groups)}
          AND ${matches('h', 'g.delivered_at')}
        ORDER BY h.id LIMIT $11
        FOR UPDATE OF g
      ),
      chosen AS (
        SELECT id, false AS archived FROM live
        UNION ALL SELECT id, true FROM archived
        ORDER BY id LIMIT $11
      ),
      reopened AS (
        UPDATE ${messages} m SET state = 'pending', attempts = 0, due_at = $10, delivered_at = NULL
        WHERE m.id = ANY(ARRAY(SELECT id FROM chosen WHERE NOT archived))
          AND m.state = 'delivered'
        RETURNING m.id
      ),
      -- The chosen of history: those up to the last chosen id (ids are unique across both
      -- sides). A comparison with one value, not a join with chosen: a prepared statement's
      -- generic plan estimates each CTE at one row and joined the two in a nested loop, 3 s
      -- for a batch of 5,000 (docs/replay.md, "Measured").
      leaving AS (
        SELECT a.* FROM archived a WHERE a.id <= (SELECT max(id) FROM chosen)
      ),
      regrouped AS (
        UPDATE ${groups} g SET (messages, size) = (
          SELECT coalesce(array_agg(kept), ARRAY[]::${quotedSchema}.delivered_message[]),
            count(*)
          FROM unnest(g.messages) kept WHERE kept.id <> ALL(t.ids))
        FROM (SELECT group_id, array_agg(id) AS ids FROM leaving GROUP BY group_id) t
        WHERE g.id = t.group_id
      ),
      restored AS (
        INSERT INTO ${messages} (${resentColumns}, attempts, due_at, state)
        OVERRIDING SYSTEM VALUE
        SELECT ${resentValues}, 0, $10, 'pending' FROM leaving a
        RETURNING id
      ),
      done AS (SELECT id FROM reopened UNION ALL SELECT id FROM restored),
      ${auditedAndReported(replays)}`,

    /** $1 requested by, $2 started, $3 finished or null, $4 selection, $5 dry run, $6 matched, $7 outcome. */
    insertReplayAudit: `
      INSERT INTO ${replays}
        (requested_by, started_at, finished_at, selection, dry_run, matched, outcome)
      VALUES ($1, $2, $3, $4::jsonb, $5, $6, $7)
      RETURNING id::text AS id`,

    /** $1 id, $2 outcome, $3 now: closes a running row; a closed one stays as it is. */
    finishReplayAudit: `
      UPDATE ${replays} SET outcome = $2, finished_at = $3
      WHERE id = $1 AND outcome = 'running'`,

    /**
     * $1 limit, $2 before this id or null: newest first, on the primary key. Ordered by the
     * table's bigint id, not the text column of the same name (`ORDER BY id` would take the
     * output column and put 9 after 27).
     */
    listReplayAudits: `
      SELECT r.id::text AS id, requested_by, started_at, finished_at, selection, dry_run,
        matched, replayed, outcome
      FROM ${replays} r
      WHERE $2::bigint IS NULL OR r.id < $2
      ORDER BY r.id DESC
      LIMIT $1`,
  };
}
