/**
 * What Amazon SQS's `SendMessageBatch` and SNS's `PublishBatch` share, for their two senders:
 * entries named after their message's place in the batch, a FIFO message group made from an
 * ordering key, a batch split into calls that each stay within the service's byte limit (every
 * call beyond the first spent from the drain's budget), and an answer's `Successful` and
 * `Failed` lists read back into one result per message. No SDK here: each sender builds its own
 * command.
 */
import { PermanentDeliveryError, RetryableDeliveryError } from '../core/errors.js';
import type { BatchItemResult, OutboundMessage, SendContext } from '../core/sender.js';
import { traceHeaders } from '../core/trace-context.js';

/**
 * What a FIFO queue or topic takes as a MessageGroupId: 1 to 128 of these characters (SQS and
 * SNS state the same rule).
 */
export const FIFO_GROUP_ID = /^[A-Za-z0-9!"#$%&'()*+,\-./:;<=>?@[\\\]^_`{|}~]{1,128}$/;

/** The data type of the string attributes the senders write, counted in an entry's size. */
const STRING_TYPE = 'String' as const;

/** The Id of the entry for the message at `index` of its batch: `m` and that index. */
export function batchEntryId(index: number): string {
  return `m${index}`;
}

/** The batch index an answer's entry Id names, or `undefined` for an Id we never sent. */
export function indexOfBatchEntry(id: string | undefined): number | undefined {
  const match = /^m(\d+)$/.exec(id ?? '');
  return match ? Number(match[1]) : undefined;
}

/**
 * A key as a MessageGroupId: itself when the service takes it, else `sha256-` and its hash, so
 * the same key is always the same group.
 */
export async function fifoGroupId(key: string): Promise<string> {
  if (FIFO_GROUP_ID.test(key)) return key;
  const digest = await crypto.subtle.digest('SHA-256', new TextEncoder().encode(key));
  const hex = [...new Uint8Array(digest)].map((byte) => byte.toString(16).padStart(2, '0'));
  return `sha256-${hex.join('')}`;
}

/**
 * The bytes an entry counts against its service's limits: its body, and each string attribute's
 * name, data type and value (both services count all three).
 */
export function entryBytes(
  body: string,
  stringAttributes: Readonly<Record<string, string>>,
): number {
  const encoder = new TextEncoder();
  let bytes = encoder.encode(body).length;
  for (const [name, value] of Object.entries(stringAttributes)) {
    bytes += encoder.encode(name).length + STRING_TYPE.length + encoder.encode(value).length;
  }
  return bytes;
}

/** How one batch goes out as calls: the limits, the service's words, and the call itself. */
export interface BatchCalls {
  /** Each message's entry size ({@link entryBytes}), in batch order. */
  sizes: readonly number[];
  /** The most bytes of entries one call may carry, and one entry may be. */
  limit: number;
  /** The service as an operator reads it in an error: `SQS`, `SNS`. */
  service: string;
  /** Where the calls go (the queue URL, the topic ARN), for attempt history. */
  destination: string;
  /** What a call beyond the first is, for the budget's error: `SQS SendMessageBatch for ...`. */
  extraCall: string;
  /** Makes one call of the messages at `indexes`, writing their results into `results`. */
  send(indexes: readonly number[], results: BatchItemResult[]): Promise<void>;
}

/**
 * Sends a batch as calls of at most `limit` bytes of entries each, in batch order, and resolves
 * with one result per message. A message alone over the limit goes in no call: it is refused for
 * good (no call could ever carry it). Each call beyond the first is spent from the drain's budget
 * (`context.spend`) before it is made; when the budget cannot cover it, its messages fail with
 * the budget's error, which hands them back unsent, while the calls before went out.
 */
export async function sendInCalls(
  batch: BatchCalls,
  context: SendContext | undefined,
): Promise<BatchItemResult[]> {
  const results: BatchItemResult[] = new Array(batch.sizes.length);
  for (const [call, indexes] of callsWithin(batch, results).entries()) {
    if (call > 0) {
      try {
        context?.spend(1, batch.extraCall);
      } catch (error) {
        for (const index of indexes) results[index] = { delivered: false, error };
        continue;
      }
    }
    await batch.send(indexes, results);
  }
  return results;
}

/**
 * The batch's messages as calls within the limit, in order (message indexes); a message over the
 * limit alone is given its result here and goes in no call.
 */
function callsWithin(batch: BatchCalls, results: BatchItemResult[]): number[][] {
  const { sizes, limit, service, destination } = batch;
  const calls: number[][] = [];
  let current: number[] = [];
  let bytes = 0;
  for (const [index, size] of sizes.entries()) {
    if (size > limit) {
      results[index] = {
        delivered: false,
        error: new PermanentDeliveryError(
          `${service} message of ${size} bytes is over ${service}'s limit of ${limit} bytes a message`,
          { destination },
        ),
      };
      continue;
    }
    if (bytes + size > limit && current.length > 0) {
      calls.push(current);
      current = [];
      bytes = 0;
    }
    current.push(index);
    bytes += size;
  }
  if (current.length > 0) calls.push(current);
  return calls;
}

/** The parts of a `SendMessageBatch` or `PublishBatch` answer that settle its messages. */
export interface BatchAnswer<Failure extends { Id?: string }> {
  Successful?: readonly { Id?: string }[];
  Failed?: readonly Failure[];
  $metadata: { httpStatusCode?: number };
}

/**
 * Writes a call's answer into `results`: each entry the service took is delivered, each it
 * refused fails with `entryError`'s verdict, and one the answer does not mention is retried (the
 * service may or may not have it; a resend carries the same key).
 */
export function readBatchAnswer<Failure extends { Id?: string }>(
  answer: BatchAnswer<Failure>,
  call: { indexes: readonly number[]; results: BatchItemResult[] },
  facts: { service: string; destination: string },
  entryError: (failure: Failure) => PermanentDeliveryError | RetryableDeliveryError,
): void {
  const { indexes, results } = call;
  const { service, destination } = facts;
  const status = answer.$metadata.httpStatusCode;
  // An Id naming a message of another call (or none) is not this call's to settle.
  const ofCall = (id: string | undefined) => {
    const index = indexOfBatchEntry(id);
    return index !== undefined && indexes.includes(index) ? index : undefined;
  };
  for (const { Id } of answer.Successful ?? []) {
    const index = ofCall(Id);
    if (index !== undefined) results[index] = { delivered: true, receipt: { status, destination } };
  }
  for (const failure of answer.Failed ?? []) {
    const index = ofCall(failure.Id);
    if (index !== undefined) results[index] = { delivered: false, error: entryError(failure) };
  }
  for (const index of indexes) {
    results[index] ??= {
      delivered: false,
      error: new RetryableDeliveryError(
        `${service} answered the batch without a word on this message`,
        { status, destination },
      ),
    };
  }
}

/**
 * The string attributes an entry carries: the message key under `keyAttribute` (what a consumer
 * deduplicates on) and, for a message enqueued under a trace, its W3C `traceparent` and
 * `tracestate`, so the consumer's work joins the trace.
 */
export function stringAttributesOf(
  message: OutboundMessage,
  keyAttribute: string,
): Record<string, string> {
  return { [keyAttribute]: message.key, ...traceHeaders(message.traceContext) };
}

/** String attributes in the shape both SDKs take for MessageAttributes. */
export function asMessageAttributes(
  attributes: Readonly<Record<string, string>>,
): Record<string, { DataType: 'String'; StringValue: string }> {
  return Object.fromEntries(
    Object.entries(attributes).map(([name, value]) => [
      name,
      { DataType: STRING_TYPE, StringValue: value },
    ]),
  );
}
