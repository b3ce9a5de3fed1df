/**
 * The one drain builder. Every drain a runtime runs on someone's behalf is `createDrainer(setup)`
 * called with a request: `outbox drain` (once and continuous), the Workers and Lambda kits, the
 * Node schedule and `runDrainLoop`, the after-commit kick and the admin's `POST /drain`. The
 * setup's settings reach `drainOnce` as set; the request adds which rows, how many and by when.
 * This is also where "you have N ms" becomes a deadline and timeouts that fit.
 */
import { drainOnce } from '../core/drain.js';
import {
  DEFAULT_ROUND_TRIP_RESERVE_MS,
  DEFAULT_SEND_TIMEOUT_MS,
  DEFAULT_SETTLE_GROUP_MS,
  type DrainOptions,
  type DrainReport,
  type DrainTuning,
} from '../core/drain-settings.js';
import { ConfigurationError } from '../core/errors.js';
import type { OutboxStore } from '../core/outbox-store.js';
import { type Clock, systemClock } from '../core/ports.js';
import { type PurgeOptions, type PurgeReport, type PurgeStore, purgeOnce } from '../core/purge.js';
import type { SenderRegistry } from '../core/sender.js';

/** What one run of a drainer is asked to do: which rows, how many, and by when. */
export interface DrainRequest {
  /** Only these message keys (the after-commit kick). */
  keys?: readonly string[];
  maxMessages?: number;
  /**
   * Time the drain may take: its deadline, and the room its send timeout and round-trip reserve
   * must fit in ({@link budgetedTimeouts}). Omitted: no deadline, and the timeouts as set (the
   * CLI's `outbox drain --once` without `--budget-ms`).
   */
  budgetMs?: number;
  /**
   * Most subrequests: SQL round trips, sends and what senders report (Workers: left in this
   * invocation). Wins over the setup's `subrequestBudget`.
   */
  subrequestBudget?: number;
  /**
   * Ms left, read before every step (Lambda's remaining time): the deadline itself, where
   * `budgetMs` then only sizes the send timeout and round-trip reserve.
   */
  timeLeftMs?: () => number;
  /** Stop claiming; what is in flight finishes and everything is settled (a loop's stop). */
  signal?: AbortSignal;
}

/** Runs a bounded drain with fixed senders and settings: what the kick, admin and schedules call. */
export type Drainer = (request: DrainRequest) => Promise<DrainReport>;

/**
 * Everything a runtime needs to drain and purge one outbox: the store, its senders, and the
 * settings every drain of it runs with, named as `drainOnce` names them ({@link DrainTuning}).
 *
 * @example
 * const setup: DrainerOptions = {
 *   store: outbox.store(db),
 *   senders: { email: sesSender(config) },
 *   batchSize: 50,
 *   sendTimeoutMs: 5_000, // a kick's 5 s budget lowers it to 2.5 s; nothing raises it
 * };
 */
export interface DrainerOptions
  extends DrainTuning,
    Pick<
      DrainOptions,
      'clock' | 'logger' | 'newId' | 'random' | 'onDestinationChange' | 'tracer' | 'resume'
    > {
  /** `outbox.store(db)`: claims and settles, and (for schedules) purges. */
  store: OutboxStore & PurgeStore;
  senders: SenderRegistry;
  /** Subrequests each drain may make, unless its request says otherwise. Default: no limit. */
  subrequestBudget?: number;
  /** Retention for the scheduled purge (defaults: `purgeOnce`'s). */
  purge?: Omit<PurgeOptions, 'store' | 'clock'>;
  /**
   * Your own clean-up, run right after each scheduled outbox purge (expired idempotency keys,
   * say): one housekeeping schedule for both. Returns row counts, logged with the purge's.
   */
  purgeWith?: (now: Date) => Promise<Record<string, number>>;
}

/**
 * A {@link Drainer}: the one way a runtime builds its drains. Each run gets the setup's
 * settings as set, starts where the drainer's last run left off (`resume`: the setup's, or one
 * of the drainer's own), records itself for metrics at its end unless it is a kick (`recordRun`),
 * and, with a `budgetMs`, a deadline that far from now and send and round-trip
 * timeouts lowered to fit it ({@link budgetedTimeouts}). Throws a `ConfigurationError` (from the
 * run, before anything is claimed) when the budget cannot fit one claim, one send and one
 * settle with the setup's settle window: such a drain could never send anything.
 *
 * @example
 * const drain = createDrainer({ store: outbox.store(db), senders: { email: sesSender(config) } });
 * await drain({ budgetMs: 5_000, keys });  // deliver what this request just wrote
 */
export function createDrainer(setup: DrainerOptions): Drainer {
  if ('defaults' in setup) {
    // The settings used to sit under `defaults`; ignoring them would drain with other ones.
    throw new ConfigurationError(
      'createDrainer: `defaults` is gone; set its fields on the options themselves ({ store, senders, batchSize, ... })',
    );
  }
  const resumed = setup.resume === undefined ? { ...setup, resume: {} } : setup;
  return async (request) => drainOnce(drainOptions(resumed, request));
}

/**
 * The one place a drain's options are put together: the setup's fields, spread whole so none is
 * lost on the way, then the request's rows, limits and signal, then the budget's deadline and
 * timeouts.
 */
