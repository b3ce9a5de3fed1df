/**
 * The settle: every outcome of a group in one statement (built per schema by outboxStatements,
 * statements.ts). Two texts: one that also keeps destination health (destination-statements.ts),
 * for groups with a failure or a message whose destination had failures or a pause when it was
 * claimed, and one without, for the rest: a healthy destination's deliveries pay nothing for
 * health.
 */
import { appendedAttemptLog } from './attempt-log.js';
import {
  HEALTH_CHANGE_COLUMNS,
  HEALTH_CHANGES,
  settleHealthStatements,
} from './destination-statements.js';
import { ARCHIVED_COLUMNS, archiveMoved } from './history-groups.js';
import { countOutcomes } from './outcome-counts.js';

/**
 * $1 ids, $2 the row version each claim returned (ctid), $3 each outcome's claim token as a
 * number from 1 into $4 (a group's outcomes come from a few claims, so each token is written
 * and parsed once, not once per outcome), $5 outcomes ('delivered' | 'retry' | 'dead' |
 * 'release'), $6 next due times (retry, release), $7 errors, $8 now, $9 each failed
 * attempt as JSON text (null for other outcomes), $10 each delivery's HTTP status and $11 its
 * duration in ms (nulls for other outcomes); with delivered history also $12 the delivered
 * ids as an int8multirange and $13, $14 their smallest and largest key (see archiveMoved);
 * with `health`, then (from $12, or $15 with delivered history) each outcome's failure flag
 * and Retry-After, the failures that pause, the first and the longest pause in ms (see
 * settleHealthStatements), and $8 again as their now.
 *
 * With `health`, destination health is kept here too (destination-statements.ts): a group's
 * failures per destination, pausing those that keep failing, and a delivery resets its
 * destination when it had anything to reset. The statement then returns a row for each
 * destination it paused or resumed, beside the stale outcomes' ids.
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
export function settleStatement(
  quotedSchema: string,
  keepDelivered: boolean,
  health: boolean,
): string {
  const messages = `${quotedSchema}.messages`;
  // Destination health's parameters follow delivered history's (see settleParameters).
  const h = keepDelivered ? 15 : 12;
  return `
      WITH o AS (
        SELECT o.id, o.row_id, ($4::uuid[])[o.token] AS claim_token, o.outcome, o.due_at,
          o.error, o.attempt::jsonb AS attempt, o.status, o.ms${
            health ? ', coalesce(o.failed, false) AS failed, o.retry_after_ms' : ''
          }
        FROM unnest($1::bigint[], $2::tid[], $3::integer[], $5::text[], $6::timestamptz[],
          $7::text[], $9::text[], $10::integer[], $11::integer[]${
            health ? `, $${h}::boolean[], $${h + 1}::bigint[]` : ''
          })
          AS o(id, row_id, token, outcome, due_at, error, attempt, status, ms${
            health ? ', failed, retry_after_ms' : ''
          })
      ),
      -- Each outcome's row, if this drain still owns it, read where the claim left it: a TID
      -- scan per outcome, one heap fetch whatever the statistics say. The LATERAL subquery keeps
      -- the outcomes outer (its LIMIT keeps the planner from folding it into a join it may turn
      -- around). A row another drain re-claimed since has a new version elsewhere, and the old
      -- one is no longer visible: the outcome is stale, as is any whose row has moved (VACUUM
      -- FULL rewrote the table), whose lease then runs out and which goes out again.
      owned AS (
        SELECT o.*, o.outcome = 'delivered' AND m.dedupe_key IS NULL AS moves${
          health ? ', m.destination' : ''
        }
        FROM o CROSS JOIN LATERAL (
          SELECT dedupe_key${health ? ', destination' : ''} FROM ${messages} m
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
      ),${
        health
          ? settleHealthStatements(quotedSchema, {
              failuresToPause: h + 2,
              pauseMs: h + 3,
              maxPauseMs: h + 4,
              now: 8,
            })
          : ''
      }
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
      SELECT o.id${health ? HEALTH_CHANGE_COLUMNS : ''}
      FROM unnest($1::bigint[]) AS o(id)
      WHERE (SELECT count(*) FROM moved) + (SELECT count(*) FROM updated) < cardinality($1::bigint[])
        AND o.id NOT IN (SELECT id FROM moved UNION ALL SELECT id FROM updated)${
          health ? HEALTH_CHANGES : ''
        }`;
}
