/**
 * One send: the sender called with the message's stable key, bounded by its timeout whatever
 * the sender does with its AbortSignal, and its result turned into the settlement to record.
 */
import { attemptFacts, deliveryFacts } from './attempt-facts.js';
import { describeError, isPermanentDeliveryError, isRetryableDeliveryError } from './errors.js';
import type { ClaimedMessage } from './outbox-store.js';
import type { Settings } from './resolved-settings.js';
import { backoffDelayMs } from './retry-policy.js';
import type {
  BatchItemResult,
  BatchSender,
  OutboundMessage,
  SendContext,
  Sender,
} from './sender.js';
import { dead, delivered, retry, type Settlement } from './settlement.js';

/**
 * How finely send deadlines are kept, ms. Sends whose deadlines fall in the same step share one
 * AbortController: creating one costs about as much as a no-op send's whole bookkeeping, and at
 * thousands of sends a second dozens start per step. So a send may run up to one step past its
 * timeout, which the settle reserve (far larger) absorbs.
 */
const DEADLINE_STEP_MS = 1;

/**
 * Lifts the listener limit of a signal that the sends of one deadline step share, where the
 * runtime has one. Senders listen to it (the AWS SDK's calls do, per attempt), and past 10
 * listeners Node printed `MaxListenersExceededWarning: Possible EventTarget memory leak
 * detected` for the signal of a busy step: SES at 40 lanes (test/senders/send-signals.test.ts).
 * The listeners end with their sends. Node's `events.setMaxListeners`, read through
 * `process.getBuiltinModule` so the core imports nothing of Node's and bundles for Workers as
 * before; tried once on a signal of its own, so a runtime whose signals it does not take (or
 * that has none of it) is left alone.
 */
const liftListenerLimit = listenerLimitLifter();

