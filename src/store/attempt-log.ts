/**
 * Attempt history as the store keeps it (migrations/0007_attempt_history.sql): the failed
 * attempts of a message as a JSON array on its row (`attempt_log`), appended to by the settle
 * that records each failure, and a delivery's status and duration beside it in history. This
 * module writes one attempt's JSON for the settle, holds the SQL that appends it, and reads the
 * whole history back for operators.
 */
import { attemptErrorExcerpt } from '../core/attempt-facts.js';
import type { AttemptRecord, MessageRecord } from '../core/outbox-store.js';
import type { Settlement } from '../core/settlement.js';
import { type MessageRow, messageFromRow, toDateOrNull } from './message-rows.js';

/**
 * Attempts kept per message, newest last: a settle that records one more drops the oldest. Ten
 * attempts is the default budget, so all of them are kept; a message allowed up to 1,000 keeps
 * its newest hundred, about 130 KiB at most, so its row (and a history group of 1,000 such
 * messages) stays far from PostgreSQL's 1 GB limit for one value, and every retry rewrites at
 * most that much.
 */
export const MAX_RECORDED_ATTEMPTS = 100;

/**
 * The JSON object the settle appends for a failed attempt (a retry or a dead letter), or null
 * for any other outcome: deliveries are recorded as two numbers ({@link deliveryStatus}, {@link deliveryDuration}),
 * releases were no attempt. Its number is added by the statement (the row's attempt count).
 */
export function failedAttemptJson(settlement: Settlement): string | null {
  if (settlement.outcome !== 'retry' && settlement.outcome !== 'dead') return null;
  const facts = settlement.attempt;
  const error = settlement.outcome === 'retry' ? settlement.error : settlement.reason;
  // Keys are short: a hundred of them per message are stored, and shown only through this module.
  return JSON.stringify({
    at: facts?.startedAt.toISOString(),
    ms: facts?.durationMs,
    outcome: settlement.outcome,
    status: facts?.status ?? undefined,
    code: facts?.providerCode ?? undefined,
    destination: facts?.destination ?? undefined,
    error: attemptErrorExcerpt(error),
  });
}

/** A delivery's HTTP status for the settle; null when not reported, and for other outcomes. */
export function deliveryStatus(settlement: Settlement): number | null {
  return settlement.outcome === 'delivered' ? (settlement.attempt?.status ?? null) : null;
}

/** A delivery's duration in ms for the settle; null when not measured, and for other outcomes. */
export function deliveryDuration(settlement: Settlement): number | null {
  return settlement.outcome === 'delivered' ? (settlement.attempt?.durationMs ?? null) : null;
}

/**
 * The settle's new `attempt_log` for a row of messages (alias m) and its outcome (alias o, with
 * `attempt` the JSON of a failed attempt, `status` and `ms` a delivery's), given the settle's
 * time: the failed attempt appended, or, for a delivery that stays in messages (a dedupe key
 * keeps it there), the delivery; the oldest dropped past {@link MAX_RECORDED_ATTEMPTS}.
 * A release leaves the log as it was.
 */
export function appendedAttemptLog(now: string): string {
  const kept = keptLog();
  return `CASE
          WHEN o.attempt IS NOT NULL THEN ${kept}
            || jsonb_build_array(jsonb_build_object('attempt', m.attempts) || o.attempt)
          WHEN o.outcome = 'delivered' THEN ${kept}
            || jsonb_build_array(jsonb_strip_nulls(jsonb_build_object('attempt', m.attempts,
              'at', ${now}, 'ms', o.ms, 'outcome', 'delivered', 'status', o.status)))
          ELSE m.attempt_log END`;
}

/**
 * The `attempt_log` a message resent from history (alias a, a delivered_message, with its
 * group's time as `deliveredAt`) takes back into messages: the failures history kept, then the
 * delivery it had, as the settle of a dedupe-kept delivery writes it, so the message page still
 * shows the earlier delivery once the resend's own attempts follow.
 */
