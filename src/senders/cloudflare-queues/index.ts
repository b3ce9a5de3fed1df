// `outbox-relay/cloudflare-queues`: messages to a Cloudflare Queue from a Worker, through its
// producer binding, a hundred a `sendBatch` call. No SDK: the binding is the Worker's own.
import {
  describeError,
  isSubrequestBudgetError,
  PermanentDeliveryError,
  RetryableDeliveryError,
  ValidationError,
} from '../../core/errors.js';
import type { JsonValue, PayloadValidator } from '../../core/message.js';
import type { BatchItemResult, BatchSender, OutboundMessage } from '../../core/sender.js';
import { traceHeaders } from '../../core/trace-context.js';

/** `sendBatch` takes at most a hundred messages. */
export const QUEUE_MAX_BATCH = 100;

/** The most one queue message may be, as the JSON of its body: 128 KB. */
export const QUEUE_MAX_MESSAGE_BYTES = 128 * 1024;

/** The most one `sendBatch` call may carry in all: 256 KB. */
export const QUEUE_MAX_BATCH_BYTES = 256 * 1024;

/**
 * What a consumer receives as `message.body` (`contentType: 'json'`): the message key as `id`,
 * which the consumer deduplicates on, the kind, and the payload as enqueued.
 */
export interface QueueMessageBody {
  id: string;
  kind: string;
  payload: JsonValue;
  /** The W3C trace context of a message enqueued under a trace: the consumer continues it. */
  traceparent?: string;
  tracestate?: string;
}

/** What the sender needs of a Queue producer binding (`env.MY_QUEUE`): its `sendBatch`. */
export interface QueueProducerLike {
  sendBatch(messages: Iterable<{ body: QueueMessageBody; contentType?: 'json' }>): Promise<unknown>;
}

/**
 * A batch sender of any kind's payload to a Cloudflare Queue, through the Worker's producer
 * binding: a hundred messages a `sendBatch` call, each as `{ id, kind, payload }` with
 * `contentType: 'json'`; `id` is the message key, the same on every send of a message, which
 * the consumer uses to drop the rare duplicate. A message enqueued under a trace also carries its
 * W3C `traceparent` (and `tracestate`) in the body.
 *
 * Calls are kept within the queue's 256 KB a batch (a batch over it goes in two or more calls,
 * each beyond the first spent from the drain's budget). A message over 128 KB is set aside as
 * dead without a call; {@link queuePayloadValidator} refuses such a payload at enqueue, where
 * the app can still answer its caller. `sendBatch` delivers all of a call or none: a call that
 * throws (the queue throttled, a blip) fails its messages alike, retried with backoff.
 *
 * Delays are the outbox's own (`delayMs` at enqueue): a message is sent when it is due, so no
 * `delaySeconds` is given to the queue.
 *
 * @example
 * // In a Worker's cron drain, with env.EVENTS a [[queues.producers]] binding:
 * await drainOnce({ store, senders: { 'order.placed': cloudflareQueuesSender(env.EVENTS) } });
 */
export function cloudflareQueuesSender(queue: QueueProducerLike): BatchSender {
  if (typeof queue?.sendBatch !== 'function') {
    throw new TypeError(
      'cloudflareQueuesSender: expected a Queue producer binding (env.MY_QUEUE, with sendBatch)',
    );
  }
  return {
    maxBatch: QUEUE_MAX_BATCH,
    async send(messages, _signal, context) {
      const results: BatchItemResult[] = new Array(messages.length);
      const calls: { index: number; body: QueueMessageBody }[][] = [];
      let current: { index: number; body: QueueMessageBody }[] = [];
      let bytes = 0;
      for (const [index, message] of messages.entries()) {
        const body = bodyOf(message);
        const size = jsonBytes(body);
        if (size > QUEUE_MAX_MESSAGE_BYTES) {
          results[index] = {
            delivered: false,
            error: new PermanentDeliveryError(
              `queue message of ${size} bytes is over Cloudflare Queues' ${QUEUE_MAX_MESSAGE_BYTES} bytes a message`,
            ),
          };
          continue;
        }
        if (bytes + size > QUEUE_MAX_BATCH_BYTES && current.length > 0) {
          calls.push(current);
          current = [];
          bytes = 0;
        }
        current.push({ index, body });
        bytes += size;
      }
      if (current.length > 0) calls.push(current);
      for (const [call, entries] of calls.entries()) {
        let outcome: BatchItemResult;
        try {
          if (call > 0) context?.spend(1, 'Queue sendBatch for the rest of a batch over 256 KB');
          await queue.sendBatch(entries.map(({ body }) => ({ body, contentType: 'json' })));
          outcome = { delivered: true };
        } catch (error) {
          // A refused spend hands its messages back unsent; anything else is retried.
          outcome = {
            delivered: false,
            error: isSubrequestBudgetError(error)
              ? error
              : new RetryableDeliveryError(`Queue sendBatch failed: ${describeError(error)}`, {
                  cause: error,
                }),
          };
        }
        for (const { index } of entries) results[index] = outcome;
      }
      return results;
    },
  };
}

/**
 * A payload check for a kind sent to a Cloudflare Queue: refuses, at enqueue, a payload whose
 * queue message would be over 128 KB, so the caller hears of it instead of the message going to
 * dead letter later.
 *
 * @example
 * const outbox = createOutbox({ kinds: { 'order.placed': queuePayloadValidator } });
 */
export const queuePayloadValidator: PayloadValidator = (payload, field) => {
  // The message around the payload: the key (a UUID), a kind name, the JSON between them.
  const envelope = jsonBytes({ id: crypto.randomUUID(), kind: 'k'.repeat(200), payload: null });
  const size = jsonBytes(payload) + envelope;
  if (size > QUEUE_MAX_MESSAGE_BYTES) {
    throw new ValidationError(
      field,
      `is ${size} bytes as a queue message, over Cloudflare Queues' ${QUEUE_MAX_MESSAGE_BYTES} bytes a message`,
    );
  }
};

function bodyOf(message: OutboundMessage): QueueMessageBody {
  return { ...plainBodyOf(message), ...traceHeaders(message.traceContext) };
}

function plainBodyOf(message: OutboundMessage): QueueMessageBody {
  return { id: message.key, kind: message.kind, payload: message.payload };
}

function jsonBytes(value: unknown): number {
  return new TextEncoder().encode(JSON.stringify(value)).length;
}
