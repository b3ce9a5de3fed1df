/**
 * Destination health for operators (docs/destinations.md): each destination's state, and pause
 * and resume by hand. Every call is one statement.
 */
import type {
  DestinationChange,
  DestinationRecord,
  PauseCause,
} from '../core/destination-health.js';
import { ValidationError } from '../core/errors.js';
import { isDestinationName, MAX_DESTINATION_NAME_LENGTH } from '../core/message.js';
import type { SqlExecutor } from '../core/ports.js';
import {
  type DestinationOperatorStatements,
  type DestinationStatements,
  destinationOperatorStatements,
  destinationStatements,
  PAUSED_UNTIL_RESUMED,
} from './destination-statements.js';
import { toDateOrNull } from './message-rows.js';

/** Destinations one list returns when no limit is given, and at most. */
export const DEFAULT_DESTINATION_LIMIT = 100;
export const MAX_DESTINATION_LIMIT = 1000;

/**
 * Thirty days: the longest pause an operator gives an end (the CLI's `--for`, the API's
 * `forMs`). A timed pause is for an outage of known length, a maintenance window or a
 * receiver's planned downtime; anything longer is better paused until resumed, which the list
 * shows as such, than left to end on its own a month later unnoticed.
 */
export const MAX_TIMED_PAUSE_MS = 30 * 24 * 3_600_000;

/**
 * When a pause of `forMs` from `now` ends, for {@link PostgresDestinationStore.pause}'s
 * `until`. A ValidationError naming `forMs` unless it is a whole number of ms from 1 to
 * {@link MAX_TIMED_PAUSE_MS}.
 *
 * @example
 * const now = new Date();
 * await store.destinations().pause('https://hooks.example.com', now, timedPauseEnd(now, 600_000));
 */
export function timedPauseEnd(now: Date, forMs: unknown): Date {
  if (
    typeof forMs !== 'number' ||
    !Number.isSafeInteger(forMs) ||
    forMs < 1 ||
    forMs > MAX_TIMED_PAUSE_MS
  ) {
    throw new ValidationError(
      'forMs',
      `expected a whole number of ms from 1 to ${MAX_TIMED_PAUSE_MS}`,
    );
  }
  return new Date(now.getTime() + forMs);
}

/** Whether a destination is paused (open or half-open), as `/metrics` reports it. */
export interface DestinationPaused {
  destination: string;
  paused: boolean;
}

export class PostgresDestinationStore {
  private readonly sql: DestinationStatements;
  private readonly operator: DestinationOperatorStatements;

  constructor(
    private readonly db: SqlExecutor,
    quotedSchema: string,
  ) {
    this.sql = destinationStatements(quotedSchema);
    this.operator = destinationOperatorStatements(quotedSchema);
  }

  /**
   * Destinations with a health record (every one that has failed, or been paused), paused ones
   * first, then by name; `after` the last name of a page continues the list in that order.
   * One statement; the waiting counts are one pass over the waiting messages for the page.
   */
  async list(
    now: Date,
    options: { limit?: number; after?: string } = {},
  ): Promise<DestinationRecord[]> {
    const limit = checkedLimit(options.limit ?? DEFAULT_DESTINATION_LIMIT);
    const after = options.after === undefined ? null : checkedDestination(options.after, 'after');
    const result = await this.db.query(this.operator.listDestinationPage, [now, limit, after]);
    return result.rows.map(destinationFromRow);
  }

  /**
   * Pauses a destination by hand until `until` (default: until resumed): no message of it is
   * claimed meanwhile. Messages already out finish. When the pause ends on its own, one probe
   * goes first, as after any pause. A pause replaces the one before, shorter or longer: the
   * messages that one held are held to the new end. The record's `waiting` here is how many
   * pending messages the pause holds (moved to its end); those due later on their own are not
   * counted.
   */
  async pause(destination: string, now: Date, until?: Date): Promise<DestinationRecord> {
    const name = checkedDestination(destination, 'destination');
    const end = until ?? PAUSED_UNTIL_RESUMED;
    if (!(end instanceof Date) || Number.isNaN(end.getTime()) || end <= now) {
      throw new ValidationError('until', 'expected a time after now');
    }
    const result = await this.db.query(this.operator.pauseAndParkDestination, [name, now, end]);
    return destinationFromRow(result.rows[0]!);
  }

