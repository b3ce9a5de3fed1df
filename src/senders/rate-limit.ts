import { ConfigurationError, RetryableDeliveryError } from '../core/errors.js';
import type { SendContext, Sender } from '../core/sender.js';

export interface SendLimits {
  /** Sends in flight at once through this wrapper. Default: no limit. */
  maxConcurrent?: number;
  /**
   * Sends started in any one-second window. Default: no limit. With SES, set it to the
   * account's maximum send rate divided by how many drains can overlap. A fraction below 1
   * spaces sends out (0.5: one every two seconds); above 1 it is rounded down (3.5 allows 3 in
   * any second), because any burst above the whole number would break the one-second bound.
   */
  perSecond?: number;
  /** Monotonic milliseconds; injected by tests. Default `performance.now()`. */
  now?: () => number;
}

/** The window `perSecond` counts over. */
const ONE_SECOND_MS = 1000;

interface Waiter {
  admit: () => void;
}

/**
 * Wraps a sender so that at most `maxConcurrent` sends run at once and at most `perSecond` sends
 * start in any one-second window. Calls over the limit wait their turn in arrival order; a
 * waiting call whose AbortSignal fires stops waiting and rejects with `RetryableDeliveryError`
 * without calling the sender, so the drain's send timeout still bounds it.
 *
 * The limits hold within one wrapper, which lives in one process or isolate. Overlapping
 * drains (two cron invocations, several Lambdas) each have their own, so the total rate is the
 * number of overlapping drains times `perSecond`: divide the provider's rate by the most drains
 * that may overlap, or let the provider's throttling (retryable, with a long backoff) absorb
 * the excess. On Workers, create the wrapper inside the handler: a promise made in one request
 * cannot be resolved from another.
 *
 * The rate is a sliding window, not a token bucket, so there is no burst above `perSecond`: a
 * send starts only when fewer than `perSecond` sends started in the last second. The start
 * times are kept on the wrapper (at most `perSecond` of them), so it holds no timer unless a
 * call is waiting.
 *
 * @example
 * const email = limitSender(sesSender(config), { maxConcurrent: 10, perSecond: 14 });
 */
export function limitSender(sender: Sender, limits: SendLimits): Sender {
  const maxConcurrent = limits.maxConcurrent ?? Number.POSITIVE_INFINITY;
  const perSecond = limits.perSecond ?? Number.POSITIVE_INFINITY;
  if (!(maxConcurrent === Number.POSITIVE_INFINITY || isPositiveInteger(maxConcurrent))) {
    throw new ConfigurationError(
      `limitSender: maxConcurrent must be a positive integer, got ${maxConcurrent}`,
    );
  }
  if (!(perSecond > 0)) {
    throw new ConfigurationError(
      `limitSender: perSecond must be a positive number, got ${perSecond}`,
    );
  }
  // At most `startsPerWindow` starts in any `windowMs`: the whole number per second, or for a
  // rate below one, a single start per 1/perSecond seconds.
  const startsPerWindow = perSecond >= 1 ? Math.floor(perSecond) : 1;
  const windowMs = perSecond >= 1 ? ONE_SECOND_MS : ONE_SECOND_MS / perSecond;
  const now = limits.now ?? (() => performance.now());

  let running = 0;
  /** Start times of the most recent sends, oldest first; never more than `startsPerWindow`. */
  const recentStarts: number[] = [];
  const queue: Waiter[] = [];
  let timer: ReturnType<typeof setTimeout> | undefined;

  /** Ms until the rate allows another start; 0 when it does now. */
  const rateWaitMs = (): number => {
    if (recentStarts.length < startsPerWindow) return 0;
    return Math.max(0, recentStarts[0]! + windowMs - now());
  };

  /** Admits waiters while both limits allow; otherwise arranges to look again. */
  const pump = (): void => {
    while (queue.length > 0 && running < maxConcurrent) {
      const waitMs = rateWaitMs();
      if (waitMs > 0) {
        // Only the rate can be waiting on time; a finished send calls pump itself.
        if (timer === undefined) {
          timer = setTimeout(() => {
            timer = undefined;
            pump();
          }, Math.ceil(waitMs));
        }
        return;
      }
      queue.shift()!.admit();
    }
  };

  const start = (
    message: Parameters<Sender>[0],
    signal: AbortSignal,
    context: SendContext | undefined,
  ): ReturnType<Sender> => {
    running += 1;
    let sending: ReturnType<Sender>;
    try {
      sending = sender(message, signal, context);
    } catch (error) {
      sending = Promise.reject(error);
    }
    // Stamped after the call: the recorded start is never earlier than the real one, so the
    // window check is conservative.
    recentStarts.push(now());
    if (recentStarts.length > startsPerWindow) recentStarts.shift();
    return sending.finally(() => {
      running -= 1;
      pump();
    });
  };

  return (message, signal, context) => {
    if (signal.aborted) return Promise.reject(abandoned(signal));
    if (queue.length === 0 && running < maxConcurrent && rateWaitMs() === 0) {
      return start(message, signal, context);
    }
    return new Promise<Awaited<ReturnType<Sender>>>((resolve, reject) => {
      const waiter: Waiter = {
        admit: () => {
          signal.removeEventListener('abort', onAbort);
          start(message, signal, context).then(resolve, reject);
        },
      };
      const onAbort = () => {
        const index = queue.indexOf(waiter);
        if (index >= 0) queue.splice(index, 1);
        if (queue.length === 0 && timer !== undefined) {
          clearTimeout(timer);
          timer = undefined;
        }
        reject(abandoned(signal));
      };
      signal.addEventListener('abort', onAbort, { once: true });
      queue.push(waiter);
      pump();
    });
  };
}

function abandoned(signal: AbortSignal): RetryableDeliveryError {
  return new RetryableDeliveryError(
    'send not started: its time ran out while waiting for the send-rate or concurrency limit',
    { cause: signal.reason },
  );
}

function isPositiveInteger(value: number): boolean {
  return Number.isInteger(value) && value >= 1;
}
