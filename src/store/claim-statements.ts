/**
 * The drain's claim: due rows, head of their ordering key, locked with SKIP LOCKED and leased in
 * one statement. Built per schema and limit by outboxStatements (statements.ts).
 */

import { cursorCte, scanFromCursor } from './claim-cursor.js';
import { headsScans, headsWindows } from './claim-heads.js';
import { probeStatement } from './claim-probes.js';
import { firstKeyStatement, keyedClaimFlags, keyedRunsStatement } from './claim-walk.js';
import { type DueClaimShape, dueClaimMark, dueClaimName, dueParameter } from './due-claim-shape.js';
import { CLAIMED_COLUMNS } from './message-columns.js';
import { countOutcomes } from './outcome-counts.js';

/**
 * A destination's health as destinationHealth reads it: failures but not paused, or paused
 * (open or half-open).
 */
const FAILING = 1;
const PAUSED = 2;

/** Claim texts kept per limit; past this many distinct limits, the kept ones are forgotten. */
const CLAIM_TEXTS_KEPT = 16;

/** The due-rows claim by limit, share, cursor and probes, each text built once. */
export function claimStatements(quotedSchema: string): (shape: DueClaimShape) => string {
  const texts = new Map<string, string>();
  return (shape) => {
    const name = dueClaimName(shape);
    let text = texts.get(name);
    if (text === undefined) {
      if (texts.size >= CLAIM_TEXTS_KEPT) texts.clear();
      text = claimStatement(quotedSchema, shape);
      texts.set(name, text);
    }
    return text;
  };
}

/**
 * $1 now, $2 claim token, $3 lease ms, $4 whether a dead message blocks later messages with
 * its ordering key, $5 the kinds this drain has senders for (a drain never claims what it
 * cannot send); by key also $6 the keys and $7 the limit; a due claim also those of
 * DUE_PARAMETERS its shape reads (due-claim-shape.ts): walking the keys the walk's start and the
 * rows the drain holds, after a cursor its due time and id.
 *
 * A due claim that takes heads (DueClaimShape.keyed, claim-heads.ts) scans one due order instead,
 * messages_claimable, keyed rows and unkeyed alike: a keyed row only while it is its key's head
 * (the kick's check below, made after the row's lock), within a window of the due order, locked
 * SKIP LOCKED like any row as the scan reads it.
 *
 * A due claim takes two kinds of rows, merged by due time up to the limit. Rows without an
 * ordering key come in due order from messages_claimable_unkeyed. Rows with one come as runs
 * from a walk of the keys (claim-walk.ts): each key's head and the claimable followers right
 * behind it, up to a share per key, so the drain sends a run in order in one lane. The merge
 * takes every unkeyed row and every key's first share before any key's second, so one deep key
 * cannot fill a claim while others wait.
 *
 * After a cursor, the unkeyed rows after it in due order come first, and only if they do not
 * fill the batch are rows from the start of the due order taken too. Settle deletes delivered
 * rows, but their index entries stay at the head of the index until a vacuum removes them, and
 * a scan from the start steps over every one: with 290,000 delivered since the last vacuum a
 * claim of 100 took 6.0 ms from the start and 3.3 ms from the cursor (docs/benchmarks.md,
 * scenario 10). Starting at the cursor skips them; the second scan runs only when the first
 * comes back short (a LIMIT of 0 never starts its scan), so a short claim has still looked at
 * every due row, and the drain's rule that a short claim means nothing more was due holds.
 *
 * FOR UPDATE SKIP LOCKED: overlapping drains each lock different rows and never wait on each
 * other; a row another drain is claiming right now is simply not ours. The UPDATE in the same
 * statement makes the claim visible the moment this statement commits, with a fresh token
 * and a lease (lease_expires_at = now + lease), and counts the attempt. A claimed row whose
 * lease has passed is claimable again (its drain died). A row whose attempts are already
 * spent (its final drain died holding it) is set aside as dead here instead of being sent
 * again. (Its lost attempt is not written to attempt history here: a CASE per claimed row
 * cost the happy path about 1.5% of its server CPU, docs/benchmarks.md, "Attempt history,
 * measured"; history shows it as a gap in the attempt numbers.) The kick's claim by key and
 * the probes check each keyed row's head instead of walking: nothing earlier with its key may
 * still be pending or claimed (or dead, when dead heads block).
 *
 * The UPDATE changes no indexed column and no column of an index predicate (state,
 * attempts, token, claimed_at and the lease are in none), so with room on the page it is a
 * HOT update: one small row version, no index entries. due_at keeps the due time, so rows
 * claimed right now stay at the head of the due order and the scan steps over them;
 * they are at most the batches in flight.
 */
