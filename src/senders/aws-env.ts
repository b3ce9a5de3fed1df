/**
 * Reading an AWS sender's region and credentials from the environment, the same way for every
 * AWS sender (SES, SQS, SNS) and every runtime: `process.env` on Node and Lambda, the `env`
 * binding object on Workers; and checking the settings the SQS and SNS senders share. No SDK
 * here, so a program can read its settings without loading one.
 */
import { ConfigurationError } from '../core/errors.js';
import { type EnvLike, readEnv } from '../runtime/env.js';
import { FIFO_GROUP_ID } from './aws-batch-calls.js';

/** `us-east-1`, `ap-southeast-2`, `us-gov-west-1`: what AWS endpoints are named after. */
const AWS_REGION_PATTERN = /^[a-z]{2}(?:-[a-z]+)+-\d{1,2}$/;

/** Static AWS credentials. Workers have no credential files or instance metadata to find them. */
export interface AwsCredentials {
  accessKeyId: string;
  secretAccessKey: string;
  /** For temporary credentials (STS, a Lambda's own role). */
  sessionToken?: string;
}

/**
 * The region from the first of `names` that is set, checked to look like one; `undefined` when
 * none is. Lambda reserves `AWS_REGION` for the function's own region, which need not be where
 * the service is set up: each sender's own variable comes first.
 */
export function awsRegionFromEnv(
  env: EnvLike,
  sender: string,
  names: readonly string[],
): string | undefined {
  const name = names.find((candidate) => readEnv(env, candidate) !== undefined);
  if (name === undefined) return undefined;
  const region = readEnv(env, name)!;
  if (!AWS_REGION_PATTERN.test(region)) {
    throw new ConfigurationError(
      `${sender}: ${name} must be an AWS region such as us-east-1, got ${JSON.stringify(region)}`,
    );
  }
  return region;
}

/**
 * `AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY` and `AWS_SESSION_TOKEN`; `undefined` when neither
 * of the first two is set. One without the other is a mistake, named.
 */
export function awsCredentialsFromEnv(env: EnvLike, sender: string): AwsCredentials | undefined {
  const accessKeyId = readEnv(env, 'AWS_ACCESS_KEY_ID');
  const secretAccessKey = readEnv(env, 'AWS_SECRET_ACCESS_KEY');
  if (accessKeyId === undefined && secretAccessKey === undefined) return undefined;
  if (accessKeyId === undefined || secretAccessKey === undefined) {
    const missing = accessKeyId === undefined ? 'AWS_ACCESS_KEY_ID' : 'AWS_SECRET_ACCESS_KEY';
    throw new ConfigurationError(`${sender}: set ${missing} in the environment`);
  }
  const sessionToken = readEnv(env, 'AWS_SESSION_TOKEN');
  return { accessKeyId, secretAccessKey, ...(sessionToken === undefined ? {} : { sessionToken }) };
}

/** What the SQS and SNS senders are configured with alike, beside where they send. */
export interface AwsSenderConfig {
  region: string;
  credentials?: AwsCredentials;
  endpoint?: string;
  unorderedGroupId?: string;
}

/**
 * Throws `ConfigurationError`, its message opening with `sender` (`SQS sender`), at the first of
 * the shared settings no call could be made with: so a sender fails at startup, not on its first
 * send. Each sender checks where it sends itself.
 */
export function checkAwsSenderConfig(sender: string, config: AwsSenderConfig): void {
  if (typeof config.region !== 'string' || config.region.trim() === '') {
    throw new ConfigurationError(`${sender}: region is required`);
  }
  if (config.credentials !== undefined) {
    const { accessKeyId, secretAccessKey } = config.credentials;
    if (!accessKeyId || !secretAccessKey) {
      throw new ConfigurationError(
        `${sender}: credentials need both accessKeyId and secretAccessKey (or leave them out for the SDK to find)`,
      );
    }
  }
  if (config.endpoint !== undefined && !URL.canParse(config.endpoint)) {
    throw new ConfigurationError(
      `${sender}: endpoint ${JSON.stringify(config.endpoint)} is not a URL`,
    );
  }
  if (config.unorderedGroupId !== undefined && !FIFO_GROUP_ID.test(config.unorderedGroupId)) {
    throw new ConfigurationError(
      `${sender}: unorderedGroupId must be 1 to 128 letters, digits or punctuation`,
    );
  }
}
