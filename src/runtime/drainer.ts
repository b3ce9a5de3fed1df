import {
  DEFAULT_ROUND_TRIP_RESERVE_MS,
  DEFAULT_SEND_TIMEOUT_MS,
  type DrainOptions,
  drainOnce,
} from '../core/drain.js';
import type { OutboxStore } from '../core/outbox-store.js';
import { type Clock, systemClock } from '../core/ports.js';
import type { SenderRegistry } from '../core/sender.js';
import type { Drainer } from '../http/app-deps.js';

export interface DrainerOptions {
  store: OutboxStore;
  senders: SenderRegistry;
  clock?: Clock;
  /** Anything else for every drain (batch size, concurrency, logger, backoff). */
  defaults?: Partial<Omit<DrainOptions, 'store' | 'senders' | 'deadline' | 'keys' | 'maxMessages'>>;
}

/**
 * A {@link Drainer}: bounded drains for a time budget, as the kick, `POST /admin/drain` and the
 * schedules need. Timeouts shrink with the budget: with the defaults (15 s per send, 2 s per
 * round trip) a 5 s kick could never start a send, so a send gets at most half the budget and a
 * round trip at most a sixth, leaving room for the claim and the settle around one send.
 */
export function createDrainer(options: DrainerOptions): Drainer {
  const clock = options.clock ?? options.defaults?.clock ?? systemClock;
  return ({ keys, maxMessages, budgetMs }) =>
    drainOnce({
      ...options.defaults,
      store: options.store,
      senders: options.senders,
      clock,
      keys,
      maxMessages,
      ...budgetedTimeouts(budgetMs, clock, options.defaults),
    });
}

/** The smallest budget worth draining in: half a second per send. */
export const MIN_DRAIN_BUDGET_MS = 1_000;

/**
 * A deadline `budgetMs` from now, with a send timeout and round-trip reserve that fit inside
 * it: at most half the budget per send and a sixth per round trip (never more than the
 * defaults), so one claim, one send and one settle always fit.
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
