/**
 * The SNS sender a deployment's environment describes, built the same way on every runtime:
 * Node and Lambda (process.env), Workers (the `env` binding object).
 */
import { ConfigurationError } from '../../core/errors.js';
import type { BatchSender } from '../../core/sender.js';
import { type EnvLike, readEnv } from '../../runtime/env.js';
import { awsCredentialsFromEnv, awsRegionFromEnv } from '../aws-env.js';
import { SNS_TOPIC_ARN, type SnsSenderConfig, snsSender } from './sns-sender.js';

/**
 * Where the topic's region is read from before its ARN. Not `AWS_REGION` or `AWS_DEFAULT_REGION`:
 * a topic ARN always names its region, the only one SNS takes its publishes in, and Lambda sets
 * `AWS_REGION` to the function's own region, which need not be the topic's.
 */
const SNS_REGION_VARIABLES = ['OUTBOX_SNS_REGION'];

/**
 * Reads SNS settings from an environment object; `undefined` when `OUTBOX_SNS_TOPIC_ARN` is
 * unset (no topic configured).
 *
 * | Variable | Setting |
 * | --- | --- |
 * | `OUTBOX_SNS_TOPIC_ARN` | `topicArn` |
 * | `OUTBOX_SNS_REGION` (else the topic ARN's region) | `region` (the ARN's region either way: SNS takes a publish only there) |
 * | `AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY`, `AWS_SESSION_TOKEN` | `credentials` (unset: the SDK's own lookup, e.g. a Lambda's role; Workers need them) |
 * | `AWS_ENDPOINT_URL_SNS` (or `AWS_ENDPOINT_URL`) | `endpoint` |
 *
 * Throws `ConfigurationError` naming the variable that is malformed, or an `OUTBOX_SNS_REGION`
 * that is not the topic's.
 *
 * @example
 * const config = snsConfigFromEnv(process.env);
 * const senders = config ? { 'order.placed': snsSender(config) } : {};
 */
export function snsConfigFromEnv(env: EnvLike): SnsSenderConfig | undefined {
  const topicArn = readEnv(env, 'OUTBOX_SNS_TOPIC_ARN');
  if (topicArn === undefined) return undefined;
  const arn = SNS_TOPIC_ARN.exec(topicArn);
  if (arn === null) {
    throw new ConfigurationError(
      `SNS sender: OUTBOX_SNS_TOPIC_ARN must be a topic ARN such as arn:aws:sns:eu-west-1:123456789012:orders, got ${JSON.stringify(topicArn)}`,
    );
  }
  const topicRegion = arn[1]!;
  const region = awsRegionFromEnv(env, 'SNS sender', SNS_REGION_VARIABLES) ?? topicRegion;
  if (region !== topicRegion) {
    throw new ConfigurationError(
      `SNS sender: OUTBOX_SNS_REGION is ${region}, but the topic in OUTBOX_SNS_TOPIC_ARN is in ${topicRegion}, the only region SNS takes its publishes in`,
    );
  }
  const config: SnsSenderConfig = { topicArn, region };
  const credentials = awsCredentialsFromEnv(env, 'SNS sender');
  if (credentials !== undefined) config.credentials = credentials;
  const endpoint = readEnv(env, 'AWS_ENDPOINT_URL_SNS') ?? readEnv(env, 'AWS_ENDPOINT_URL');
  if (endpoint !== undefined) config.endpoint = endpoint;
  return config;
}

/**
 * `snsSender(snsConfigFromEnv(env))`, or `undefined` when the environment names no topic
 * (`OUTBOX_SNS_TOPIC_ARN` unset): then build no sender for the kind, and write no message of it.
 *
 * @example
 * const events = snsSenderFromEnv(process.env);
 * await drainOnce({ store, senders: events ? { 'order.placed': events } : {} });
 */
export function snsSenderFromEnv(env: EnvLike): BatchSender | undefined {
  const config = snsConfigFromEnv(env);
  return config === undefined ? undefined : snsSender(config);
}
