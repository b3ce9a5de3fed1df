/**
 * Destination health in SQL (migrations/0010_destination_health.sql, docs/destinations.md): the
 * part of the settle statement that counts failures and pauses or resumes destinations, and the
 * operators' statements. The claim's side (pass over paused destinations, probe half-open ones)
 * is in claim-statements.ts.
 */

/** The settle statement's parameter numbers for destination health. */
export interface HealthParameters {
  /** Failures in a row that pause; null turns health off. */
  failuresToPause: number;
  pauseMs: number;
  maxPauseMs: number;
  now: number;
}

/**
 * The settle's CTEs after `owned` (which carries each outcome's `destination`, `failed`,
 * `retry_after_ms`, `error`, `outcome`): `health` sums a settle group's outcomes per
 * destination; `failing` counts the failures of destinations that had any (an upsert: the row
 * appears at a destination's first failure) and pauses those that reach the threshold, asked
 * with Retry-After, or failed their probe; `recovered` resets destinations that had only
 * deliveries, when they had a count or a pause to reset (a healthy destination's delivery
 * writes nothing here); `parked` moves the waiting messages of a destination that has just
 * paused to the pause's end in due order, so claims do not step over them while it lasts.
 *
 * The upsert computes the new state from the row as it is now (ON CONFLICT reads the latest
 * version and locks it), not from this statement's snapshot: two drains failing on one
 * destination at once both count, and only one of them opens the pause. Destinations are
 * written in name order, so two settles lock their rows in one order and never deadlock.
 */
