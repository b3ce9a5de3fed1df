/**
 * Message rows as the drivers return them, turned into the core's records: whole records for
 * lists and lookups (MESSAGE_COLUMNS), the lean claimed message for the drain (CLAIMED_COLUMNS).
 */
import type { JsonValue } from '../core/message.js';
import { compareMessageIds } from '../core/message-id.js';
import type {
  ClaimedMessage,
  ClaimResult,
  ExhaustedMessage,
  MessageRecord,
  MessageState,
} from '../core/outbox-store.js';
import type { TraceContext } from '../core/trace-context.js';
import type { ClaimCursor } from './claim-position.js';
import type { RowPlace } from './settle-size.js';

/** A row as the drivers return it: int8 as string, timestamptz as Date, jsonb parsed. */
export interface MessageRow {
  id: string | number;
  key: string;
  kind: string;
  payload: JsonValue;
  ordering_key: string | null;
  dedupe_key: string | null;
  state: MessageState;
  attempts: number;
  max_attempts: number;
  due_at: Date | string;
  claimed_at: Date | string | null;
  last_error: string | null;
  created_at: Date | string;
  delivered_at: Date | string | null;
  dead_at: Date | string | null;
  /** Rows from before migration 0012's columns were read (or a statement without them). */
  traceparent?: string | null;
  tracestate?: string | null;
}

export function messageFromRow(row: MessageRow): MessageRecord {
  return {
    id: String(row.id),
    key: row.key,
    kind: row.kind,
    payload: row.payload,
    orderingKey: row.ordering_key,
    dedupeKey: row.dedupe_key,
    state: row.state,
    attempts: Number(row.attempts),
    maxAttempts: Number(row.max_attempts),
    dueAt: toDate(row.due_at),
    claimedAt: toDateOrNull(row.claimed_at),
    lastError: row.last_error,
    createdAt: toDate(row.created_at),
    deliveredAt: toDateOrNull(row.delivered_at),
    deadAt: toDateOrNull(row.dead_at),
    ...(row.traceparent ? { traceContext: traceContextOf(row) } : {}),
  };
}

/** The trace context of a row that has one (`traceparent` set). */
function traceContextOf(row: Pick<MessageRow, 'traceparent' | 'tracestate'>): TraceContext {
  return row.tracestate
    ? { traceparent: row.traceparent!, tracestate: row.tracestate }
    : { traceparent: row.traceparent! };
}

/** A claim's row: CLAIMED_COLUMNS. */
export type ClaimedRow = Pick<
  MessageRow,
  | 'id'
  | 'key'
  | 'kind'
  | 'payload'
  | 'ordering_key'
  | 'attempts'
  | 'max_attempts'
  | 'state'
  | 'traceparent'
  | 'tracestate'
> & {
  /** Its creation time as whole epoch milliseconds (float8: a number, or text from some drivers). */
  created_ms: number | string;
  /** Its destination had failures or a pause (null: it has none). */
  watched?: boolean | null;
  /** A half-open destination's probe, taken beside the due rows (due claims only). */
  probe?: boolean;
  /** The ctid of the row version the claim wrote, as text: `(page,item)`. */
  row_id: string;
  /** pg_column_size of the payload (int4). */
  payload_bytes: number | string;
  /** The row's due time as epoch milliseconds (float8: a number, or text from some drivers). */
  due_ms: number | string;
  /** Due claims: the last key the walk took a run of (the same on every row). */
  walk_key?: string | null;
  /**
   * Keyed due claims: the runs that continue a held run, `first last` pairs comma separated (see
   * keyedClaimFlags in claim-walk.ts; every row alike).
   */
  continued?: string | null;
  /** Due claims: nothing more was claimable until these rows are recorded (every row alike). */
  caught_up?: boolean | null;
  /** Keyed due claims: no message with an ordering key was unfinished (every row alike). */
  keyless?: boolean | null;
  /** Unkeyed due claims: a message with an ordering key is unfinished (every row alike). */
  keyed_waiting?: boolean | null;
  /**
   * Due claims taking heads: the claim came back short while its scan's window ended among due
   * rows, so it may have left claimable rows unread (claim-heads.ts; every row alike).
   */
  held_back?: boolean | null;
};

/** The claimed message, with where its row is and its payload's size for its settle. */
export function claimedFromRow(row: ClaimedRow, claimToken: string): ClaimedMessage & RowPlace {
  const claimed: ClaimedMessage & RowPlace = {
    id: String(row.id),
    key: row.key,
    kind: row.kind,
    payload: row.payload,
    orderingKey: row.ordering_key,
    attempts: Number(row.attempts),
    maxAttempts: Number(row.max_attempts),
    createdAt: new Date(Math.round(Number(row.created_ms))),
    claimToken,
    rowId: row.row_id,
    payloadBytes: Number(row.payload_bytes),
    destinationWatched: row.watched === true,
  };
  // Set only for a traced row: the claim's hot path allocates nothing more for the rest.
  if (row.traceparent) claimed.traceContext = traceContextOf(row);
  return claimed;
}