function listenerLimitLifter(): ((signal: AbortSignal) => void) | undefined {
  type Events = { setMaxListeners?: (count: number, ...targets: EventTarget[]) => void };
  try {
    const node = (globalThis as { process?: { getBuiltinModule?: (id: string) => unknown } })
      .process;
    const set = (node?.getBuiltinModule?.('node:events') as Events | undefined)?.setMaxListeners;
    if (typeof set !== 'function') return undefined;
    set(0, new AbortController().signal);
    return (signal) => set(0, signal);
  } catch {
    return undefined;
  }
}

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
  /** The signal of the sends due at the newest deadline step. */
  #newest: { expiresAt: number; controller: AbortController } | undefined;

  constructor(timeoutMs: number) {
    this.#timeoutMs = timeoutMs;
  }

  /**
   * Starts the clock on one send; `timedOut` is called with the timeout's result (failed, with
   * the timeout error) if it runs out of time first. Call `end(send)` when it finishes, however it finishes.
   */
  begin(timedOut: (result: SendResult) => void): InFlightSend {
    const expiresAt =
      Math.ceil((performance.now() + this.#timeoutMs) / DEADLINE_STEP_MS) * DEADLINE_STEP_MS;
    if (this.#newest?.expiresAt !== expiresAt) {
      const controller = new AbortController();
      liftListenerLimit?.(controller.signal);
      this.#newest = { expiresAt, controller };
    }
    const send: InFlightSend = {
      id: this.#nextId++,
      controller: this.#newest.controller,
      expiresAt,
      timedOut,
    };
    this.#inFlight.set(send.id, send);
    if (this.#timer === undefined) this.#arm(send.expiresAt);
    return send;
  }

  end(send: InFlightSend): void {
    this.#inFlight.delete(send.id);
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
      // Shared by the sends of one deadline step, all past their time now; the first abort counts.
      send.controller.abort(error);
      send.timedOut({ failed: true, error });
    }
  }
}

interface InFlightSend {
  id: number;
  controller: AbortController;
  expiresAt: number;
  timedOut: (result: SendResult) => void;
}

/**
 * How one send ended: `failed` false with whatever the sender resolved with (its receipt), or
 * true with what it threw (or the timeout).
 */
export type SendResult =
  | { readonly failed: false; readonly receipt: unknown }
  | { readonly failed: true; readonly error: unknown };

/** A delivery whose sender resolved with nothing: one object for all of them. */
const DELIVERED: SendResult = Object.freeze({ failed: false, receipt: undefined });

/** Resolves to how the send ended. Never rejects, never outlives its timeout. */
export function sendWithTimeout(
  message: ClaimedMessage,
  sender: Sender,
  context: SendContext,
  timeouts: SendTimeouts,
): Promise<SendResult> {
  return bounded(
    timeouts,
    undefined,
    (signal) => sender(outbound(message), signal, context),
    receiptResult,
    failureResult,
  );
}

/** What a sender resolved with, as a send's result. */
function receiptResult(receipt: unknown): SendResult {
  return receipt === undefined ? DELIVERED : { failed: false, receipt };
}

/** What a sender threw or rejected with, as a send's result. */
function failureResult(error: unknown): SendResult {
  return { failed: true, error: error ?? new Error('sender rejected with no reason') };
}

/**
 * One batch send: the batch sender called once with every message, bounded by one timeout, and
 * its results, one per message in the order given. Never rejects, never outlives its timeout. A
 * batch that throws, runs out of time, or answers with another number of results fails every
 * message alike.
 */
export function sendBatchWithTimeout(
  messages: readonly ClaimedMessage[],
  sender: BatchSender,
  context: SendContext,
  timeouts: SendTimeouts,
): Promise<SendResult[]> {
  const all = (result: SendResult) => messages.map(() => result);
  return bounded(
    timeouts,
    all,
    (signal) => sender.send(messages.map(outbound), signal, context),
    (results) => batchResults(results, messages.length, all),
    (error) =>
      all({ failed: true, error: error ?? new Error('batch sender rejected with no reason') }),
  );
}

/**
 * `call` given the signal of a send begun on `timeouts`, resolved by whichever comes first: its
 * outcome (`done` with what it resolved to, `failed` with what it threw or rejected with) or its
 * timeout (`timedOut` with the timeout's result; none: the result itself); a late outcome is
 * ignored. `call` runs at once, a throw before it returns a promise taken as its failure, and
 * its result is awaited by one reaction: a chain of four promises before, and four functions
 * made per send now where there were nine (docs/benchmarks.md, "The drain process's CPU since
 * 546db54").
 */
function bounded<T>(
  timeouts: SendTimeouts,
  timedOut: ((result: SendResult) => T) | undefined,
  call: (signal: AbortSignal) => unknown,
  done: (value: unknown) => T,
  failed: (error: unknown) => T,
): Promise<T> {
  return new Promise<T>((finish) => {
    // Without `timedOut`, T is SendResult (sendWithTimeout): the timeout's result is the outcome.
    const timing = timeouts.begin(
      timedOut ? (result) => finish(timedOut(result)) : (finish as (result: SendResult) => void),
    );
    let sending: unknown;
    try {
      sending = call(timing.controller.signal);
    } catch (error) {
      timeouts.end(timing);
      finish(failed(error));
      return;
    }
    Promise.resolve(sending).then(
      (value) => {
        timeouts.end(timing);
        finish(done(value));
      },
      (error: unknown) => {
        timeouts.end(timing);
        finish(failed(error));
      },
    );
  });
}

/** A batch sender's answer as one result per message: all failed when it is not one each. */
function batchResults(
  results: unknown,
  count: number,
  all: (result: SendResult) => SendResult[],
): SendResult[] {
  if (!Array.isArray(results) || results.length !== count) {
    const answered = Array.isArray(results) ? results.length : 'no';
    return all({
      failed: true,
      error: new Error(`the batch sender answered ${answered} results for ${count} messages`),
    });
  }
  return results.map((result: BatchItemResult | undefined): SendResult => {
    if (result?.delivered === true) {
      return result.receipt === undefined ? DELIVERED : { failed: false, receipt: result.receipt };
    }
    return {
      failed: true,
      error: result?.error ?? new Error('the batch sender failed it with no reason'),
    };
  });
}

/** What a sender sees of a claimed message. */
function outbound(message: ClaimedMessage): OutboundMessage {
  const sent: OutboundMessage = {
    key: message.key,
    kind: message.kind,
    payload: message.payload,
    attempt: message.attempts,
    maxAttempts: message.maxAttempts,
    id: message.id,
    orderingKey: message.orderingKey,
    createdAt: message.createdAt,
  };
  if (message.traceContext) sent.traceContext = message.traceContext;
  return sent;
}

class SendTimeoutError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'SendTimeoutError';
  }
}

/**
 * The settlement of one send, with its attempt's facts: the timing the drain measured, and the
 * details the sender reported (a receipt on success; the fields of a delivery error on failure;
 * nothing from any other thrown value).
 */
export function outcomeOf(
  message: ClaimedMessage,
  result: SendResult,
  settings: Settings,
  durationMs: number,
): Settlement {
  if (!result.failed) return delivered(deliveryFacts(durationMs, result.receipt));
  const { error } = result;
  const description = describeError(error);
  const permanent = isPermanentDeliveryError(error);
  const retryable = !permanent && isRetryableDeliveryError(error);
  // When it started: now, less the duration the monotonic clock measured. Read only for a
  // failure, so a delivery costs no clock read.
  const now = settings.clock.now().getTime();
  const facts = attemptFacts(
    new Date(now - Math.round(durationMs)),
    durationMs,
    permanent || retryable ? error : undefined,
  );
  if (permanent) return dead(`permanent failure: ${description}`, facts);
  const retryAfterMs = retryable ? error.retryAfterMs : undefined;
  // Anything but a permanent failure says the destination may be in trouble: counted toward
  // pausing it, whether this message is retried or has spent its attempts.
  const destinationFailure = { retryAfterMs: retryAfterMs ?? null };
  if (message.attempts >= message.maxAttempts) {
    return dead(
      `attempts exhausted (${message.attempts}/${message.maxAttempts}): ${description}`,
      facts,
      destinationFailure,
    );
  }
  const delayMs = backoffDelayMs(message.attempts, settings.backoff, settings.random, retryAfterMs);
  return retry(new Date(now + delayMs), description, facts, destinationFailure);
}
