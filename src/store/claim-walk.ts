/**
 * The keyed half of the due claim: runs of consecutive messages per ordering key, found by
 * walking the keys instead of the due order (docs/benchmarks.md, section 11). Part of the one
 * claim statement that claimStatement (claim-statements.ts) builds.
 *
 * Why a walk: a message behind its key's head may not go before the head finishes, and in due
 * order the held-back rows sit among the claimable ones, so a claim that scans due order and
 * checks each row's head reads the whole backlog of the busy keys for every claim (one key of
 * 5,000: 47.5 ms of server CPU per message). The walk visits each key once, at its head, through
 * messages_ordering_unfinished (ordering_key, id): one descent finds the next key and its head
 * (a loose index scan), and only a key whose head is claimable has its followers read. Held
 * back rows are never read, so the walk costs the keys it visits and the rows it takes,
 * whatever the backlog behind them.
 */

import type { DueClaimShape } from './due-claim-shape.js';

/** The pieces of the claim statement the walk reads, as claim-statements.ts builds them. */
export interface KeyedRunsParts {
  /** The claim's now. */
  now: string;
  /**
   * Whether the row of the given alias may be claimed now, its head's order aside. `claimNow`:
   * the alias of a claim_now row the query joins in, whose columns it reads instead of a scalar
   * subquery for each (with one per use, the walk's copies of the test held 39 of the claim's
   * 97 subplans, each planned, and started on every run).
   */
  claimable: (alias: string, claimNow?: string) => string;
  /** The FOR UPDATE select of claimable rows by id, with kind, destination, exhausted and watched. */
  lockById: (ids: string) => string;
  /** How many rows without an ordering key the claim found (they take turns with the runs). */
  unkeyedCount: string;
  /** The placeholder of one of the due claim's parameters. */
  parameter: (name: 'walkStart' | 'heldKeys' | 'heldFirst' | 'heldLast' | 'heldTokens') => string;
}

/**
 * CTEs `held`, `walk`, `keyed_more`, `keyed`, and after the caller's `unkeyed` and `chosen`,
 * `locked_runs`: see {@link keyedRunsStatement}. The walk starts after `walkStart`, the key the
 * last claim's walk took last (null: the first key).
 *
 * - held: the runs the drain holds (ClaimRequest.holding) whose last row is still claimed under
 *   the token given, with its lease live: only these may be continued.
 * - walk: the keys in order from the one after walkStart, wrapping round to the first and ending
 *   at walkStart itself, each with its claimable run of up to `share` rows: its head if
 *   claimable (due, not dead, not held by a live lease, of a kind this drain sends, its
 *   destination not paused), then the followers right behind it while each is claimable too. A
 *   key whose head is not claimable but lies within a held run of this drain continues that
 *   run: the followers right behind its last row (`behind`), which the drain sends only once
 *   that row is delivered. A run ends at a row whose attempts are spent (the claim sets it aside
 *   as dead, and nothing may pass it). The walk stops as soon as its runs hold `limit` rows, so a
 *   claim over many keys reads only the keys it takes from; it visits every key only when the
 *   claim comes back short, so a short claim still means nothing more was due.
 * - keyed_more: only when the walk went round every key and its runs and the unkeyed rows
 *   still fall short of the limit (one key, or a few), the keys whose run reached its share take
 *   more, up to the limit. The merge takes every unkeyed row and every run's first share before
 *   any of these, so when those fill the claim they would all be cut. The test reads no row of
 *   messages (a one-time filter), so a claim filled without them never starts their scans: over
 *   5 keys beside unkeyed rows, a claim of 1,000 read 4,500 rows here that the merge then cut,
 *   20 of its 44 ms.
 */
