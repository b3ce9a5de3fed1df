import { ConfigurationError } from './errors.js';
import { type Clock, systemClock } from './ports.js';

export interface PurgeRequest {
  now: Date;
  /** Delete delivered rows older than this many ms. Omit to keep them all. */
  deliveredOlderThanMs?: number;
  /** Delete dead rows older than this many ms. Omit to keep them all. */
  deadOlderThanMs?: number;
  /** Delete per-minute delivery counters older than this many ms. */
  countsOlderThanMs?: number;
  /** Rows per statement. */
  batchSize?: number;
  /** Stop after this many rows in all, so one invocation stays bounded. */
  limit?: number;
}

export interface PurgeReport {
  deliveredDeleted: number;
  deadDeleted: number;
  statements: number;
}

export interface PurgeStore {
  purge(request: PurgeRequest): Promise<PurgeReport>;
}

/**
 * Seven days of delivered rows: long enough to answer "did my email go out last week?" from the
 * dashboard, short enough that the table stays small.
 */
export const DEFAULT_KEEP_DELIVERED_MS = 7 * 24 * 60 * 60 * 1000;

/** Thirty days of dead letter: an operator has a month to look before it is gone. */
export const DEFAULT_KEEP_DEAD_MS = 30 * 24 * 60 * 60 * 1000;

/** Seven days of per-minute counters: a week of history for charts, about 10,000 rows a kind. */
export const DEFAULT_KEEP_COUNTS_MS = 7 * 24 * 60 * 60 * 1000;

/** Rows one purge invocation deletes at most, so it never competes long with drains. */
export const DEFAULT_PURGE_LIMIT = 10_000;

export interface PurgeOptions {
  store: PurgeStore;
  /** Default {@link DEFAULT_KEEP_DELIVERED_MS}; `null` keeps delivered rows forever. */
  deliveredOlderThanMs?: number | null;
  /** Default {@link DEFAULT_KEEP_DEAD_MS}; `null` keeps dead rows forever. */
  deadOlderThanMs?: number | null;
  /** Default {@link DEFAULT_PURGE_LIMIT}. */
  limit?: number;
  batchSize?: number;
  clock?: Clock;
}

/**
 * Deletes old delivered and dead rows in bounded, oldest-first statements that skip locked rows,
 * so the hot table stays small (bloat is what slows Postgres queues down over months). Run it
 * from the same schedule as the drain; it never touches pending or claimed rows.
 */
export async function purgeOnce(options: PurgeOptions): Promise<PurgeReport> {
  const delivered =
    options.deliveredOlderThanMs === undefined
      ? DEFAULT_KEEP_DELIVERED_MS
      : options.deliveredOlderThanMs;
  const deadRows =
    options.deadOlderThanMs === undefined ? DEFAULT_KEEP_DEAD_MS : options.deadOlderThanMs;
  for (const [name, value] of [
    ['deliveredOlderThanMs', delivered],
    ['deadOlderThanMs', deadRows],
  ] as const) {
    if (value !== null && !(Number.isFinite(value) && value >= 0)) {
      throw new ConfigurationError(`purgeOnce: ${name} must be a non-negative number of ms`);
    }
  }
  return options.store.purge({
    now: (options.clock ?? systemClock).now(),
    deliveredOlderThanMs: delivered ?? undefined,
    deadOlderThanMs: deadRows ?? undefined,
    countsOlderThanMs: DEFAULT_KEEP_COUNTS_MS,
    limit: options.limit ?? DEFAULT_PURGE_LIMIT,
    batchSize: options.batchSize,
  });
}