export function toDate(value: unknown): Date {
  return value instanceof Date ? value : new Date(String(value));
}

export function toDateOrNull(value: unknown): Date | null {
  return value === null || value === undefined ? null : toDate(value);
}

/** A claim's result, and where it left off for the next claim's position (claim-position.ts). */
export interface RowsClaimed {
  result: ClaimResult;
  /** The last row without an ordering key it took, claimed or set aside, in due order. */
  last?: ClaimCursor;
  /** The key its walk took a run of last; absent when it took no key's run. */
  keysWalked?: string;
}

/**
 * A claim's result from its rows: the statement returns them as its update took them; they go
 * out in turns (every key's head and the unkeyed rows in due order, then every key's second
 * row, and so on), so a key's rows are queued in id order, each behind the one before it. The
 * last unkeyed row in due order (any row, with `keyedInDueOrder`) is where the next claim's
 * scan may start.
 */
export function claimResultFromRows(
  rows: readonly ClaimedRow[],
  claimToken: string,
  keyedInDueOrder = false,
): RowsClaimed {
  const claimed: ClaimedMessage[] = [];
  const exhausted: ExhaustedMessage[] = [];
  const behind = continuedRuns(rows[0]?.continued);
  const dueOrder = inDueOrder(rows);
  // A claim taking heads holds one row per key at most: its due order is in turns already.
  for (const row of keyedInDueOrder ? dueOrder : inTurns(dueOrder)) {
    if (row.state === 'claimed') {
      const message = claimedFromRow(row, claimToken);
      const last = behind.get(message.id);
      if (last !== undefined) message.behind = last;
      claimed.push(message);
    } else {
      const { id, key, kind, attempts } = claimedFromRow(row, claimToken);
      exhausted.push({ id, key, kind, attempts });
    }
  }
  const result: ClaimResult = { claimed, exhausted };
  const taken: RowsClaimed = { result };
  const keysWalked = rows.find((row) => row.walk_key != null)?.walk_key ?? undefined;
  if (keysWalked !== undefined) taken.keysWalked = keysWalked;
  if (rows[0]?.caught_up === true) result.caughtUp = true;
  // A probe (a half-open destination's one message) may lie anywhere in due order, and keyed
  // rows come from the walk unless `keyedInDueOrder` (a claim taking heads): the next claim's
  // scan starts after the last row the due scan took, never past rows it did not read.
  const lastRow = dueOrder.findLast(
    (row) => row.probe !== true && (keyedInDueOrder || row.ordering_key === null),
  );
  // Due times are whole milliseconds (enqueue truncates them; later writes come from Dates).
  if (lastRow)
    taken.last = { dueAt: new Date(Math.round(Number(lastRow.due_ms))), id: String(lastRow.id) };
  return taken;
}

/** The first row of each continuing run, with the held run's last row it comes behind. */
function continuedRuns(text: string | null | undefined): Map<string, string> {
  const behind = new Map<string, string>();
  if (!text) return behind;
  for (const pair of text.split(',')) {
    const [first, last] = pair.split(' ');
    behind.set(first!, last!);
  }
  return behind;
}

/**
 * Rows in due order by their place in their key's run (unkeyed rows first), then due time, then
 * id. Over many keys most claims hold one row per key: they are then in turns already.
 */
function inTurns(dueOrder: readonly ClaimedRow[]): readonly ClaimedRow[] {
  const byKey = new Map<string, ClaimedRow[]>();
  let repeated = false;
  for (const row of dueOrder) {
    if (row.ordering_key === null) continue;
    const run = byKey.get(row.ordering_key);
    if (run) {
      run.push(row);
      repeated = true;
    } else byKey.set(row.ordering_key, [row]);
  }
  if (!repeated) return dueOrder;
  const place = new Map<ClaimedRow, number>();
  for (const run of byKey.values()) {
    run.sort((a, b) => compareMessageIds(String(a.id), String(b.id)));
    for (const [index, row] of run.entries()) place.set(row, index);
  }
  return [...dueOrder].sort((a, b) => (place.get(a) ?? 0) - (place.get(b) ?? 0));
}

function inDueOrder(rows: readonly ClaimedRow[]): ClaimedRow[] {
  const keyed = rows.map((row) => ({ row, dueMs: Number(row.due_ms), id: String(row.id) }));
  keyed.sort((a, b) => a.dueMs - b.dueMs || compareMessageIds(a.id, b.id));
  return keyed.map((each) => each.row);
}
