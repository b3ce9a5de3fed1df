import type { JsonValue } from './message.js';

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
}

/**
 * Delivers one message. Resolve when the provider accepted it. Throw
 * `PermanentDeliveryError` when retrying cannot help (the message goes to dead letter) or
 * `RetryableDeliveryError` (optionally with `retryAfterMs`) when it may pass; any other thrown
 * value counts as retryable, because an unknown failure is more often a blip than a verdict.
 *
 * Honour `signal`: it aborts when the send's time is up, so the drain can settle before its
 * lease or the invocation ends. A sender that ignores it is cut loose and counted as a timeout;
 * its late success cannot be recorded and the message will be sent again, with the same key.
 */
export type Sender = (message: OutboundMessage, signal: AbortSignal) => Promise<void>;

/** Which sender delivers which kind. Kinds without a sender are not claimed by this drain. */
export type SenderRegistry = Readonly<Record<string, Sender>>;
