import {
  SendMessageBatchCommand,
  type SendMessageBatchCommandOutput,
  type SendMessageBatchRequestEntry,
  SQSClient,
} from '@aws-sdk/client-sqs';
import { ConfigurationError } from '../../core/errors.js';
import type { BatchItemResult, BatchSender, OutboundMessage } from '../../core/sender.js';
import {
  asMessageAttributes,
  batchEntryId,
  entryBytes,
  fifoGroupId,
  readBatchAnswer,
  sendInCalls,
  stringAttributesOf,
} from '../aws-batch-calls.js';
import { type AwsCredentials, checkAwsSenderConfig } from '../aws-env.js';
import { sqsDeliveryError, sqsEntryError } from './sqs-errors.js';

/** The message attribute that carries the outbox message key: what a consumer deduplicates on. */
export const SQS_MESSAGE_KEY_ATTRIBUTE = 'outbox-message-key';

/** `SendMessageBatch` takes at most ten entries. */
export const SQS_MAX_BATCH = 10;

/**
 * 1 MiB: the most a `SendMessageBatch` call may carry in all, and the most one message may be
 * (SQS's limits since August 2025; a queue's own `MaximumMessageSize` may be lower, and SQS then
 * refuses a longer message, which goes to dead letter).
 */
export const SQS_MAX_BATCH_BYTES = 1024 * 1024;

/** Static AWS credentials. Workers have no credential files or instance metadata to find them. */
export interface SqsCredentials extends AwsCredentials {}

export interface SqsSenderConfig {
  /**
   * The queue's URL. A FIFO queue's ends in `.fifo`: its messages then carry a MessageGroupId
   * (the ordering key) and a MessageDeduplicationId (the message key).
   */
  queueUrl: string;
  /** The queue's region, e.g. `eu-west-1`. */
  region: string;
  /** Default: the SDK's own lookup (a Lambda's role, the environment); required on Workers. */
  credentials?: SqsCredentials;
  /** Override the SQS endpoint: a local SQS-compatible server, a VPC endpoint. */
  endpoint?: string;
  /**
   * FIFO queues: the MessageGroupId of a message without an ordering key. Default: the message's
   * own key, so messages without one are never held back behind each other.
   */
  unorderedGroupId?: string;
}

/**
 * A batch sender of any kind's payload to an Amazon SQS queue, ten messages a
 * `SendMessageBatch` call: the payload as JSON in the body, the message key in the
 * `outbox-message-key` string attribute (a consumer drops a message whose key it has seen).
 *
 * A FIFO queue gets the ordering key as MessageGroupId (one that SQS would not take, longer than
 * 128 characters or with other characters, as `sha256-` and its hash: the same key, the same
 * group) and the message key as MessageDeduplicationId, so within SQS's five-minute window a
 * message sent again after a crash is dropped by SQS itself.
 *
 * Each message of a call is settled by SQS's answer for it: an entry refused for the sender's
 * fault (too long for the queue, characters SQS does not take) goes to dead letter; one refused
 * for SQS's own fault is retried; throttling, and failures only an operator can clear (the queue
 * URL, credentials, KMS), are retried later (the table in `sqs-errors.ts`). Calls are kept
 * within 1 MiB of bodies: a batch over it is sent in two or more calls, each beyond the first
 * spent from the drain's budget (`context.spend`). The SDK makes one attempt per call
 * (`maxAttempts: 1`): retries and their timing belong to the drain.
 *
 * @example
 * const orders = sqsSender({
 *   queueUrl: 'https://sqs.eu-west-1.amazonaws.com/123456789012/orders.fifo',
 *   region: 'eu-west-1',
 * });
 * await drainOnce({ store, senders: { 'order.placed': orders } });
 */
export function sqsSender(config: SqsSenderConfig): BatchSender {
  checkConfig(config);
  const client = new SQSClient({
    region: config.region,
    credentials: config.credentials,
    endpoint: config.endpoint,
    // Our config is the only source of the endpoint: the SDK would otherwise also read
    // AWS_ENDPOINT_URL* and ~/.aws/config on Node, which Workers do not have.
    ignoreConfiguredEndpointUrls: true,
    maxAttempts: 1,
  });
  const fifo = new URL(config.queueUrl).pathname.endsWith('.fifo');
  const destination = config.queueUrl;

  return {
    maxBatch: SQS_MAX_BATCH,
    async send(messages, signal, context) {
      const entries = await Promise.all(
        messages.map((message, index) => entryOf(message, index, fifo, config.unorderedGroupId)),
      );
      return sendInCalls(
        {
          sizes: entries.map(({ MessageBody = '' }, index) =>
            entryBytes(
              MessageBody,
              stringAttributesOf(messages[index]!, SQS_MESSAGE_KEY_ATTRIBUTE),
            ),
          ),
          limit: SQS_MAX_BATCH_BYTES,
          service: 'SQS',
          destination,
          extraCall: 'SQS SendMessageBatch for the rest of a batch over 1 MiB',
          send: (indexes, results) => sendCall(indexes, entries, results, signal),
        },
        context,
      );
    },
  };

  /** One `SendMessageBatch` call, its entries' results written into `results`. */
  async function sendCall(
    indexes: readonly number[],
    entries: readonly SendMessageBatchRequestEntry[],
    results: BatchItemResult[],
    signal?: AbortSignal,
  ): Promise<void> {
    let output: SendMessageBatchCommandOutput;
    try {
      output = await client.send(
        new SendMessageBatchCommand({
          QueueUrl: config.queueUrl,
          Entries: indexes.map((index) => entries[index]!),
        }),
        { abortSignal: signal },
      );
    } catch (error) {
      const failed = sqsDeliveryError(error, destination, signal);
      for (const index of indexes) results[index] = { delivered: false, error: failed };
      return;
    }
    readBatchAnswer(output, { indexes, results }, { service: 'SQS', destination }, (failure) =>
      sqsEntryError(failure, destination),
    );
  }
}

/** The entry of the message at `index` in its batch. */
async function entryOf(
  message: OutboundMessage,
  index: number,
  fifo: boolean,
  unorderedGroupId: string | undefined,
): Promise<SendMessageBatchRequestEntry> {
  const entry: SendMessageBatchRequestEntry = {
    Id: batchEntryId(index),
    MessageBody: JSON.stringify(message.payload),
    MessageAttributes: asMessageAttributes(stringAttributesOf(message, SQS_MESSAGE_KEY_ATTRIBUTE)),
  };
  if (fifo) {
    entry.MessageGroupId = await fifoGroupId(
      message.orderingKey ?? unorderedGroupId ?? message.key,
    );
    entry.MessageDeduplicationId = message.key;
  }
  return entry;
}

/** Fails at startup, not on the first send. */
function checkConfig(config: SqsSenderConfig): void {
  if (typeof config.queueUrl !== 'string' || !URL.canParse(config.queueUrl)) {
    throw new ConfigurationError(
      `SQS sender: queueUrl ${JSON.stringify(config.queueUrl)} is not a URL`,
    );
  }
  checkAwsSenderConfig('SQS sender', config);
}