export function resentAttemptLog(deliveredAt: string): string {
  return `${keptLog('a')}
          || jsonb_build_array(jsonb_strip_nulls(jsonb_build_object('attempt', a.attempts,
            'at', ${deliveredAt}, 'ms', a.delivery_ms, 'outcome', 'delivered',
            'status', a.delivery_status)))`;
}

/** A row's log (alias `row`) with room for one more entry: the oldest dropped at the cap. */
function keptLog(row = 'm'): string {
  return `CASE WHEN jsonb_array_length(coalesce(${row}.attempt_log, '[]'::jsonb))
              >= ${MAX_RECORDED_ATTEMPTS} THEN ${row}.attempt_log - 0
            ELSE coalesce(${row}.attempt_log, '[]'::jsonb) END`;
}

/** The columns a read of one message adds from messages (alias m): its log, no delivery columns. */
export const LIVE_ATTEMPT_COLUMNS = `m.attempt_log, NULL::integer AS delivery_status,
  NULL::integer AS delivery_ms`;

/** The same from history (alias h): the failures it brought along, and its delivery. */
export const DELIVERED_ATTEMPT_COLUMNS = 'h.attempt_log, h.delivery_status, h.delivery_ms';

/** The attempt columns of a row read with them. */
export interface AttemptRow {
  attempt_log: unknown;
  delivery_status: number | null;
  delivery_ms: number | null;
}

/**
 * A message's attempts from its row: the log's entries (anything in it that is not an attempt
 * object is skipped, so a log edited by hand cannot break a read) and, for a message in history,
 * its delivery, at `deliveredAt`, as attempt number `attempts`. History written before
 * migration 0007 has no status or duration: its delivery shows with nulls.
 */
export function attemptsFromRow(
  row: AttemptRow,
  inHistory: boolean,
  attempts: number,
  deliveredAt: Date | null,
): AttemptRecord[] {
  const log = typeof row.attempt_log === 'string' ? parseLog(row.attempt_log) : row.attempt_log;
  const records = Array.isArray(log) ? log.flatMap(attemptFromJson) : [];
  if (inHistory) {
    records.push({
      attempt: attempts,
      at: deliveredAt,
      durationMs: row.delivery_ms === null ? null : Number(row.delivery_ms),
      outcome: 'delivered',
      status: row.delivery_status === null ? null : Number(row.delivery_status),
      providerCode: null,
      destination: null,
      error: null,
    });
  }
  return records;
}

/** Some drivers hand jsonb back as text. */
function parseLog(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return null;
  }
}

const OUTCOMES: ReadonlySet<string> = new Set(['delivered', 'retry', 'dead']);

function attemptFromJson(entry: unknown): AttemptRecord[] {
  if (typeof entry !== 'object' || entry === null) return [];
  const fields = entry as Record<string, unknown>;
  if (typeof fields.outcome !== 'string' || !OUTCOMES.has(fields.outcome)) return [];
  const at = typeof fields.at === 'string' ? toDateOrNull(fields.at) : null;
  return [
    {
      attempt: numberOrNull(fields.attempt),
      at: at !== null && Number.isNaN(at.getTime()) ? null : at,
      durationMs: numberOrNull(fields.ms),
      outcome: fields.outcome as AttemptRecord['outcome'],
      status: numberOrNull(fields.status),
      providerCode: stringOrNull(fields.code),
      destination: stringOrNull(fields.destination),
      error: stringOrNull(fields.error),
    },
  ];
}

function numberOrNull(value: unknown): number | null {
  return typeof value === 'number' && Number.isFinite(value) ? value : null;
}

function stringOrNull(value: unknown): string | null {
  return typeof value === 'string' ? value : null;
}

/**
 * A record read with its attempt columns. A row of messages in state 'delivered' (a dedupe key
 * kept it there) has its delivery in its log already; one from history gets it added.
 */
export function recordWithAttempts(row: MessageRow & AttemptRow): MessageRecord {
  const record = messageFromRow(row);
  const inHistory = record.state === 'delivered' && row.dedupe_key === null;
  record.attemptLog = attemptsFromRow(row, inHistory, record.attempts, record.deliveredAt);
  return record;
}