  /**
   * Ends a destination's pause, whatever paused it, and clears its failure count; its waiting
   * messages are due now. Null when the destination has no health record (nothing to resume).
   * The record's `waiting` here is how many messages the resume made due now (those its pause
   * held back).
   */
  async resume(destination: string, now: Date): Promise<DestinationRecord | null> {
    const name = checkedDestination(destination, 'destination');
    const result = await this.db.query(this.sql.resumeDestination, [name, now]);
    const row = result.rows[0];
    return row === undefined ? null : destinationFromRow(row);
  }

  /**
   * Whether each destination with a health record is paused, paused ones first, then by name,
   * at most `limit` ({@link MAX_DESTINATION_LIMIT}, the default). One statement over the
   * destinations table only: what a scrape of `/metrics` can afford every few seconds.
   */
  async pausedFlags(limit = MAX_DESTINATION_LIMIT): Promise<DestinationPaused[]> {
    const result = await this.db.query(this.operator.pausedDestinations, [checkedLimit(limit)]);
    return result.rows.map((row) => ({
      destination: String(row.destination),
      paused: row.paused === true,
    }));
  }
}

/**
 * Whether a record's pause lasts until an operator resumes it (an operator's pause without an
 * end): its `pausedUntil` is the far-future time such a pause is stored with.
 */
export function pausedUntilResumed(record: Pick<DestinationRecord, 'pausedUntil'>): boolean {
  return (
    record.pausedUntil !== null && record.pausedUntil.getTime() >= PAUSED_UNTIL_RESUMED.getTime()
  );
}

function checkedLimit(limit: number): number {
  if (!Number.isInteger(limit) || limit < 1 || limit > MAX_DESTINATION_LIMIT) {
    throw new ValidationError(
      'limit',
      `expected a whole number from 1 to ${MAX_DESTINATION_LIMIT}`,
    );
  }
  return limit;
}

/**
 * `value` when it can be a destination's name (1 to {@link MAX_DESTINATION_NAME_LENGTH}
 * characters PostgreSQL can store), else a ValidationError naming `field`: what every method
 * here checks first, for callers that check input before they connect.
 */
export function checkedDestination(value: unknown, field: string): string {
  if (!isDestinationName(value)) {
    throw new ValidationError(
      field,
      `expected a destination name of 1 to ${MAX_DESTINATION_NAME_LENGTH} characters`,
    );
  }
  return value as string;
}

function destinationFromRow(row: Record<string, unknown>): DestinationRecord {
  return {
    destination: String(row.destination),
    state: row.state as DestinationRecord['state'],
    failures: Number(row.failures ?? 0),
    pauses: Number(row.pauses ?? 0),
    pausedBy: (row.paused_by ?? null) as PauseCause | null,
    pausedAt: toDateOrNull(row.paused_at),
    pausedUntil: toDateOrNull(row.paused_until),
    probeUntil: toDateOrNull(row.probe_until),
    lastError: (row.last_error ?? null) as string | null,
    lastFailureAt: toDateOrNull(row.last_failure_at),
    recoveredAt: toDateOrNull(row.recovered_at),
    waiting: Number(row.waiting ?? 0),
  };
}

/** A row of the settle's result: a stale outcome's id, or (destination set) a health change. */
export interface SettleRow {
  id: string | null;
  destination?: string | null;
  change?: 'paused' | 'resumed';
  paused_by?: PauseCause | null;
  paused_until?: Date | string | null;
  failures?: number | null;
  last_error?: string | null;
}

export function destinationChangeFromRow(row: SettleRow): DestinationChange {
  return {
    destination: String(row.destination),
    change: row.change === 'paused' ? 'paused' : 'resumed',
    pausedBy: row.paused_by ?? null,
    pausedUntil: toDateOrNull(row.paused_until),
    failures: Number(row.failures ?? 0),
    lastError: row.last_error ?? null,
  };
}
