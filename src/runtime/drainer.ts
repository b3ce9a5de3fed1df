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
  return ({ keys, maxMessages, budgetMs }) => {
    const sendTimeoutMs = Math.min(
      options.defaults?.sendTimeoutMs ?? DEFAULT_SEND_TIMEOUT_MS,
      Math.floor(budgetMs / 2),
    );
    const roundTripReserveMs = Math.min(
      options.defaults?.roundTripReserveMs ?? DEFAULT_ROUND_TRIP_RESERVE_MS,
      Math.floor(budgetMs / 6),
    );
    return drainOnce({
      ...options.defaults,
      store: options.store,
      senders: options.senders,
      clock,
      keys,
      maxMessages,
      deadline: new Date(clock.now().getTime() + budgetMs),
      sendTimeoutMs,
      roundTripReserveMs,
    });
  };
}