export function keyedRunsStatement(
  messages: string,
  parts: KeyedRunsParts,
  shape: { limit: number; share: number; moreShares: boolean },
): { walk: string; lockRuns: string; runsGoOn: string } {
  const { limit, share, moreShares } = shape;
  const { claimable, parameter } = parts;
  // Where a key's order runs: its unfinished rows, dead ones left out where a dead head does not
  // block the rows behind it, read in (ordering_key, id) order from messages_ordering_unfinished.
  // (IS NOT NULL spelled out, so the planner can use the partial index: it does not infer it
  // from a comparison with a domain's value.) The reads below order by the index's two columns
  // and bound the key from below, never by equality: with equality and ORDER BY id the planner
  // took the primary key instead (it prices the index's heap reads by the key column's
  // correlation, which interleaved keys make low) and read every other key's rows in between,
  // 90 of every 100 rows it read over 10 keys.
  const inOrder = (alias: string) => `${alias}.ordering_key IS NOT NULL
        AND ${alias}.delivered_at IS NULL AND ($4::boolean OR ${alias}.dead_at IS NULL)`;
  // A key's claimable rows after `afterId`, in id order, while each is of the key and claimable
  // and none before it is a row whose attempts are spent; at most `rows` of them. The scan runs
  // on in index order, so it may read into the next key: that row ends the run. `cn`: the
  // claim_now row the query joined in, if any.
  const followers = (key: string, afterId: string, rows: string, cn?: string) => `
        SELECT f.id FROM (
          SELECT f.id,
            bool_and(f.ordering_key = ${key} AND ${claimable('f', cn)})
              OVER (ORDER BY f.ordering_key, f.id) AS open,
            coalesce(bool_and(f.attempts < f.max_attempts) OVER (ORDER BY f.ordering_key, f.id
              ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING), true) AS unspent
          FROM ${messages} f
          WHERE (f.ordering_key, f.id) > (${key}, ${afterId}) AND ${inOrder('f')}
          ORDER BY f.ordering_key, f.id
          LIMIT ${rows}) f
        WHERE f.open AND f.unspent
        ORDER BY f.id`;
  // The head of the first key after `after` in key order (its first row the order runs
  // through), with what the claim's test of it reads: one descent, which finds the key and its
  // head at once. `after` null: the first key.
  const headAfter = (after: string | null) => `SELECT h.ordering_key::text AS k, h.id, h.due_at,
        h.attempts >= h.max_attempts AS spent, h.delivered_at, h.dead_at, h.state,
        h.lease_expires_at, h.kind, h.destination
      FROM ${messages} h
      WHERE ${after === null ? '' : `h.ordering_key > ${after} AND `}${inOrder('h')}
      ORDER BY h.ordering_key, h.id
      LIMIT 1`;
  // A key's run: nothing if the walk is full; the head alone if it may go now and its attempts
  // are spent (the claim sets it aside as dead, and nothing may pass it); the head and its
  // followers up to the share if it may go now; if not, and the head lies within a run the drain
  // holds (held), the followers right behind that run's last row, up to the share; else nothing.
  // Followers are read only behind a claimable head or a held run's last row, by one scan for
  // both (the statement is planned as often as a pool's connections prepare it, or on every run
  // over Neon's HTTP driver, so each copy of a scan costs every claim its planning). (OFFSET 0
  // keeps the planner from folding the run into the walk's select list, where it is named twice
  // and its followers were read twice.) The followers' LIMIT is the share, a constant, and the
  // run is cut to the share after: a LIMIT the planner cannot read (the share less the head) it
  // takes for a tenth of every row of the key, so the walk's estimated cost grew with the rows
  // per key (78,000 at 4,000 rows over 10 keys, 813,000 at 44,000). PostgreSQL keeps a prepared
  // statement's generic plan only while it looks no dearer than the custom plans made so far,
  // and compares again when an ANALYZE makes it build a new one: as a backlog grew, every claim
  // was planned anew, 2 ms each, for thousands of claims. Read this way the estimate stays near
  // 11,000 from 4,000 rows to 200,000 (test/store/claim-plan.test.ts). The held run's last row
  // (t.last) is read three times here: OFFSET 0 keeps it one lookup, planned and run once a step
  // rather than a copy inlined at each read (see the walk's `s` below).
  const run = (open: string) => `CROSS JOIN LATERAL (
      SELECT CASE WHEN NOT (${open}) THEN '{}'::bigint[]
        WHEN s.open AND (s.spent OR ${share} = 1) THEN ARRAY[s.id]
        WHEN s.open OR t.last IS NOT NULL THEN
          ((CASE WHEN s.open THEN ARRAY[s.id] ELSE '{}'::bigint[] END)
            || ARRAY(${followers('s.k', 'coalesce(t.last, s.id)', String(share), 'cn')}))[1:${share}]
        ELSE '{}'::bigint[]
      END AS ids, t.last AS behind
      FROM (SELECT (SELECT h.last FROM held h
        WHERE h.k = s.k AND s.id BETWEEN h.first AND h.last AND NOT s.open) AS last OFFSET 0) t
      OFFSET 0) r`;
  // Second shares (see above): only where the walk's shape asks for them.
  const keyedMore = `  keyed_more AS (
    SELECT w.step, w.k, w.head_due, e.id, ${share} + e.ord AS ord, NULL::bigint AS behind
    FROM walk w CROSS JOIN claim_now cn
    CROSS JOIN LATERAL (
      SELECT x.id, row_number() OVER (ORDER BY x.id) AS ord
      FROM (${followers('w.k', `w.ids[${share}]`, String(limit - share), 'cn')}) x) e
    WHERE (SELECT max(total) FROM walk) + ${parts.unkeyedCount} < ${limit}
      AND cardinality(w.ids) = ${share}
      AND (SELECT l.attempts < l.max_attempts FROM ${messages} l WHERE l.id = w.ids[${share}])
  ),
`;
  const walkStart = `${parameter('walkStart')}::text`;
  // The walk starts from a row of its own (step 0, no run) at walkStart, so each step, the first
  // too, is the recursive term's: one copy of the descent, the test and the run to plan. A walk
  // from no key starts past the end (wrapped), at the first key. The step's head `s`, with its
  // test `open`, stays a subquery (OFFSET 0): folded into the step, the test and its destination
  // lookup were copied into each of open's reads and each copy planned. A walk of first shares
  // over 10 keys took 2.28 ms to plan, 1.91 ms with this and the held run's lookup kept whole
  // (planned on every claim over Neon's HTTP driver; a prepared claim, about seven times a drain).
  const walk = `
  held AS MATERIALIZED (
    SELECT h.k, h.first, h.last
    FROM unnest(${parameter('heldKeys')}::text[], ${parameter('heldFirst')}::bigint[],
      ${parameter('heldLast')}::bigint[], ${parameter('heldTokens')}::uuid[])
      AS h(k, first, last, token)
    WHERE EXISTS (SELECT 1 FROM ${messages} l WHERE l.id = h.last AND l.ordering_key = h.k
      AND l.claim_token = h.token AND l.state = 'claimed' AND l.lease_expires_at > ${parts.now})
  ),
  walk(step, k, wrapped, head_due, ids, behind, total) AS (
    SELECT 0, ${walkStart}, ${walkStart} IS NULL, NULL::timestamptz, '{}'::bigint[],
      NULL::bigint, 0
    UNION ALL
    SELECT w.step + 1, s.k, s.wrapped, s.due_at, r.ids, r.behind, w.total + cardinality(r.ids)
    FROM walk w CROSS JOIN claim_now cn
    CROSS JOIN LATERAL (
      SELECT n.*, ${claimable('n', 'cn')} AS open
      FROM ((SELECT a.*, w.wrapped AS wrapped FROM (${headAfter('w.k')}) a WHERE w.k IS NOT NULL)
        UNION ALL (SELECT a.*, true FROM (${headAfter(null)}) a
          WHERE w.k IS NULL OR NOT w.wrapped)
        LIMIT 1) n OFFSET 0) s
    ${run(`w.total < ${limit}`)}
    WHERE (w.total < ${limit} OR cardinality(w.ids) > 0)
      AND (NOT s.wrapped OR ${walkStart} IS NULL OR s.k <= ${walkStart})
  ),
${moreShares ? keyedMore : ''}  keyed AS (
    SELECT w.step, w.k, w.head_due, u.id, u.ord, CASE WHEN u.ord = 1 THEN w.behind END AS behind
    FROM walk w CROSS JOIN LATERAL unnest(w.ids) WITH ORDINALITY u(id, ord)${
      moreShares
        ? `
    UNION ALL
    SELECT step, k, head_due, id, ord, behind FROM keyed_more`
        : ''
    }
  ),`;
  // The keyed rows `chosen` took, locked (SKIP LOCKED) and re-checked on their newest version,
  // kept only as an unbroken run from the key's head: a row is kept when every row of its run up
  // to it was locked. So a claim that skipped a head another claim is taking right now, or found
  // it taken or finished since its snapshot, takes nothing behind it. Each keeps its key, walk
  // step and held run, which the claim's flags read here: matched by id against `chosen`, every
  // row was compared with every locked one (a claim of 1,000 over 10 keys: 17.4 ms, 12.4 this way).
  const lockRuns = `
  locked AS (${parts.lockById('ARRAY(SELECT id FROM chosen WHERE k IS NOT NULL)')}
  ),
  locked_runs AS (
    SELECT r.id, r.kind, r.destination, r.exhausted, r.watched, r.k, r.step, r.behind FROM (
      SELECT l.*, c.k, c.step, c.ord, c.behind,
        count(l.id) OVER (PARTITION BY c.k ORDER BY c.ord) AS locked_through
      FROM chosen c LEFT JOIN locked l ON l.id = c.id
      WHERE c.k IS NOT NULL) r
    WHERE r.locked_through = r.ord
  ),`;
  // Whether a run this claim took has a claimable row right behind its last: a claim that
  // continues the runs (ClaimRequest.holding) would find more.
  const runsGoOn = `EXISTS (SELECT 1 FROM (
      SELECT k, max(id) AS last FROM locked_runs GROUP BY k) r
    WHERE EXISTS (${followers('r.k', 'r.last', '1')}))`;
  return { walk, lockRuns, runsGoOn };
}

