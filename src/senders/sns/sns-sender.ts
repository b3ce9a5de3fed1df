import {
  PublishBatchCommand,
  type PublishBatchCommandOutput,
  type PublishBatchRequestEntry,
  SNSClient,
} from '@aws-sdk/client-sns';
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
import { snsDeliveryError, snsEntryError } from './sns-errors.js';

/**
 * The message attribute that carries the outbox message key: what a consumer deduplicates on.
 * The same name as the SQS sender's, so a queue subscribed with raw message delivery reads it
 * where a queue the SQS sender fills does.
 */
export const SNS_MESSAGE_KEY_ATTRIBUTE = 'outbox-message-key';

/** `PublishBatch` takes at most ten entries. */
export const SNS_MAX_BATCH = 10;

/**
 * 256 KiB: the most a `PublishBatch` call may carry in all, bodies and attributes, and the most
 * one message may be, on a topic at SNS's default `MaximumMessageSize`. A topic may be set to
 * take up to 1 MiB; this sender still keeps to 256 KiB, which every topic takes.
 */
export const SNS_MAX_BATCH_BYTES = 256 * 1024;

/**
 * An SNS topic's ARN, its region and name captured: `arn:aws:sns:eu-west-1:123456789012:orders`.
 * A name is 1 to 256 letters, digits, hyphens and underscores, a FIFO topic's ending in `.fifo`.
 */
export const SNS_TOPIC_ARN =
  /^arn:aws(?:-[a-z]+)*:sns:([a-z0-9-]+):\d{12}:((?:[A-Za-z0-9_-]{1,251}\.fifo)|[A-Za-z0-9_-]{1,256})$/;

/** Static AWS credentials. Workers have no credential files or instance metadata to find them. */
export interface SnsCredentials extends AwsCredentials {}

export interface SnsSenderConfig {
  /**
   * The topic's ARN. A FIFO topic's ends in `.fifo`: its messages then carry a MessageGroupId
   * (the ordering key) and a MessageDeduplicationId (the message key).
   */
  topicArn: string;
  /** The topic's region, e.g. `eu-west-1`: the one its ARN names. */
  region: string;
  /** Default: the SDK's own lookup (a Lambda's role, the environment); required on Workers. */
  credentials?: SnsCredentials;
  /** Override the SNS endpoint: a local SNS-compatible server, a VPC endpoint. */
  endpoint?: string;
  /**
   * FIFO topics: the MessageGroupId of a message without an ordering key. Default: the message's
   * own key, so messages without one are never held back behind each other.
   */
  unorderedGroupId?: string;
}

/**
 * A batch sender of any kind's payload to an Amazon SNS topic, ten messages a `PublishBatch`
 * call: the payload as JSON in the message, the message key in the `outbox-message-key` string
 * attribute (a subscriber drops a message whose key it has seen; an SQS queue subscribed with
 * raw message delivery gets it as a message attribute, any other subscriber in the
 * notification's `MessageAttributes`).
 *
 * A FIFO topic gets the ordering key as MessageGroupId (one that SNS would not take, longer than
 * 128 characters or with other characters, as `sha256-` and its hash: the same key, the same
 * group) and the message key as MessageDeduplicationId, so within SNS's five-minute window a
 * message published again after a crash is dropped by SNS itself.
 *
 * Each message of a call is settled by SNS's answer for it: an entry refused for the sender's
 * fault goes to dead letter; one refused for SNS's own fault is retried; throttling, and
 * failures only an operator can clear (the topic ARN, credentials, KMS), are retried later (the
 * table in `sns-errors.ts`). Calls are kept within 256 KiB of bodies and attributes: a batch
 * over it is published in two or more calls, each beyond the first spent from the drain's budget
 * (`context.spend`), and a message over it alone is set aside as dead without a call. The SDK
 * makes one attempt per call (`maxAttempts: 1`): retries and their timing belong to the drain.
 *
 * @example
 * const orders = snsSender({
 *   topicArn: 'arn:aws:sns:eu-west-1:123456789012:orders.fifo',
 *   region: 'eu-west-1',
 * });
 * await drainOnce({ store, senders: { 'order.placed': orders } });
 */
export function snsSender(config: SnsSenderConfig): BatchSender {
  checkConfig(config);
  const client = new SNSClient({
    region: config.region,
    credentials: config.credentials,
    endpoint: config.endpoint,
    // Our config is the only source of the endpoint: the SDK would otherwise also read
    // AWS_ENDPOINT_URL* and ~/.aws/config on Node, which Workers do not have.
    ignoreConfiguredEndpointUrls: true,
    maxAttempts: 1,
  });
  const fifo = config.topicArn.endsWith('.fifo');
  const destination = config.topicArn;

  return {
    maxBatch: SNS_MAX_BATCH,
    async send(messages, signal, context) {
      const entries = await Promise.all(
        messages.map((message, index) => entryOf(message, index, fifo, config.unorderedGroupId)),
      );
      return sendInCalls(
        {
          sizes: entries.map(({ Message = '' }, index) =>
            entryBytes(Message, stringAttributesOf(messages[index]!, SNS_MESSAGE_KEY_ATTRIBUTE)),
          ),
          limit: SNS_MAX_BATCH_BYTES,
          service: 'SNS',
          destination,
          extraCall: 'SNS PublishBatch for the rest of a batch over 256 KiB',
          send: (indexes, results) => publishCall(indexes, entries, results, signal),
        },
        context,
      );
    },
  };

  /** One `PublishBatch` call, its entries' results written into `results`. */
  async function publishCall(
    indexes: readonly number[],
    entries: readonly PublishBatchRequestEntry[],
    results: BatchItemResult[],
    signal?: AbortSignal,
  ): Promise<void> {
    let output: PublishBatchCommandOutput;
    try {
      output = await client.send(
        new PublishBatchCommand({
          TopicArn: config.topicArn,
          PublishBatchRequestEntries: indexes.map((index) => entries[index]!),
        }),
        { abortSignal: signal },
      );
    } catch (error) {
      const failed = snsDeliveryError(error, destination, signal);
      for (const index of indexes) results[index] = { delivered: false, error: failed };
      return;
    }
    readBatchAnswer(output, { indexes, results }, { service: 'SNS', destination }, (failure) =>
      snsEntryError(failure, destination),
    );
  }
}

/** The entry of the message at `index` in its batch. */
async function entryOf(
  message: OutboundMessage,
  index: number,
  fifo: boolean,
  unorderedGroupId: string | undefined,
): Promise<PublishBatchRequestEntry> {
  const entry: PublishBatchRequestEntry = {
    Id: batchEntryId(index),
    Message: JSON.stringify(message.payload),
    MessageAttributes: asMessageAttributes(stringAttributesOf(message, SNS_MESSAGE_KEY_ATTRIBUTE)),
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
function checkConfig(config: SnsSenderConfig): void {
  const arn = typeof config.topicArn === 'string' ? SNS_TOPIC_ARN.exec(config.topicArn) : null;
  if (arn === null) {
    throw new ConfigurationError(
      `SNS sender: topicArn ${JSON.stringify(config.topicArn)} is not an SNS topic ARN such as arn:aws:sns:eu-west-1:123456789012:orders`,
    );
  }
  checkAwsSenderConfig('SNS sender', config);
  // SNS takes a publish only in the topic's own region; the ARN says which that is.
  if (config.region !== arn[1]) {
    throw new ConfigurationError(
      `SNS sender: region ${config.region} is not the topic's region (${arn[1]}, in its ARN)`,
    );
  }
}
