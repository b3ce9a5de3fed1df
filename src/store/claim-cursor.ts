/**
 * The due claim's cursor, where its scan of the due order starts (claimStatement,
 * claim-statements.ts; the position it comes from: claim-position.ts): the row the drain's last
 * claim to land took last, and, when claims of this store are on the wire from it or from before
 * it, the row as many unfinished rows past it as those claims may take.
 *
 * Why the step past: a drain keeps up to two claims on the wire, and the second starts at the
 * cursor the first started at (neither has landed to move it). Its scan then steps over every
 * row the first is taking: rows still locked by the first cost a failed lock each, and a claim
 * taking heads looks up each one's ordering key first. Over 1,000 keys of 5, claims one at a
 * time spent 0.81x to 0.87x the server CPU per message of claims two at a time
 * (docs/benchmarks.md, "Claims beside one on the wire"). The rows stepped past are not lost:
 * the scan up to the cursor reads them when the scan after it comes back short, and every fourth
 * claim of a backlog starts from the start of the due order.
 */
import { cursorSteps, type DueClaimShape, dueParameter } from './due-claim-shape.js';

/**
 * The CTE `cursor` (one row: `due_at`, `id`) of a claim that reads a cursor: the row the cursor
 * parameters name, or, for a claim that may step (cursorSteps), the unfinished row `cursorSkip`
 * rows after it (a skip of 0: the named row; fewer rows than that after it: the named row too,
 * and the scan steps over what the other claims are taking, as it did without the step).
 *
 * Read through a CTE, so no plan knows the cursor's value and PostgreSQL keeps the generic plan
 * after its five custom ones. As a bare parameter, custom plans costed from its value: in a
 * backlog of 30,000, 1,845 near the start up to 25,116 near the end, against the generic plan's
 * 3,991. A connection whose first claims came early kept planning every claim, about 3 million
 * instructions each (test/store/claim-plan.test.ts). The step is a scan of messages_claimable's
 * entries (rows only where a page is not all-visible), gated so that it does not start when no
 * claim is on the wire.
 */
export function cursorCte(messages: string, shape: DueClaimShape): string {
  const named = `${dueParameter(shape, 'cursorDue')}::timestamptz AS due_at,
      ${dueParameter(shape, 'cursorId')}::bigint AS id`;
  // A walk of the keys goes one claim at a time, so it never steps; and the step's subquery
  // made its plan a quarter dearer (2.3 to 3.0 ms), planned five times on every connection.
  if (!cursorSteps(shape))
    return `cursor AS MATERIALIZED (SELECT ${named}),
  `;
  const skip = `${dueParameter(shape, 'cursorSkip')}::integer`;
  return `cursor AS MATERIALIZED (
    SELECT coalesce(past.due_at, named.due_at) AS due_at, coalesce(past.id, named.id) AS id
    FROM (SELECT ${named}) named
    LEFT JOIN LATERAL (
      SELECT w.due_at, w.id FROM ${messages} w
      WHERE w.delivered_at IS NULL AND w.dead_at IS NULL
        AND (w.due_at, w.id) > (named.due_at, named.id)
      ORDER BY w.due_at, w.id
      OFFSET greatest(${skip} - 1, 0) LIMIT 1
    ) past ON ${skip} > 0),
  `;
}

/** The cursor's position in due order, for a row comparison `(m.due_at, m.id) > CURSOR_AT`. */
export const CURSOR_AT = '(SELECT due_at, id FROM cursor)';

/** Which part of the due order a scan from the cursor reads: after the cursor, or up to it. */
export type CursorSide = 'ahead' | 'behind';

/**
 * A claim's scan of the due order from its cursor, as the CTE `name`: the rows after the cursor
 * first (the CTE `ahead`, up to `limit`), then, if those fall short, the rows up to it (`behind`,
 * what `ahead` left of the limit; a LIMIT of 0 never starts its read). `part` builds one side's
 * select over alias `m` from the condition that puts a row on that side and how many rows it
 * may take.
 */
export function scanFromCursor(
  name: string,
  limit: number,
  part: (where: string, rows: string, side: CursorSide) => string,
): string {
  return `ahead AS (${part(`AND (m.due_at, m.id) > ${CURSOR_AT}`, String(limit), 'ahead')}
  ),
  behind AS (${part(`AND (m.due_at, m.id) <= ${CURSOR_AT}`, `${limit} - (SELECT count(*) FROM ahead)`, 'behind')}
  ),
  ${name} AS (SELECT * FROM ahead UNION ALL SELECT * FROM behind),`;
}
