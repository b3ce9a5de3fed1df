/**
 * The due claim's other way with ordering keys: rows in due order, keyed or not, each keyed one
 * only while it is its key's head (nothing earlier with its key pending or claimed), within a
 * window of the due order. Part of the one claim statement claimStatement (claim-statements.ts)
 * builds; DueClaims (due-claim.ts) says when a claim takes keyed rows this way.
 *
 * Why: over many keys with a few messages each, the heads lie side by side in due order, and one
 * scan takes a claim's worth of them at about what an unkeyed claim costs, where the walk of the
 * keys (claim-walk.ts) pays a descent, a run and a lookup of held runs for every key it visits:
 * a claim of 100 over 1,000 keys of 5 is planned in 0.4 to 0.8 ms and runs in 1.0 to 1.1 this
 * way, against 2.1 to 2.3 and 2.0 to 2.2 walking (docs/benchmarks.md, "Heads in due order").
 * Over a few deep keys the heads are far apart: the rows between are held back behind their
 * key's head, and a scan for heads reads them all, every claim (over 10 keys of 500, 17 ms a
 * claim for 10 rows). So the scan reads at most a window of the due order, and says when the
 * window ended among held-back rows before the claim was full: the claim then takes what it
 * found, the drain claims again at once, and the next claims walk.
 */

/**
 * Rows of the due order a claim taking heads reads, per row of its limit: four after the cursor,
 * twice that from the start of the due order. A window counts unfinished rows by their index
 * entries alone (messages_claimable), the rows claimed and not yet settled too, which sit at the
 * head of the due order: a fast drain's claims on the wire, queued rows and unsettled outcomes
 * come to two or three batches. (A window that read the rows to count only claimable ones was
 * planned, once the plan was generic, as a sort of every unfinished row: 2.2 ms a claim over
 * 5,000, against 0.15 for the index's entries.)
 */
export const HEADS_WINDOW_PER_ROW = 4;

/**
 * The windows of a claim taking heads: their CTEs, the bound each puts on the due order's scan
 * (`within.ahead` on the rows after the cursor, or on the whole scan without one; `within.behind`
 * on the rows up to the cursor; see claimStatement's cursor), and `heldBack`: the claim, whose
 * rows are the CTE `heads`, came back short while a window it read ended among due rows, so rows
 * it did not read may be claimable, and the drain should claim again rather than take the claim
 * for the end of what was due. The window from the start ended early only if it ended before the
 * cursor and among due rows (past a row not yet due, nothing is due: so a claim from the start,
 * which reads a cursor past every row, says what the text without a cursor says); it is read
 * only when the claim is short (otherwise its scan never starts: a LIMIT of 0).
 */
export function headsWindows(
  messages: string,
  limit: number,
  cursor: boolean,
  now: string,
): { ctes: string; within: { ahead: string; behind: string }; heldBack: string } {
  const at = '(SELECT due_at, id FROM cursor)';
  const ahead = headsWindow(messages, 'ahead_window', limit, cursor ? at : null);
  const behind = cursor ? headsWindow(messages, 'behind_window', limit, null) : undefined;
  return {
    ctes: `${ahead.cte}${behind ? `\n  ${behind.cte}` : ''}
  `,
    within: { ahead: ahead.within, behind: behind?.within ?? '' },
    heldBack: `(CASE WHEN (SELECT count(*) FROM heads) < ${limit} THEN
      EXISTS (SELECT 1 FROM ahead_window WHERE due_at <= ${now})${
        behind
          ? `
      OR EXISTS (SELECT 1 FROM behind_window w WHERE (w.due_at, w.id) < ${at} AND w.due_at <= ${now})`
          : ''
      }
    ELSE false END)`,
  };
}

/** One window of the due order: its CTE, and the scan's bound for the rows in it. */
interface HeadsWindow {
  /**
   * The CTE: the window's last row, the `HEADS_WINDOW_PER_ROW * limit`-th unfinished row in
   * due order after `from` (from the start when null); no row when the due order ends first.
   * A scan of messages_claimable's entries that need not read the rows.
   */
  cte: string;
  /** The scan's condition: the row of alias `m` lies in the window. */
  within: string;
}

/** The window named `name` of a claim of `limit` rows, after the row `from` (null: the start). */
function headsWindow(
  messages: string,
  name: string,
  limit: number,
  from: string | null,
): HeadsWindow {
  const cte = `${name} AS MATERIALIZED (
    SELECT w.due_at, w.id FROM ${messages} w
    WHERE w.delivered_at IS NULL AND w.dead_at IS NULL${
      from === null
        ? ''
        : `
      AND (w.due_at, w.id) > ${from}`
    }
    ORDER BY w.due_at, w.id
    OFFSET ${(from === null ? 2 : 1) * HEADS_WINDOW_PER_ROW * limit - 1} LIMIT 1
  ),`;
  // Two scalar subqueries, not a row subquery: the comparison is then an index condition of the
  // scan, which stops at the window's end. No last row: the window runs to the end.
  const within = ` AND (m.due_at, m.id) <= ((SELECT coalesce(max(due_at), 'infinity') FROM ${name}),
        (SELECT coalesce(max(id), 0) FROM ${name}))`;
  return { cte, within };
}
