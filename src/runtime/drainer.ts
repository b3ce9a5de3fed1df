/**
 * The time budget, in one place. Every runtime runs drains that must end by a deadline (a
 * cron invocation's limit, Lambda's remaining time, a kick inside a request's lifetime): this
 * module turns "you have N ms" into drain options that fit, and is what the runtime kits, the
 * CLI and the after-commit kick all call.
 */
import { drainOnce } from '../core/drain.js';
import {
  DEFAULT_ROUND_TRIP_RESERVE_MS,
  DEFAULT_SEND_TIMEOUT_MS,
  type DrainOptions,
  type DrainReport,
} from '../core/drain-settings.js';
import type { OutboxStore } from '../core/outbox-store.js';
import { type Clock, type Logger, systemClock } from '../core/ports.js';
import { type PurgeOptions, type PurgeReport, type PurgeStore, purgeOnce } from '../core/purge.js';
import type { SenderRegistry } from '../core/sender.js';

/** What a bounded drain run on someone's behalf needs to be told. */
export interface DrainRequest {
  /** Only these message keys (the after-commit kick). */
  keys?: readonly string[];
  maxMessages?: number;
  /** Time the drain may take. */
  budgetMs: number;
  /** Most subrequests: SQL round trips, sends and what senders report (Workers: left in this invocation). */
  subrequestBudget?: number;
  /**
   * Ms left, read before every step (Lambda's remaining time): the deadline itself, where
   * `budgetMs` then only sizes the send timeout and round-trip reserve.
   */
  timeLeftMs?: () => number;
}

/** Runs a bounded drain with fixed senders: what the kick, admin and schedules call. */
export type Drainer = (request: DrainRequest) => Promise<DrainReport>;

/** Everything a runtime needs to drain and purge one outbox: the store and its senders. */
export interface DrainerOptions {
  /** `outbox.store(db)`: claims and settles, and (for schedules) purges. */
  store: OutboxStore & PurgeStore;
  senders: SenderRegistry;
  clock?: Clock;
  logger?: Logger;
  /** Anything else for every drain (batch size, concurrency, backoff, prefetch, settle groups). */
  defaults?: Partial<
    Omit<DrainOptions, 'store' | 'senders' | 'deadline' | 'keys' | 'maxMessages' | 'logger'>
  >;
  /** Retention for the scheduled purge (defaults: `purgeOnce`'s). */
  purge?: Omit<PurgeOptions, 'store' | 'clock'>;
  /**
   * Your own clean-up, run right after each scheduled outbox purge (expired idempotency keys,
   * say): one housekeeping schedule for both. Returns row counts, logged with the purge's.
   */
  purgeWith?: (now: Date) => Promise<Record<string, number>>;
}

/**
 * A {@link Drainer}: bounded drains for a time budget, as the kick, `POST /drain` of the admin
 * app and the schedules need.
 *
 * @example
 * const drain = createDrainer({ store: outbox.store(db), senders: { email: sesSender(config) } });
 * await drain({ budgetMs: 5_000, keys });  // deliver what this request just wrote
 */
export function createDrainer(options: DrainerOptions): Drainer {
  const clock = options.clock ?? options.defaults?.clock ?? systemClock;
  return ({ keys, maxMessages, budgetMs, subrequestBudget, timeLeftMs }) =>
    drainOnce({
      ...options.defaults,
      store: options.store,
      senders: options.senders,
      clock,
      logger: options.logger,
      keys,
      maxMessages,
      subrequestBudget: subrequestBudget ?? options.defaults?.subrequestBudget,
      ...budgetedTimeouts(budgetMs, clock, options.defaults),
      ...(timeLeftMs ? { deadline: timeLeftMs } : {}),
    });
}

/** The smallest budget worth draining in: half a second per send. */
export const MIN_DRAIN_BUDGET_MS = 1_000;

/**
 * A deadline `budgetMs` from now, with a send timeout and round-trip reserve that fit inside
 * it. With the defaults (15 s per send, 2 s per round trip) a 5 s kick could never start a
 * send, so a send gets at most half the budget and a round trip at most a sixth, leaving room
 * for the claim and the settle around one send.
 */
export function budgetedTimeouts(
  budgetMs: number,
  clock: Clock = systemClock,
  defaults: { sendTimeoutMs?: number; roundTripReserveMs?: number } = {},
): Pick<DrainOptions, 'deadline' | 'sendTimeoutMs' | 'roundTripReserveMs'> {
  return {
    deadline: new Date(clock.now().getTime() + budgetMs),
    sendTimeoutMs: Math.min(
      defaults.sendTimeoutMs ?? DEFAULT_SEND_TIMEOUT_MS,
      Math.floor(budgetMs / 2),
    ),
    roundTripReserveMs: Math.min(
      defaults.roundTripReserveMs ?? DEFAULT_ROUND_TRIP_RESERVE_MS,
      Math.floor(budgetMs / 6),
    ),
  };
}

export interface ScheduledRunOptions {
  /** Time the drain may take; sizes send timeouts and round-trip reserves. */
  budgetMs: number;
  /** Ms left, read before every step (Lambda's remaining time); default `budgetMs` from now. */
  timeLeftMs?: () => number;
  /** Most subrequests: SQL round trips, sends and what senders report (Workers: per invocation). */
  subrequestBudget?: number;
  /** Purge instead of (`'instead'`) or after (`'after'`) the drain; default no purge. */
  purge?: 'instead' | 'after';
}

export interface ScheduledRunResult {
  drain?: DrainReport;
  purge?: PurgeReport;
  /** What `purgeWith` reported. */
  purgedWith?: Record<string, number>;
}

/**
 * One scheduled invocation's work: a bounded drain of every kind `setup` has a sender for,
 * and the purge when it is due. The Workers and Lambda kits run this.
 */
export async function runScheduledDrain(
  setup: DrainerOptions,
  options: ScheduledRunOptions,
): Promise<ScheduledRunResult> {
  const clock = setup.clock ?? setup.defaults?.clock ?? systemClock;
  const result: ScheduledRunResult = {};
  if (options.purge !== 'instead') {
    result.drain = await createDrainer(setup)({
      budgetMs: Math.max(options.budgetMs, MIN_DRAIN_BUDGET_MS),
      subrequestBudget: options.subrequestBudget,
      timeLeftMs: options.timeLeftMs,
    });
  }
  if (options.purge !== undefined) {
    result.purge = await purgeOnce({ ...setup.purge, store: setup.store, clock });
    if (setup.purgeWith) result.purgedWith = await setup.purgeWith(clock.now());
  }
  return result;
}