function drainOptions(setup: DrainerOptions, request: DrainRequest): DrainOptions {
  const { purge, purgeWith, ...settings } = setup;
  const clock = setup.clock ?? systemClock;
  const options: DrainOptions = {
    ...settings,
    clock,
    keys: request.keys,
    maxMessages: request.maxMessages,
    subrequestBudget: request.subrequestBudget ?? setup.subrequestBudget,
    signal: request.signal,
    // A kick is the request path's follow-up, one per write: its record would cost a statement
    // on every request and crowd the histogram with runs of a message or two. The schedule's
    // drains, the CLI's and the admin's are the runs an operator watches.
    recordRun: request.keys === undefined,
  };
  if (request.budgetMs !== undefined) {
    Object.assign(options, fittedTimeouts(request.budgetMs, clock, settings));
  }
  if (request.timeLeftMs) options.deadline = request.timeLeftMs;
  return options;
}

/**
 * {@link budgetedTimeouts} for these settings, checked: a claim needs two round trips, one send
 * and the settle window before the deadline, and the budget only lowers the first two, so a
 * settle window longer than the rest of the budget is refused by name rather than left to a
 * drain that stops at once with nothing claimed.
 */
function fittedTimeouts(
  budgetMs: number,
  clock: Clock,
  settings: DrainTuning,
): ReturnType<typeof budgetedTimeouts> {
  const timeouts = budgetedTimeouts(budgetMs, clock, settings);
  const settleGroupMs = settings.settleGroupMs ?? DEFAULT_SETTLE_GROUP_MS;
  const neededMs = timeouts.sendTimeoutMs + 2 * timeouts.roundTripReserveMs + settleGroupMs;
  if (neededMs > budgetMs) {
    throw new ConfigurationError(
      `createDrainer: a budget of ${budgetMs} ms cannot fit one claim, send and settle: sendTimeoutMs (${timeouts.sendTimeoutMs}) + 2 x roundTripReserveMs (${timeouts.roundTripReserveMs}) + settleGroupMs (${settleGroupMs}) = ${neededMs} ms; lower settleGroupMs or give each drain more time`,
    );
  }
  return timeouts;
}

/** The smallest budget worth draining in: half a second per send. */
export const MIN_DRAIN_BUDGET_MS = 1_000;

/**
 * A deadline `budgetMs` from now, with a send timeout and round-trip reserve that fit inside it:
 * a send gets at most half the budget and a round trip at most a sixth, leaving room for the
 * claim and the settle around one send. The rule only lowers: `chosen` values that fit are
 * kept, smaller ones too; only what is unset takes the default (15 s per send, 2 s per round
 * trip, with which a 5 s kick could never start a send). `createDrainer` calls this with its
 * setup's values; calling it without yours drains with the defaults' timeouts.
 *
 * @example
 * budgetedTimeouts(5_000, { now: () => new Date() }, { sendTimeoutMs: 3_000 });
 * // { deadline: 5 s from now, sendTimeoutMs: 2_500, roundTripReserveMs: 833 }
 */
export function budgetedTimeouts(
  budgetMs: number,
  clock: Clock = systemClock,
  chosen: Pick<DrainTuning, 'sendTimeoutMs' | 'roundTripReserveMs'> = {},
): { deadline: Date; sendTimeoutMs: number; roundTripReserveMs: number } {
  return {
    deadline: new Date(clock.now().getTime() + budgetMs),
    sendTimeoutMs: Math.min(
      chosen.sendTimeoutMs ?? DEFAULT_SEND_TIMEOUT_MS,
      Math.floor(budgetMs / 2),
    ),
    roundTripReserveMs: Math.min(
      chosen.roundTripReserveMs ?? DEFAULT_ROUND_TRIP_RESERVE_MS,
      Math.floor(budgetMs / 6),
    ),
  };
}

/** One scheduled invocation's request: a {@link DrainRequest}'s budget, and the purge. */
export interface ScheduledRunOptions extends Pick<DrainRequest, 'timeLeftMs' | 'subrequestBudget'> {
  /** Time the drain may take; sizes send timeouts and round-trip reserves. */
  budgetMs: number;
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
  const result: ScheduledRunResult = {};
  if (options.purge !== 'instead') {
    result.drain = await createDrainer(setup)({
      budgetMs: Math.max(options.budgetMs, MIN_DRAIN_BUDGET_MS),
      subrequestBudget: options.subrequestBudget,
      timeLeftMs: options.timeLeftMs,
    });
  }
  if (options.purge !== undefined) Object.assign(result, await runScheduledPurge(setup));
  return result;
}

/** What one scheduled purge did: the outbox's rows, and what `purgeWith` reported. */
export type ScheduledPurgeResult = Required<Pick<ScheduledRunResult, 'purge'>> &
  Pick<ScheduledRunResult, 'purgedWith'>;

/**
 * One scheduled purge of `setup`: `purgeOnce` with the setup's retention (`purge`) and clock,
 * then the setup's own clean-up (`purgeWith`). The kits and the Node schedule purge through
 * this, so retention set once applies on every runtime.
 */
export async function runScheduledPurge(setup: DrainerOptions): Promise<ScheduledPurgeResult> {
  const clock = setup.clock ?? systemClock;
  const purge = await purgeOnce({ ...setup.purge, store: setup.store, clock });
  if (!setup.purgeWith) return { purge };
  return { purge, purgedWith: await setup.purgeWith(clock.now()) };
}