/**
 * The first ordering key in key order with an unfinished message (pending, claimed or dead):
 * one descent of messages_ordering_unfinished. No row: no message with a key is unfinished.
 *
 * Read as a scalar subquery (`(...) IS NULL`), never under EXISTS: inside EXISTS the planner
 * drops the ORDER BY, and where most rows carry a key it reads the table from its first page
 * instead, stepping over every row deleted since the last vacuum, which a drain leaves at the
 * front: 252 pages, 0.14 to 0.33 ms a claim, once 4,000 of 5,000 were delivered, against 3 to 7
 * index pages and 0.03 ms this way.
 */
export function firstKeyStatement(messages: string): string {
  return `SELECT n.ordering_key::text AS k FROM ${messages} n
        WHERE n.ordering_key IS NOT NULL AND n.delivered_at IS NULL
        ORDER BY n.ordering_key LIMIT 1`;
}

/**
 * What a keyed due claim says beside its rows (on every row alike): walk_key, where the next
 * walk starts; continued, each run that continues a held run as its first row's id and the held
 * run's last row's, `first last`, comma separated (text, as every driver reads it alike);
 * caught_up (see caughtUp; not a walk of first shares only); keyless, no keyed message is
 * unfinished, so the next claims may leave keyed rows out (an unkeyed claim says keyed_waiting).
 */
