/**
 * One send: the sender called with the message's stable key, bounded by its timeout whatever
 * the sender does with its AbortSignal, and its result turned into the settlement to record.
 */
import type { Settings } from './drain-settings.js';
import { describeError, isPermanentDeliveryError, isRetryableDeliveryError } from './errors.js';
import type { ClaimedMessage } from './outbox-store.js';
import { backoffDelayMs } from './retry-policy.js';
import type { OutboundMessage, SendContext } from './sender.js';
import { dead, delivered, retry, type Settlement } from './settlement.js';

/** Resolves to undefined on success, or the failure. Never rejects, never outlives its timeout. */
export async function sendWithTimeout(
  message: ClaimedMessage,
  settings: Settings,
  context: SendContext,
): Promise<unknown> {
  const sender = settings.senders[message.kind]!;
  // A timer we clear when the send ends. AbortSignal.timeout cannot be cancelled, so it kept
  // every finished send (message, payload, closures) alive for the full timeout: +150 MiB over a
  // 50,000-message drain, too much for a 128 MB Worker (docs/benchmarks.md, scenario 6).
  const controller = new AbortController();
  let timer: ReturnType<typeof setTimeout> | undefined;
  const timedOut = new Promise<unknown>((resolve) => {
    timer = setTimeout(() => {
      const error = new SendTimeoutError(`send timed out after ${settings.sendTimeoutMs} ms`);
      controller.abort(error);
      resolve(error);
    }, settings.sendTimeoutMs);
  });
  const outbound: OutboundMessage = {
    key: message.key,
    kind: message.kind,
    payload: message.payload,
    attempt: message.attempts,
    maxAttempts: message.maxAttempts,
    id: message.id,
    orderingKey: message.orderingKey,
    createdAt: message.createdAt,
  };
  const sent = Promise.resolve()
    .then(() => sender(outbound, controller.signal, context))
    .then(
      () => undefined,
      (error: unknown) => error ?? new Error('sender rejected with no reason'),
    );
  try {
    return await Promise.race([sent, timedOut]);
  } finally {
    clearTimeout(timer);
  }
}

class SendTimeoutError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'SendTimeoutError';
  }
}

export function outcomeOf(message: ClaimedMessage, error: unknown, settings: Settings): Settlement {
  if (error === undefined) return delivered();
  const description = describeError(error);
  if (isPermanentDeliveryError(error)) return dead(`permanent failure: ${description}`);
  if (message.attempts >= message.maxAttempts) {
    return dead(`attempts exhausted (${message.attempts}/${message.maxAttempts}): ${description}`);
  }
  const retryAfterMs = isRetryableDeliveryError(error) ? error.retryAfterMs : undefined;
  const delayMs = backoffDelayMs(message.attempts, settings.backoff, settings.random, retryAfterMs);
  return retry(new Date(settings.clock.now().getTime() + delayMs), description);
}