export function claimStatement(quotedSchema: string, target: DueClaimShape | 'keys'): string {
  if (target !== 'keys') {
    const { limit, share } = target;
    if (!(Number.isSafeInteger(limit) && limit > 0)) {
      throw new RangeError(`claim limit must be a whole number above 0, got ${limit}`);
    }
    if (!(Number.isSafeInteger(share) && share > 0 && share <= limit)) {
      throw new RangeError(
        `a key's share must be a whole number from 1 to the limit, got ${share}`,
      );
    }
  }
  const messages = `${quotedSchema}.messages`;
  const destinations = `${quotedSchema}.destinations`;
  const orderingHead = `(m.ordering_key IS NULL OR NOT EXISTS (
        SELECT 1 FROM ${messages} earlier
        WHERE earlier.ordering_key = m.ordering_key
          AND earlier.id < m.id
          AND (earlier.state IN ('pending', 'claimed')
            OR (earlier.state = 'dead' AND $4::boolean))
          -- Implied by the line above, but spelled out so the planner can use the partial
          -- index messages_ordering_unfinished.
          AND earlier.delivered_at IS NULL))`;
  // Unfinished, due (or its lease passed), of a kind this drain sends. `at`: the alias of a
  // claim_now row the query joins in, read as columns (see KeyedRunsParts.claimable).
  const due = (a: string, at?: string) => {
    const dueBy = claimNow('now', at);
    const sent = claimNow('kinds', at);
    return `${a}.delivered_at IS NULL AND ${a}.dead_at IS NULL
      AND ${a}.due_at <= ${dueBy}
      AND (${a}.state = 'pending' OR (${a}.state = 'claimed' AND ${a}.lease_expires_at <= ${dueBy}))
      AND ${a}.kind = ANY(${sent})`;
  };
  // Rows a claim may take, in due order: due, heads of their ordering key (`keyed` 'head'),
  // without a key ('none'), or either, with the key for a head check after the lock ('any');
  // locked, skipping rows another claim holds. With `health`, also not of a paused destination
  // (destinationHealth), and `watched`: the row's destination has failures.
  const candidates = (
    where: string,
    limit: string,
    health: boolean,
    keyed: 'head' | 'none' | 'any' = 'head',
  ) => `
    SELECT m.id, m.kind, m.destination, m.due_at, m.attempts >= m.max_attempts AS exhausted${
      health ? `, h.health = ${FAILING} AS watched` : ''
    }${keyed === 'any' ? ', m.ordering_key' : ''}
    FROM ${messages} m${health ? destinationHealth(destinations) : ''}
    WHERE ${due('m')}
      ${where}${
        keyed === 'any'
          ? ''
          : `
      AND ${keyed === 'head' ? orderingHead : 'm.ordering_key IS NULL'}`
      }${
        health
          ? `
      AND h.health IS DISTINCT FROM ${PAUSED}`
          : ''
      }
    ORDER BY m.due_at, m.id
    LIMIT ${limit}
    FOR UPDATE OF m SKIP LOCKED`;
  let dueCtes: string;
  // Due claims with keyed rows: whether one of the runs taken goes on behind its last row.
  let runsGoOn: string | undefined;
  // Due claims taking heads: whether the claim came back short with rows left unread.
  let heldBack: string | undefined;
  if (target === 'keys') {
    dueCtes = `due AS (${candidates('AND m.key = ANY($6::uuid[])', '$7', true)}
  ),`;
  } else {
    const { limit, keyed = 'walk' } = target;
    const cursor = target.after ? cursorCte(messages, target) : '';
    // The scan of the due order into the CTE `unkeyed`, from the cursor where there is one.
    // (Claims taking heads scan with windows of their own: headsScans, claim-heads.ts.)
    const dueOrder = (rows: (where: string, rows: string) => string) =>
      target.after
        ? scanFromCursor('unkeyed', limit, rows)
        : `unkeyed AS (${rows('', String(limit))}
  ),`;
    if (keyed === 'heads') {
      const windows = headsWindows(messages, limit, target.after, claimNow('now'));
      heldBack = windows.heldBack;
      const scans = headsScans(
        {
          lockedInDueOrder: (where, rows) => candidates(where, String(rows), true, 'any'),
          isHead: orderingHead,
        },
        limit,
        target.after,
      );
      dueCtes = `${cursor}${windows.ctes}${scans}
  due AS (SELECT id, kind, destination, exhausted, watched FROM heads),`;
    } else {
      // A paused destination's messages wait (docs/destinations.md), open or half-open: the
      // probe of a half-open one is taken apart (probeStatement).
      const unkeyedRows = (where: string, rows: string) => candidates(where, rows, true, 'none');
      const unkeyed = `${cursor}${dueOrder(unkeyedRows)}`;
      const runs = keyed === 'walk' ? keyedRuns(messages, destinations, due, target) : undefined;
      runsGoOn = runs?.runsGoOn;
      dueCtes = runs
        ? `${unkeyed}${runs.ctes}`
        : // $4 (whether dead heads block) has no keyed rows to act on here; it is read so that
          // it has a type.
          `${unkeyed}
  due AS (SELECT id, kind, destination, exhausted, watched FROM unkeyed
    WHERE ($4::boolean OR true)),`;
    }
  }
  // Probes only where the drain asks (a due claim now and then): the other claims do not pay
  // for the lookup and the destinations write. The after-commit kick never probes.
  const probing = target !== 'keys' && target.probe === true;
  const probes = probing
    ? probeStatement(
        messages,
        destinations,
        candidates('AND m.destination = d.destination', '1', false),
      )
    : '';
  const taken = probing
    ? 'SELECT id FROM due UNION ALL SELECT id FROM probe WHERE id IS NOT NULL'
    : 'SELECT id FROM due';
  const ctes = `
  WITH RECURSIVE claim_now AS MATERIALIZED (SELECT $1::timestamptz AS now, $5::text[] AS kinds,
    -- Whether any destination has failures or a pause: with none, no row the scan meets looks
    -- its destination up (destinations_watched holds only those rows).
    EXISTS (SELECT 1 FROM ${destinations} WHERE failures > 0 OR paused_until IS NOT NULL)
      AS watching),
  ${dueCtes}${probes}
  -- Rows whose attempts are spent are set aside below; they are counted here, from due, so the
  -- update's rows go straight to the client.
  counted AS (
    ${countOutcomes(quotedSchema, `(SELECT kind, 'dead' AS outcome FROM due WHERE exhausted${probing ? " UNION ALL SELECT kind, 'dead' FROM probe WHERE exhausted" : ''})`, '$1')}
  )`;
  const update = `
  UPDATE ${messages} m SET
    state = CASE WHEN m.attempts >= m.max_attempts THEN 'dead' ELSE 'claimed' END,
    attempts = least(m.attempts + 1, m.max_attempts),
    claim_token = CASE WHEN m.attempts >= m.max_attempts THEN NULL ELSE $2::uuid END,
    claimed_at = CASE WHEN m.attempts >= m.max_attempts THEN NULL ELSE $1 END,
    lease_expires_at = CASE WHEN m.attempts >= m.max_attempts THEN NULL
      ELSE $1::timestamptz + $3 * interval '1 millisecond' END,
    dead_at = CASE WHEN m.attempts >= m.max_attempts THEN $1 END,
    last_error = CASE WHEN m.attempts >= m.max_attempts
      THEN 'attempts exhausted: the final attempt''s lease expired without an outcome '
        || '(the drain crashed or was killed); previous error: '
        || coalesce(m.last_error, 'none')
      ELSE m.last_error END
  -- = ANY(ARRAY(...)) rather than a join: on a small table the planner hashed a join
  -- against a full scan; this always probes the primary key (docs/benchmarks.md).
  WHERE m.id = ANY(ARRAY(${taken}))
  -- In the primary key's order, not due order: the store sorts them (see
  -- PostgresOutboxStore.claim). row_id: where this update left the row (the new version's
  -- ctid), which the settle reads without an index probe. payload_bytes: the payload's stored
  -- size, which bounds a settle write. due_ms: the due time as epoch milliseconds, a float the driver reads without
  -- parsing a date; the last row's in due order, with its id, is where the next claim's scan
  -- may start. watched: its destination has failures or a pause (a probe's), so its settle
  -- keeps destination health; the others' settles skip it (each watched destination listed
  -- once: with a copy per row, a claim of 1,000 to one failing destination spent 0.7 ms more).
  RETURNING ${CLAIMED_COLUMNS}, m.ctid AS row_id, pg_column_size(m.payload) AS payload_bytes,
    date_part('epoch', m.due_at) * 1000 AS due_ms,
    m.destination = ANY(ARRAY(SELECT DISTINCT destination FROM due WHERE watched${
      probing ? ' UNION SELECT destination FROM probe WHERE id IS NOT NULL' : ''
    })) AS watched${
      probing
        ? `,
    m.id = ANY(ARRAY(SELECT id FROM probe WHERE id IS NOT NULL)) AS probe`
        : ''
    }`;
  if (target === 'keys') return `${ctes}${update}`;
  const flags =
    runsGoOn !== undefined
      ? keyedClaimFlags(target, runsGoOn, messages)
      : heldBack !== undefined
        ? `(${firstKeyStatement(messages)}) IS NULL AS keyless, ${heldBack} AS held_back`
        : `(${firstKeyStatement(messages)}) IS NOT NULL AS keyed_waiting`;
  const mark = `
  ${dueClaimMark(target)}`;
  if (!target.answersWhenEmpty)
    return `${ctes}${update},
    ${flags}${mark}`;
  // One row even when the update took none (its columns null but the flags), so an empty claim
  // still says whether a keyed message waits (see DueClaims, due-claim.ts).
  return `${ctes},
  claimed AS (${update})
  SELECT c.*, ${flags}
  FROM (VALUES (true)) one(x) LEFT JOIN claimed c ON true${mark}`;
}

