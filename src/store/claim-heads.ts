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
import { CURSOR_AT, scanFromCursor } from './claim-cursor.js';

/**
 * Rows of the due order a claim taking heads reads, per row of its limit: four after the cursor,
 * twice that from the start of the due order, whose head holds the rows claimed and not yet
 * settled (a fast drain's claims on the wire, queued rows and unsettled outcomes: two or three
 * batches). A scan's window counts the rows the claim could take but for their key's head: due,
 * of a kind the drain sends, not paused, not locked by another claim.
 */
export const HEADS_WINDOW_PER_ROW = 4;

/** The pieces of the claim statement the scans for heads read, as claim-statements.ts builds them. */
export interface HeadsScanParts {
  /**
   * The due rows of the scan's part of the due order (`where`, on alias `m`), in due order, at
   * most `rows` of them, each locked (FOR UPDATE SKIP LOCKED) as it is read, with
   * `ordering_key` for the head check that follows: a select over alias `m`.
   */
  lockedInDueOrder: (where: string, rows: number) => string;
  /** Whether the row of alias `m` is its key's head (true for a row without a key). */
  isHead: string;
}

/**
 * The CTE `heads`, the rows a claim taking heads takes, and before it the scans that find them.
 * Each scan reads its window of due rows in due order, locking each as it reads it, and takes
 * the heads among them up to the limit. The window is the read's LIMIT, and the read goes only
 * as far as the heads taken need: the LIMIT above it stops the read at the claim's last row.
 * (A window found first, the `4 x limit`-th unfinished row as a bound on the scan, read that
 * many index entries on every claim: over 1,000 keys of 5, reading only as far as the claim
 * takes cost 0.92x to 0.98x the server CPU per message at 1.02x to 1.06x the rate;
 * docs/benchmarks.md, "Heads read as far as they take".) The lock comes before the head check,
 * so a row the scan reads that is not its key's head stays locked until the claim commits: a
 * claim that meets it meanwhile steps over it, and it waits behind that claim's cursor as rows a
 * lock hid do.
 *
 * After a cursor, the scan runs from it as every claim's does (scanFromCursor, claim-cursor.ts),
 * the part behind it with the wider window. Without a cursor, the due order from the start, with
 * the wider window.
 */
export function headsScans(parts: HeadsScanParts, limit: number, cursor: boolean): string {
  const window = HEADS_WINDOW_PER_ROW * limit;
  // The read's rows keep its due order through the filter and the LIMIT above it (no sort: the
  // planner does not know the locked rows are in order, and a sort would read them all).
  const scan = (where: string, rows: number, heads: string) => `
    SELECT m.id, m.kind, m.destination, m.due_at, m.exhausted, m.watched
    FROM (${parts.lockedInDueOrder(where, rows)}) m
    WHERE ${parts.isHead}
    LIMIT ${heads}`;
  if (!cursor)
    return `heads AS (${scan('', 2 * window, String(limit))}
  ),`;
  return scanFromCursor('heads', limit, (where, heads, side) =>
    scan(where, side === 'ahead' ? window : 2 * window, heads),
  );
}

/**
 * Whether a claim taking heads was held back, `heldBack` (its rows are the CTE `heads`), and the
 * CTEs it reads: the claim came back short while the due order ran on past a window it read, so
 * rows it did not read may be claimable, and the drain should claim again rather than take the
 * claim for the end of what was due. A window here is the `4 x limit`-th unfinished row in due
 * order after the cursor (twice that from the start), by messages_claimable's entries alone; a
 * scan's window (headsScans) counts only the rows it could take, so it reaches at least as far,
 * and a claim whose scans read every due row is never held back. The window from the start ended
 * early only if it ended before the cursor and among due rows (past a row not yet due, nothing is
 * due: so a claim from the start, which reads a cursor past every row, says what the text without
 * a cursor says). Read only when the claim is short.
 */
export function headsWindows(
  messages: string,
  limit: number,
  cursor: boolean,
  now: string,
): { ctes: string; heldBack: string } {
  const ahead = headsWindow(messages, 'ahead_window', limit, cursor ? CURSOR_AT : null);
  const behind = cursor ? headsWindow(messages, 'behind_window', limit, null) : undefined;
  return {
    ctes: `${ahead}${behind ? `\n  ${behind}` : ''}
  `,
    heldBack: `(CASE WHEN (SELECT count(*) FROM heads) < ${limit} THEN
      EXISTS (SELECT 1 FROM ahead_window WHERE due_at <= ${now})${
        behind
          ? `
      OR EXISTS (SELECT 1 FROM behind_window w WHERE (w.due_at, w.id) < ${CURSOR_AT} AND w.due_at <= ${now})`
          : ''
      }
    ELSE false END)`,
  };
}

/**
 * The CTE `name`: the window's last row, the `HEADS_WINDOW_PER_ROW * limit`-th unfinished row
 * in due order after `from` (from the start when null, twice as far); no row when the due order
 * ends first. A scan of messages_claimable's entries that need not read the rows.
 */
function headsWindow(messages: string, name: string, limit: number, from: string | null): string {
  return `${name} AS MATERIALIZED (
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
}