export function keyedClaimFlags(shape: DueClaimShape, runsGoOn: string, messages: string): string {
  const caught = shape.sharesOnly ? '' : `\n    ${caughtUp(shape.limit, runsGoOn)} AS caught_up,`;
  return `
    (SELECT k FROM locked_runs ORDER BY step DESC LIMIT 1) AS walk_key,
    (SELECT string_agg(id || ' ' || behind, ',') FROM locked_runs
      WHERE behind IS NOT NULL) AS continued,${caught}
    (${firstKeyStatement(messages)}) IS NULL AS keyless`;
}

/**
 * Whether nothing more is claimable until this claim's rows are recorded: the walk visited
 * every key (it found none after the one that filled the claim), every key it found a run for
 * is in the claim, no run it took has a claimable row right behind its last (which a claim
 * continuing the runs would take), and the unkeyed scan came back short with all it found
 * taken. What is left is out with other drains, or not yet due, so a claim made before these
 * rows are recorded would find nothing: the drain claims again once they are (a backlog of a
 * few deep keys otherwise paid two empty claims ahead for every full one). The look behind the
 * runs comes last, so a claim that is not caught up for another reason skips it.
 */
function caughtUp(limit: number, runsGoOn: string): string {
  return `(NOT EXISTS (SELECT 1 FROM walk WHERE total >= ${limit} AND cardinality(ids) = 0)
      AND NOT EXISTS (SELECT 1 FROM walk w WHERE cardinality(w.ids) > 0
        AND NOT EXISTS (SELECT 1 FROM chosen c WHERE c.k = w.k))
      AND (SELECT count(*) FROM unkeyed) < ${limit}
      AND (SELECT count(*) FROM unkeyed) = (SELECT count(*) FROM chosen WHERE k IS NULL)
      AND NOT ${runsGoOn})`;
}