/**
 * A column of claim_now, which holds now and the kinds rather than bare parameters: of `at`, the
 * alias of a claim_now row the query joins in, or else by a scalar subquery (the kinds' cast, so
 * `= ANY(...)` reads an array, not a subquery's rows).
 */
function claimNow(column: 'now' | 'kinds' | 'watching', at?: string): string {
  const cast = column === 'kinds' ? '::text[]' : '';
  return at === undefined ? `(SELECT ${column} FROM claim_now)${cast}` : `${at}.${column}`;
}

/**
 * The keyed half of a due claim after its `unkeyed` CTE: the walk of the keys (claim-walk.ts),
 * `chosen` (the unkeyed rows and the runs, merged in turns up to the limit), the runs locked, and
 * `due`. `due` is the claim's test of a row of the given alias being due.
 */
function keyedRuns(
  messages: string,
  destinations: string,
  due: (alias: string, at?: string) => string,
  shape: DueClaimShape,
): { ctes: string; runsGoOn: string } {
  const { limit, share } = shape;
  const paused = (a: string, at?: string) => {
    const watching = claimNow('watching', at);
    return `(CASE WHEN ${a}.destination IS NOT NULL AND ${watching} THEN (
          SELECT d.paused_until IS NOT NULL FROM ${destinations} d
          WHERE d.destination = ${a}.destination) END)`;
  };
  const { walk, lockRuns, runsGoOn } = keyedRunsStatement(
    messages,
    {
      now: claimNow('now'),
      claimable: (a, at) => `${due(a, at)}
        AND ${paused(a, at)} IS NOT TRUE`,
      lockById: (ids) => `
    SELECT m.id, m.kind, m.destination, m.attempts >= m.max_attempts AS exhausted,
      h.health = ${FAILING} AS watched
    FROM ${messages} m${destinationHealth(destinations)}
    WHERE m.id = ANY(${ids}) AND ${due('m')}
      AND h.health IS DISTINCT FROM ${PAUSED}
    FOR UPDATE OF m SKIP LOCKED`,
      parameter: (name) => dueParameter(shape, name),
      unkeyedCount: '(SELECT count(*) FROM unkeyed)',
    },
    { limit, share, moreShares: shape.sharesOnly !== true },
  );
  // Every unkeyed row and every key's first share sort before any key's second share; in a
  // share, by due time (a run by its head's). A key's rows stay in run order, so the cut at the
  // limit keeps a prefix of each run.
  const ctes = `${walk}
  chosen AS MATERIALIZED (
    SELECT id, step, k, ord, behind FROM (
      SELECT id, NULL::integer AS step, NULL::text AS k, 1::bigint AS ord, 0::bigint AS share,
        due_at AS sort_due, NULL::bigint AS behind
      FROM unkeyed
      UNION ALL
      SELECT id, step, k, ord, (ord - 1) / ${share}, head_due, behind FROM keyed) c
    ORDER BY share, sort_due, step, ord
    LIMIT ${limit}
  ),${lockRuns}
  due AS (
    SELECT id, kind, destination, exhausted, watched FROM unkeyed
    WHERE id IN (SELECT id FROM chosen WHERE k IS NULL)
    UNION ALL
    SELECT id, kind, destination, exhausted, watched FROM locked_runs
  ),`;
  return { ctes, runsGoOn };
}

