/**
 * The SQS sender a deployment's environment describes, built the same way on every runtime:
 * Node and Lambda (process.env), Workers (the `env` binding object).
 */
import { ConfigurationError } from '../../core/errors.js';
import type { BatchSender } from '../../core/sender.js';
import { type EnvLike, readEnv } from '../../runtime/env.js';
import { awsCredentialsFromEnv, awsRegionFromEnv } from '../aws-env.js';
import { type SqsSenderConfig, sqsSender } from './sqs-sender.js';

/** Where the queue's region is read from, in order (Lambda's AWS_REGION is its own region). */
const SQS_REGION_VARIABLES = ['OUTBOX_SQS_REGION', 'AWS_REGION', 'AWS_DEFAULT_REGION'];

/** An SQS queue URL's host names its region: `sqs.eu-west-1.amazonaws.com`. */
const SQS_HOST_REGION = /^sqs\.([a-z0-9-]+)\.amazonaws\.com(?:\.cn)?$/;

/**
 * Reads SQS settings from an environment object; `undefined` when `OUTBOX_SQS_QUEUE_URL` is
 * unset (no queue configured).
 *
 * | Variable | Setting |
 * | --- | --- |
 * | `OUTBOX_SQS_QUEUE_URL` | `queueUrl` |
 * | `OUTBOX_SQS_REGION` (else `AWS_REGION`, `AWS_DEFAULT_REGION`, else the queue URL's host) | `region` |
 * | `AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY`, `AWS_SESSION_TOKEN` | `credentials` (unset: the SDK's own lookup, e.g. a Lambda's role; Workers need them) |
 * | `AWS_ENDPOINT_URL_SQS` (or `AWS_ENDPOINT_URL`) | `endpoint` |
 *
 * Throws `ConfigurationError` naming the variable that is malformed or missing.
 *
 * @example
 * const config = sqsConfigFromEnv(process.env);
 * const senders = config ? { 'order.placed': sqsSender(config) } : {};
 */
export function sqsConfigFromEnv(env: EnvLike): SqsSenderConfig | undefined {
  const queueUrl = readEnv(env, 'OUTBOX_SQS_QUEUE_URL');
  if (queueUrl === undefined) return undefined;
  if (!URL.canParse(queueUrl)) {
    throw new ConfigurationError(
      `SQS sender: OUTBOX_SQS_QUEUE_URL must be a queue URL such as https://sqs.eu-west-1.amazonaws.com/123456789012/orders, got ${JSON.stringify(queueUrl)}`,
    );
  }
  const region =
    awsRegionFromEnv(env, 'SQS sender', SQS_REGION_VARIABLES) ??
    SQS_HOST_REGION.exec(new URL(queueUrl).hostname)?.[1];
  if (region === undefined) {
    throw new ConfigurationError(
      'SQS sender: set OUTBOX_SQS_REGION (or AWS_REGION) in the environment: the queue URL does not name a region',
    );
  }
  const config: SqsSenderConfig = { queueUrl, region };
  const credentials = awsCredentialsFromEnv(env, 'SQS sender');
  if (credentials !== undefined) config.credentials = credentials;
  const endpoint = readEnv(env, 'AWS_ENDPOINT_URL_SQS') ?? readEnv(env, 'AWS_ENDPOINT_URL');
  if (endpoint !== undefined) config.endpoint = endpoint;
  return config;
}

/**
 * `sqsSender(sqsConfigFromEnv(env))`, or `undefined` when the environment names no queue
 * (`OUTBOX_SQS_QUEUE_URL` unset): then build no sender for the kind, and write no message of it.
 *
 * @example
 * const events = sqsSenderFromEnv(process.env);
 * await drainOnce({ store, senders: events ? { 'order.placed': events } : {} });
 */
export function sqsSenderFromEnv(env: EnvLike): BatchSender | undefined {
  const config = sqsConfigFromEnv(env);
  return config === undefined ? undefined : sqsSender(config);
}
