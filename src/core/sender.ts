import type { DeliveryDetails } from './errors.js';
import type { JsonValue } from './message.js';
import type { TraceContext } from './trace-context.js';

/** What a sender receives: everything needed to deliver once, and to be deduplicated after. */
export interface OutboundMessage {
  /** The stable message key. Send it to the receiver (header, tag, idempotency key). */
  key: string;
  kind: string;
  payload: JsonValue;
  /** 1 on the first attempt. */
  attempt: number;
  maxAttempts: number;
  /** The outbox row id, for logs. */
  id: string;
  orderingKey: string | null;
  createdAt: Date;
  /**
   * The W3C trace context the message was enqueued under, when it was: pass it on as the
   * provider allows (a webhook's `traceparent` and `tracestate` headers, a queue message's
   * attributes), so the receiver's work joins the trace of the request that wrote it.
   */
  traceContext?: TraceContext;
}

/**
 * Delivers one message. Resolve when the provider accepted it. Throw
 * `PermanentDeliveryError` when retrying cannot help (the message goes to dead letter) or
 * `RetryableDeliveryError` (optionally with `retryAfterMs`) when it may pass; any other thrown
 * value counts as retryable, because an unknown failure is more often a blip than a verdict.
 *
 * Every attempt goes into the message's attempt history, with when it started and how long it
 * took (the drain measures both). A sender may add what it knows: resolve with a
 * {@link DeliveryReceipt} (the status, the destination), and give the same fields to the
 * delivery errors it throws. Resolving with nothing is fine too: the attempt is recorded without
 * them.
 *
 * Honour `signal`: it aborts when the send's time is up, so the drain can settle before its
 * lease or the invocation ends. A sender that ignores it is cut loose and counted as a timeout;
 * its late success cannot be recorded and the message will be sent again, with the same key.
 *
 * @example
 * const hook: Sender = async (message, signal) => {
 *   const url = 'https://api.example.com/notify';
 *   const response = await fetch(url, {
 *     method: 'POST',
 *     headers: { 'idempotency-key': message.key },
 *     body: JSON.stringify(message.payload),
 *     signal,
 *   });
 *   const details = { status: response.status, destination: url };
 *   if (response.status >= 500) throw new RetryableDeliveryError('notify failed', details);
 *   if (!response.ok) throw new PermanentDeliveryError('notify refused it', details);
 *   return details; // recorded with the delivery
 * };
 */
export type Sender = (
  message: OutboundMessage,
  signal: AbortSignal,
  /** Given by every drain; absent when you call a sender yourself (nothing is counted then). */
  context?: SendContext,
  // biome-ignore lint/suspicious/noConfusingVoidType: void keeps every sender written before receipts (an async function that returns nothing) a Sender
) => Promise<DeliveryReceipt | undefined | void>;

/**
 * What a sender may resolve with: what it knows of the delivery, recorded with it in the
 * message's attempt history. Only `status` is kept for a delivery (with its duration); the
 * destination and code are kept for failed attempts.
 */
export type DeliveryReceipt = DeliveryDetails;

/**
 * What the drain lends one send besides its time: the subrequest budget, and the identity of
 * the drain run.
 *
 * The drain counts the send's own request (the provider call) before calling the sender. A
 * sender that makes any other request (a secret read, a token fetch, a second provider call)
 * calls `spend` before making it: on Workers every one of them is a subrequest, and the
 * platform fails the one past the limit, which could be the settle of messages already sent.
 * `spend` throws a `SubrequestBudgetError` when the budget cannot cover the request; let it
 * propagate: the drain hands the message back unsent (no attempt counted) and stops.
 *
 * @example
 * const notify: Sender = async (message, signal, context) => {
 *   context?.spend(1, 'token fetch'); // before the extra request; absent outside a drain
 *   const token = await (await fetch('https://auth.example.com/token', { signal })).text();
 *   const response = await fetch('https://api.example.com/notify', {
 *     method: 'POST',
 *     headers: { authorization: `Bearer ${token}`, 'idempotency-key': message.key },
 *     body: JSON.stringify(message.payload),
 *     signal,
 *   });
 *   if (!response.ok) throw new RetryableDeliveryError(`notify answered ${response.status}`);
 * };
 */
export interface SendContext {
  /** Takes `subrequests` from the drain's budget, or throws `SubrequestBudgetError`. */
  spend(subrequests: number, what: string): void;
  /**
   * One object per drain run: key a `WeakMap` on it to remember something (a secret, a token)
   * for exactly one drain, so a disabled endpoint is seen by the next drain.
   */
  readonly run: object;
}

/**
 * What a batch send says of one of its messages: delivered (with what the sender knows of it),
 * or failed with an error classified as a single send's would be (`PermanentDeliveryError`,
 * `RetryableDeliveryError`, anything else retryable).
 */
export type BatchItemResult =
  | { readonly delivered: true; readonly receipt?: DeliveryReceipt }
  | { readonly delivered: false; readonly error: unknown };

/**
 * Delivers several messages of one kind in one request (a queue's batch call), reporting an
 * outcome per message, so a partial failure settles each message on its own.
 *
 * The drain hands a batch sender up to `maxBatch` claimed messages at once, never two of one
 * ordering key (a key's next message waits for the one before it, as with single sends), and
 * counts one subrequest for the call; a sender that must make more requests (a batch over the
 * provider's byte limit, split in two) calls `context.spend` for each one beyond the first.
 * Resolve with one result per message, in the order given. Throwing fails every message of the
 * batch alike (a throttled or unreachable provider); a `SubrequestBudgetError` from `spend`
 * hands them all back unsent. Honour `signal`, as a single send does: the batch shares one send
 * timeout.
 *
 * @example
 * const events: BatchSender = {
 *   maxBatch: 10,
 *   async send(messages, signal) {
 *     const response = await fetch('https://events.example.com/batch', {
 *       method: 'POST',
 *       body: JSON.stringify(messages.map((m) => ({ id: m.key, body: m.payload }))),
 *       signal,
 *     });
 *     if (!response.ok) throw new RetryableDeliveryError(`events answered ${response.status}`);
 *     const accepted = new Set((await response.json()) as string[]);
 *     return messages.map((m) =>
 *       accepted.has(m.key)
 *         ? { delivered: true }
 *         : { delivered: false, error: new RetryableDeliveryError('not accepted') },
 *     );
 *   },
 * };
 */
export interface BatchSender {
  /** The most messages one call takes (SQS SendMessageBatch: 10; Cloudflare Queues: 100). */
  readonly maxBatch: number;
  send(
    messages: readonly OutboundMessage[],
    signal: AbortSignal,
    context?: SendContext,
  ): Promise<readonly BatchItemResult[]>;
}

/** Whether a registry's entry sends in batches. */
export function isBatchSender(sender: Sender | BatchSender): sender is BatchSender {
  return typeof sender !== 'function';
}

/** Which sender delivers which kind. Kinds without a sender are not claimed by this drain. */
export type SenderRegistry = Readonly<Record<string, Sender | BatchSender>>;