export function settleHealthStatements(quotedSchema: string, p: HealthParameters): string {
  const destinations = `${quotedSchema}.destinations`;
  const messages = `${quotedSchema}.messages`;
  const now = `$${p.now}::timestamptz`;
  // The breaker's pause after `pauses` in a row: the first pause, doubled each time, capped.
  const window = (pauses: string) =>
    `least($${p.pauseMs}::float8 * power(2, least(${pauses}, 30)), $${p.maxPauseMs}::float8) * interval '1 millisecond'`;
  const retryAfter = `(h.retry_after_ms * interval '1 millisecond')`;
  return `
      health AS MATERIALIZED (
        SELECT o.destination,
          count(*) FILTER (WHERE o.failed)::integer AS failures,
          bool_or(o.outcome = 'delivered') AS recovered,
          max(o.retry_after_ms) AS retry_after_ms,
          (array_agg(o.error ORDER BY o.id DESC) FILTER (WHERE o.failed))[1] AS last_error
        FROM owned o
        WHERE o.destination IS NOT NULL
          AND (o.failed OR o.outcome = 'delivered')
          AND $${p.failuresToPause}::integer IS NOT NULL
        GROUP BY o.destination
      ),
      -- A destination's first failure inserts its row, paused at once when Retry-After asks or
      -- the threshold is one group's failures. Otherwise the update below works from the row
      -- as it stands: the excluded row carries this group's failures, its Retry-After pause
      -- (paused_by 'retry-after') and whether it also delivered (recovered_at).
      failing AS (
        INSERT INTO ${destinations} AS d (destination, failures, pauses, paused_until, paused_at,
          paused_by, last_error, last_failure_at, recovered_at, updated_at)
        SELECT h.destination, h.failures, CASE WHEN first.until IS NULL THEN 0 ELSE 1 END,
          first.until, CASE WHEN first.until IS NOT NULL THEN ${now} END, first.cause,
          h.last_error, ${now}, CASE WHEN h.recovered THEN ${now} END, ${now}
        FROM health h CROSS JOIN LATERAL (
          SELECT CASE
              WHEN h.retry_after_ms IS NOT NULL THEN ${now} + ${retryAfter}
              WHEN NOT h.recovered AND h.failures >= $${p.failuresToPause} THEN ${now} + ${window('0')}
            END AS until,
            CASE
              WHEN h.retry_after_ms IS NOT NULL THEN 'retry-after'
              WHEN NOT h.recovered AND h.failures >= $${p.failuresToPause} THEN 'breaker'
            END AS cause) first
        WHERE h.failures > 0
        ORDER BY h.destination
        ON CONFLICT (destination) DO UPDATE SET
          (failures, pauses, paused_until, paused_at, paused_by, probe_until, last_error,
            last_failure_at, recovered_at, updated_at) = (
          SELECT n.failures,
            CASE WHEN n.starts THEN d.pauses + 1 WHEN n.until IS NULL THEN 0 ELSE d.pauses END,
            n.until,
            CASE WHEN n.starts THEN ${now} WHEN n.until IS NULL THEN NULL ELSE d.paused_at END,
            CASE WHEN n.until IS NULL THEN NULL
              WHEN n.operator THEN 'operator'
              WHEN excluded.paused_by = 'retry-after' THEN 'retry-after'
              WHEN n.starts THEN 'breaker'
              ELSE d.paused_by END,
            CASE WHEN n.until IS DISTINCT FROM d.paused_until THEN NULL ELSE d.probe_until END,
            excluded.last_error, ${now}, coalesce(excluded.recovered_at, d.recovered_at), ${now}
          FROM (
            SELECT c.failures, c.operator, c.until,
              c.until IS NOT NULL AND NOT c.open AS starts
            FROM (
              SELECT b.*, CASE
                  -- An operator's pause stands until they resume it or it ends.
                  WHEN b.operator THEN d.paused_until
                  -- The receiver asked: never shorter than a pause already running.
                  WHEN excluded.paused_by = 'retry-after'
                    THEN greatest(excluded.paused_until, CASE WHEN b.open THEN d.paused_until END)
                  -- It also delivered in this group: it is up, but a pause it asked for
                  -- stands (sends out when it asked may still get through).
                  WHEN excluded.recovered_at IS NOT NULL
                    THEN CASE WHEN b.asked THEN d.paused_until END
                  -- Paused already: failures of sends that were out when it paused.
                  WHEN b.open THEN d.paused_until
                  -- Half-open and failed (its probe), or the threshold reached.
                  WHEN d.paused_until IS NOT NULL OR b.failures >= $${p.failuresToPause}
                    THEN ${now} + ${window('d.pauses')}
                END AS until
              FROM (
                SELECT
                  CASE WHEN excluded.recovered_at IS NOT NULL THEN excluded.failures
                    ELSE d.failures + excluded.failures END AS failures,
                  coalesce(d.paused_by = 'operator' AND d.paused_until > ${now}, false) AS operator,
                  coalesce(d.paused_by = 'retry-after' AND d.paused_until > ${now}, false) AS asked,
                  coalesce(d.paused_until > ${now}, false) AS open
              ) b
            ) c
          ) n)
        RETURNING d.destination, d.paused_until, d.paused_by, d.failures, d.last_error,
          d.paused_at = ${now} AS opened
      ),
      recovered AS (
        UPDATE ${destinations} d SET failures = 0, probe_until = NULL,
          pauses = CASE WHEN active.held THEN d.pauses ELSE 0 END,
          paused_until = CASE WHEN active.held THEN d.paused_until END,
          paused_at = CASE WHEN active.held THEN d.paused_at END,
          paused_by = CASE WHEN active.held THEN d.paused_by END,
          recovered_at = ${now}, updated_at = ${now}
        FROM health h CROSS JOIN LATERAL (
          -- A pause an operator made, or the receiver asked for, stands until it ends: a
          -- delivery of a send that was out when it began does not end it.
          SELECT coalesce(before.paused_by IN ('operator', 'retry-after')
              AND before.paused_until > ${now}, false) AS held,
            before.paused_until IS NOT NULL AS paused
          FROM ${destinations} before WHERE before.destination = h.destination) active
        WHERE h.failures = 0
          AND d.destination = h.destination
          AND (d.failures > 0 OR (d.paused_until IS NOT NULL AND NOT active.held))
        RETURNING d.destination, active.paused AND d.paused_until IS NULL AS resumed
      ),
      -- By id, as the settle's other writes (= ANY(ARRAY(...))): the planner cannot start from
      -- messages and look for openings per row; with none, nothing is read.
      parked AS (
        UPDATE ${messages} m SET due_at = (
          SELECT f.paused_until FROM failing f WHERE f.destination = m.destination)
        WHERE m.id = ANY (ARRAY(
          SELECT head.id
          FROM failing f CROSS JOIN LATERAL (
            SELECT w.id FROM (
              -- The claimable rows' predicate, so the planner walks messages_claimable in
              -- its order and stops at the limit.
              SELECT id, destination, state FROM ${messages}
              WHERE state IN ('pending', 'claimed') AND due_at < f.paused_until
              ORDER BY due_at, id
              LIMIT ${PARK_SCAN_ROWS}) w
            WHERE w.destination = f.destination AND w.state = 'pending') head
          WHERE f.opened))
          AND m.state = 'pending'
          AND m.due_at < (SELECT f.paused_until FROM failing f WHERE f.destination = m.destination)
      ),`;
}

