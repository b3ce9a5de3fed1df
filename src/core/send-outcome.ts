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

/**
 * The send timeouts of one drain, on one timer: armed for the oldest send still in flight and,
 * when it fires, cutting loose every send past its time and re-arming for the next. Every send
 * has the same timeout, so the oldest started is the first due. A timer per send cost a
 * `setTimeout` and a `clearTimeout` per message; this costs one per timeout period.
 */
export class SendTimeouts {
  readonly #timeoutMs: number;
  /** In flight, oldest first (a Map keeps insertion order; a finished send is deleted). */
  readonly #inFlight = new Map<number, InFlightSend>();
  #nextId = 0;
  #timer: ReturnType<typeof setTimeout> | undefined;

  constructor(timeoutMs: number) {
    this.#timeoutMs = timeoutMs;
  }

  /** Starts the clock on one send. Call `end(id)` when it finishes, however it finishes. */
  begin(): InFlightSend {
    let resolve!: (error: unknown) => void;
    const timedOut = new Promise<unknown>((done) => {
      resolve = done;
    });
    const send: InFlightSend = {
      id: this.#nextId++,
      controller: new AbortController(),
      expiresAt: performance.now() + this.#timeoutMs,
      timedOut,
      resolve,
    };
    this.#inFlight.set(send.id, send);
    if (this.#timer === undefined) this.#arm(send.expiresAt);
    return send;
  }

  end(id: number): void {
    this.#inFlight.delete(id);
  }

  /** Stops the timer: the drain is over and nothing is in flight. */
  stop(): void {
    clearTimeout(this.#timer);
    this.#timer = undefined;
  }

  #arm(at: number): void {
    this.#timer = setTimeout(() => this.#expire(), Math.max(0, at - performance.now()));
  }

  #expire(): void {
    this.#timer = undefined;
    const now = performance.now();
    for (const [id, send] of this.#inFlight) {
      if (send.expiresAt > now) {
        this.#arm(send.expiresAt);
        return;
      }
      this.#inFlight.delete(id);
      const error = new SendTimeoutError(`send timed out after ${this.#timeoutMs} ms`);
      send.controller.abort(error);
      send.resolve(error);
    }
  }
}

interface InFlightSend {
  id: number;
  controller: AbortController;
  expiresAt: number;
  /** Resolves with the timeout error when the send runs out of time; never rejects. */
  timedOut: Promise<unknown>;
  resolve: (error: unknown) => void;
}

/** Resolves to undefined on success, or the failure. Never rejects, never outlives its timeout. */
export async function sendWithTimeout(
  message: ClaimedMessage,
  settings: Settings,
  context: SendContext,
  timeouts: SendTimeouts,
): Promise<unknown> {
  const sender = settings.senders[message.kind]!;
  const timing = timeouts.begin();
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
    .then(() => sender(outbound, timing.controller.signal, context))
    .then(
      () => undefined,
      (error: unknown) => error ?? new Error('sender rejected with no reason'),
    );
  try {
    return await Promise.race([sent, timing.timedOut]);
  } finally {
    timeouts.end(timing.id);
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
