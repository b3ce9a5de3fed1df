/**
 * SES settings, and reading them from the environment. No SDK here: a program can tell whether
 * SES is configured (and the CLI whether to load the SDK at all) without importing
 * `@aws-sdk/client-ses`, an optional peer that a webhook-only app never installs.
 */
import { ConfigurationError } from '../../core/errors.js';
import type { Clock } from '../../core/ports.js';
import { type EnvLike, readEnv } from '../../runtime/env.js';
import { awsRegionFromEnv } from '../aws-env.js';

/** Static AWS credentials. Workers have no credential files or instance metadata to find them. */
export interface SesCredentials {
  accessKeyId: string;
  secretAccessKey: string;
  /** For temporary credentials (STS, a Lambda's own role). */
  sessionToken?: string;
}

export interface SesSenderConfig {
  /** The SES region, e.g. `eu-west-1`. Explicit: no runtime lookup. */
  region: string;
  credentials: SesCredentials;
  /** Override the SES endpoint: a local emulator, a VPC endpoint. */
  endpoint?: string;
  /** `From` for payloads that give none: `Acme <no-reply@acme.example>`. */
  defaultFrom?: string;
  /** Configuration set for payloads that name none (event publishing, dedicated IPs). */
  defaultConfigurationSet?: string;
  /** The `Date` header's source. Default: the system clock. */
  clock?: Clock;
}

/**
 * Where SES's region is read from, in order: OUTBOX_SES_REGION says where to send (Lambda
 * reserves AWS_REGION for the function's own region, which need not be where SES is set up),
 * and falls back to the runtime's region.
 */
const SES_REGION_VARIABLES = ['OUTBOX_SES_REGION', 'AWS_REGION', 'AWS_DEFAULT_REGION'];

/**
 * Reads SES settings from an environment object: `process.env` on Node and Lambda, the `env`
 * argument on Workers. The only place this package reads the environment for SES.
 *
 * | Variable | Setting |
 * | --- | --- |
 * | `OUTBOX_SES_REGION` (else `AWS_REGION`, `AWS_DEFAULT_REGION`) | `region` (required; on Lambda `AWS_REGION` is the function's region) |
 * | `AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY` | `credentials` (required) |
 * | `AWS_SESSION_TOKEN` | `credentials.sessionToken` |
 * | `AWS_ENDPOINT_URL_SES` (or `AWS_ENDPOINT_URL`) | `endpoint` |
 * | `OUTBOX_EMAIL_FROM` | `defaultFrom` |
 * | `OUTBOX_SES_CONFIGURATION_SET` | `defaultConfigurationSet` |
 *
 * Throws `ConfigurationError` naming every missing variable.
 *
 * @example
 * const email = sesSender(sesConfigFromEnv(env)); // a Worker's env, or process.env elsewhere
 */
export function sesConfigFromEnv(env: EnvLike): SesSenderConfig {
  const read = (name: string) => readEnv(env, name);
  const region = awsRegionFromEnv(env, 'SES sender', SES_REGION_VARIABLES);
  const accessKeyId = read('AWS_ACCESS_KEY_ID');
  const secretAccessKey = read('AWS_SECRET_ACCESS_KEY');
  const missing = [
    region === undefined ? 'OUTBOX_SES_REGION (or AWS_REGION)' : undefined,
    accessKeyId === undefined ? 'AWS_ACCESS_KEY_ID' : undefined,
    secretAccessKey === undefined ? 'AWS_SECRET_ACCESS_KEY' : undefined,
  ].filter((name) => name !== undefined);
  if (missing.length > 0) {
    throw new ConfigurationError(`SES sender: set ${missing.join(', ')} in the environment`);
  }
  const sessionToken = read('AWS_SESSION_TOKEN');
  const config: SesSenderConfig = {
    region: region!,
    credentials: {
      accessKeyId: accessKeyId!,
      secretAccessKey: secretAccessKey!,
      ...(sessionToken === undefined ? {} : { sessionToken }),
    },
  };
  const endpoint = read('AWS_ENDPOINT_URL_SES') ?? read('AWS_ENDPOINT_URL');
  if (endpoint !== undefined) config.endpoint = endpoint;
  const from = read('OUTBOX_EMAIL_FROM');
  if (from !== undefined) config.defaultFrom = from;
  const configurationSet = read('OUTBOX_SES_CONFIGURATION_SET');
  if (configurationSet !== undefined) config.defaultConfigurationSet = configurationSet;
  return config;
}

/**
 * True when `env` asks for SES: it holds `AWS_ACCESS_KEY_ID` (real SES) or
 * `AWS_ENDPOINT_URL_SES` (a local emulator). Without either, a drain builds no email sender and
 * emails stay pending.
 */
export function sesRequestedInEnv(env: EnvLike): boolean {
  return (
    readEnv(env, 'AWS_ACCESS_KEY_ID') !== undefined ||
    readEnv(env, 'AWS_ENDPOINT_URL_SES') !== undefined
  );
}