/** The settle's result columns with health: a stale outcome's id, and nulls. */
export const HEALTH_CHANGE_COLUMNS = `, NULL::text AS destination, NULL::text AS change,
        NULL::text AS paused_by, NULL::timestamptz AS paused_until, NULL::integer AS failures,
        NULL::text AS last_error`;

/** Beside them, a row for each destination it paused or resumed. */
export const HEALTH_CHANGES = `
      UNION ALL
      SELECT NULL, destination, 'paused', paused_by, paused_until, failures, last_error
      FROM failing WHERE opened
      UNION ALL
      SELECT NULL, destination, 'resumed', NULL, NULL, 0, NULL FROM recovered WHERE resumed`;

/**
 * How far into due order a pause looks for its destination's messages to park. They matter
 * where claims read, at the head of due order; further back, claims reach them only after the
 * rows ahead are sent, and the next pause parks them. Bounded so a settle that opens a pause
 * stays a few milliseconds however long the backlog.
 */
export const PARK_SCAN_ROWS = 10_000;

/**
 * Far in the future, for a pause that lasts until an operator resumes it: a time rather than
 * infinity, so every driver reads it as a Date and parked messages sort before nothing.
 */
export const PAUSED_UNTIL_RESUMED = new Date('9999-12-31T00:00:00Z');

/** Resume, for operators (see destinationOperatorStatements for the rest). */
export function destinationStatements(quotedSchema: string) {
  const destinations = `${quotedSchema}.destinations`;
  const messages = `${quotedSchema}.messages`;
  return {
    /**
     * $1 destination, $2 now. Ends a pause (any cause) and clears the failure count, and
     * brings the messages its pause parked (due exactly at its end) back to now; messages due
     * later on their own backoff keep their time. Returns the row, none when it had none.
     */
    resumeDestination: `
      -- The pause as this statement's snapshot has it (no FOR UPDATE: the update below locks
      -- the row, and a lock on a row this statement has updated skips it).
      WITH before AS (
        SELECT paused_until FROM ${destinations} WHERE destination = $1
      ),
      resumed AS (
        UPDATE ${destinations} d SET paused_until = NULL, paused_at = NULL, paused_by = NULL,
          probe_until = NULL, failures = 0, pauses = 0, updated_at = $2
        WHERE d.destination = $1
        RETURNING d.*
      ),
      unparked AS (
        UPDATE ${messages} m SET due_at = $2
        WHERE m.destination = $1 AND m.state = 'pending'
          AND m.due_at = (SELECT paused_until FROM before) AND m.due_at > $2
        RETURNING 1
      )
      SELECT resumed.*, 'closed' AS state, (SELECT count(*) FROM unparked)::int AS waiting
      FROM resumed`,
  };
}

export type DestinationStatements = ReturnType<typeof destinationStatements>;

/**
 * The operator surfaces' statements over destinations (the CLI, the admin API and dashboard,
 * and `/metrics`), apart from the settle's and the claim's. The list pages in its own order
 * (paused first), so a page that ends in a paused destination loses no closed one after it;
 * a pause parks its destination's messages, those a longer pause parked included (parked
 * until resumed, in year 9999, they would never be due again and no probe could take them).
 */