/**
 * Each candidate row's destination health, `h.health`: PAUSED, FAILING (failures, not
 * paused), 0 neither; null when the row has no destination, its destination has no row, or no
 * destination has failures or a pause at all (claim_now.watching: then no row looks its
 * destination up, and the happy path pays nothing).
 *
 * A LATERAL subquery holding a scalar subquery (OFFSET 0 keeps the planner from folding it into
 * the row's filter and its select list, which would look each row up twice): a nested loop,
 * which keeps the scan in due order and stopping at the limit, and which PostgreSQL memoizes by
 * destination, so a claim of 100 over 4 destinations reads destinations 4 times, and one that
 * steps over 11,000 rows of 1,000 paused destinations 1,004 times. It replaced a hashed NOT IN
 * over the paused destinations plus a hashed IN over the watched ones: with 1,000 paused, the
 * two hashes cost each claim about 0.6 ms, half again a claim with none paused. A scalar
 * subquery in the filter instead probes once per row stepped over: 27 ms a claim over those
 * 11,000 (docs/benchmarks.md, scenario 13).
 */
function destinationHealth(destinations: string): string {
  return ` CROSS JOIN LATERAL (
      SELECT CASE WHEN m.destination IS NOT NULL AND ${claimNow('watching')} THEN (
          SELECT CASE WHEN d.paused_until IS NOT NULL THEN ${PAUSED}
            WHEN d.failures > 0 THEN ${FAILING} ELSE 0 END
          FROM ${destinations} d WHERE d.destination = m.destination) END AS health
      OFFSET 0) h`;
}
