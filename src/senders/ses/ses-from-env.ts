/**
 * The SES sender a deployment's environment describes, built the same way on every runtime:
 * the CLI and Node (process.env), Lambda (process.env), Workers (the `env` binding object).
 */
import { ConfigurationError } from '../../core/errors.js';
import type { Sender } from '../../core/sender.js';
import { type EnvLike, readEnv } from '../../runtime/env.js';
import { limitSender } from '../rate-limit.js';
import { sesConfigFromEnv, sesRequestedInEnv } from './ses-config.js';
import { sesSender } from './ses-sender.js';

/**
 * `sesSender(sesConfigFromEnv(env))` (see there for the variables it reads), rate-limited to
 * `OUTBOX_SES_MAX_SEND_RATE` messages per second per invocation when that is set (your SES
 * account's rate divided by the invocations that may overlap). `undefined` when `env` has
 * neither `AWS_ACCESS_KEY_ID` nor `AWS_ENDPOINT_URL_SES`: then build no email sender, and emails
 * stay pending until a drain with SES credentials runs. Throws `ConfigurationError` naming a
 * variable that is missing or malformed.
 *
 * @example
 * const email = sesSenderFromEnv(env); // undefined: no SES credentials, emails wait
 * await drainOnce({ store, senders: email ? { email } : {} });
 */
export function sesSenderFromEnv(env: EnvLike): Sender | undefined {
  if (!sesRequestedInEnv(env)) return undefined;
  const email = sesSender(sesConfigFromEnv(env));
  const rate = readEnv(env, 'OUTBOX_SES_MAX_SEND_RATE');
  if (rate === undefined) return email;
  if (!(Number(rate) > 0)) {
    throw new ConfigurationError(`OUTBOX_SES_MAX_SEND_RATE must be a positive number, got ${rate}`);
  }
  return limitSender(email, { perSecond: Number(rate) });
}