export function destinationOperatorStatements(quotedSchema: string) {
  const destinations = `${quotedSchema}.destinations`;
  const messages = `${quotedSchema}.messages`;
  return {
    /**
     * $1 now, $2 limit, $3 after this name (null: from the first). Each destination with a
     * row, paused ones (open or half-open) first, then by name, and how many messages wait for
     * it (pending or claimed).
     *
     * The page continues after `$3` in that order: at its place, the paused or the closed part,
     * as its row is now (a name with no row is taken as paused, so nothing after it is passed
     * over). A destination that pauses or resumes between two pages moves, as a row does in
     * any keyset list over a changing order.
     *
     * The waiting counts are one pass over the waiting messages for the whole page (by
     * messages_claimable's predicate: not delivered, not dead), not one per destination: the
     * messages have no index on destination, and a count per row would read the backlog once
     * for each of a page's destinations.
     */
    listDestinationPage: `
      WITH page AS (
        SELECT d.*, CASE WHEN d.paused_until IS NULL THEN 'closed'
            WHEN d.paused_until > $1 THEN 'open' ELSE 'half-open' END AS state
        FROM ${destinations} d
        WHERE $3::text IS NULL
          OR (d.paused_until IS NULL, d.destination::text) > (coalesce(
            (SELECT c.paused_until IS NULL FROM ${destinations} c WHERE c.destination = $3),
            false), $3::text)
        ORDER BY d.paused_until IS NULL, d.destination
        LIMIT $2
      ),
      waiting AS (
        SELECT m.destination, count(*)::int AS waiting
        FROM ${messages} m
        WHERE m.delivered_at IS NULL AND m.dead_at IS NULL
          AND m.destination IN (SELECT destination FROM page)
        GROUP BY m.destination
      )
      SELECT page.*, coalesce(waiting.waiting, 0) AS waiting
      FROM page LEFT JOIN waiting ON waiting.destination = page.destination
      ORDER BY page.paused_until IS NULL, page.destination`,

    /**
     * $1 destination, $2 now, $3 until. An operator's pause: the row made if the destination
     * never failed, its probe cancelled, and its waiting messages parked at the pause's end:
     * those due before it, and those the pause it replaces had parked at its own end (due
     * exactly then), so a shorter pause lets them go when it ends. Messages due later on
     * their own backoff keep their time. Returns the row; `waiting`: the messages parked.
     */
    pauseAndParkDestination: `
      -- The pause as this statement's snapshot has it (the upsert below locks the row).
      WITH before AS (
        SELECT paused_until FROM ${destinations} WHERE destination = $1
      ),
      paused AS (
        INSERT INTO ${destinations} AS d (destination, paused_until, paused_at, paused_by,
          updated_at)
        VALUES ($1, $3, $2, 'operator', $2)
        ON CONFLICT (destination) DO UPDATE SET paused_until = $3, paused_at = $2,
          paused_by = 'operator', probe_until = NULL, updated_at = $2
        RETURNING d.*
      ),
      parked AS (
        UPDATE ${messages} m SET due_at = $3
        WHERE m.destination = $1 AND m.state = 'pending'
          AND m.delivered_at IS NULL AND m.dead_at IS NULL
          AND (m.due_at < $3 OR m.due_at = (SELECT paused_until FROM before))
        RETURNING 1
      )
      SELECT paused.*, 'open' AS state, (SELECT count(*) FROM parked)::int AS waiting FROM paused`,

    /**
     * $1 limit. Whether each destination with a row is paused (open or half-open: none of its
     * messages is claimed but a probe), paused ones first, then by name. No waiting counts: a
     * scrape reads only the destinations table.
     */
    pausedDestinations: `
      SELECT destination, paused_until IS NOT NULL AS paused
      FROM ${destinations}
      ORDER BY paused_until IS NULL, destination
      LIMIT $1`,
  };
}

export type DestinationOperatorStatements = ReturnType<typeof destinationOperatorStatements>;
