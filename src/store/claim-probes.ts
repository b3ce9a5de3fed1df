/**
 * The half-open destinations' probes a due claim takes beside its rows now and then: a CTE part
 * of the one claim statement claimStatement (claim-statements.ts) builds.
 */

import { PARK_SCAN_ROWS } from './destination-statements.js';

/**
 * Half-open destinations' probes: for each destination whose pause has ended and that has no
 * probe out, its first claimable message (the head of its ordering key, as any claim takes),
 * at most {@link PROBES_PER_CLAIM} destinations per claim. The destination's row is locked
 * (SKIP LOCKED: a row another claim is probing from right now is simply not ours) and given
 * the probe's lease in the same statement, so of two overlapping claims only one sends a probe:
 * the other skips the locked row, or, when the first has committed, re-reads it under READ
 * COMMITTED and finds the probe out. The probe's settle closes the destination (a delivery) or
 * opens it again (a failure); a probe whose drain died lets another go when its lease ends.
 */
export function probeStatement(
  messages: string,
  destinations: string,
  firstCandidate: string,
): string {
  return `
  half_open AS MATERIALIZED (
    SELECT d.destination, p.id, p.kind, p.exhausted
    FROM ${destinations} d
    LEFT JOIN LATERAL (${firstCandidate}) p ON true
    WHERE d.paused_until <= $1 AND (d.probe_until IS NULL OR d.probe_until <= $1)
    ORDER BY d.paused_until
    LIMIT ${PROBES_PER_CLAIM}
    FOR UPDATE OF d SKIP LOCKED
  ),
  -- A destination with nothing to probe now (nothing due, or all of it held or locked) is
  -- looked at again after PROBE_LOOK_AGAIN_MS, not by every claim: finding that out walks the
  -- due order.
  probe AS (
    UPDATE ${destinations} d SET probe_until = $1::timestamptz + CASE WHEN h.id IS NULL
        THEN ${PROBE_LOOK_AGAIN_MS} ELSE $3 END * interval '1 millisecond',
      updated_at = $1
    FROM half_open h
    WHERE d.destination = h.destination
    RETURNING h.id, h.kind, h.exhausted, h.destination
  ),
  -- Messages of open destinations at the head of due order, moved to their pause's end: those
  -- enqueued by a transaction that did not see the pause (enqueue parks the rest), or that
  -- failed as it opened, or lay past the window the opening settle parked
  -- (destination-statements.ts). Until then every claim steps over them; this way at most a
  -- probe interval. Only when a destination is open (the one-time filter), in
  -- the first PARK_SCAN_ROWS of due order, rows another claim holds skipped. Disjoint from
  -- due (which passes over paused destinations) and from probes (half-open, not open).
  parked AS (
    UPDATE ${messages} m SET due_at = d.paused_until
    FROM ${destinations} d
    WHERE m.id = ANY(ARRAY(
        SELECT p.id FROM ${messages} p
        WHERE p.id = ANY(ARRAY(
            SELECT w.id FROM (
              SELECT id, destination, state FROM ${messages}
              WHERE state IN ('pending', 'claimed') AND due_at <= $1
              ORDER BY due_at, id
              LIMIT ${PARK_SCAN_ROWS}) w
            WHERE EXISTS (SELECT 1 FROM ${destinations} WHERE paused_until > $1)
              AND w.state = 'pending'
              AND w.destination IN (
                SELECT destination FROM ${destinations} WHERE paused_until > $1)))
          AND p.state = 'pending'
        FOR UPDATE SKIP LOCKED))
      AND d.destination = m.destination
      AND d.paused_until > $1
      AND m.state = 'pending'
  ),`;
}

/**
 * How long a half-open destination with nothing to probe waits before a claim looks again: a
 * message enqueued for it meanwhile waits at most this long for its probe, and a claim walks
 * the due order for it at most this often.
 */
const PROBE_LOOK_AGAIN_MS = 5_000;

/**
 * Destinations one claim may probe. A probe is one message, so a few cost a claim little; more
 * half-open at once wait a claim or two.
 */
const PROBES_PER_CLAIM = 8;
