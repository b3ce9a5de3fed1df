/**
 * A connection string without a password: the first mistake with Neon, which always asks for
 * one. The drivers say it badly (`missing authentication credentials` from Neon's HTTP
 * endpoint, `SASL: SCRAM-SERVER-FIRST-MESSAGE: client password must be a string` from pg, and
 * Neon's WebSocket `Pool` throws out of an event handler, taking the process down), so every
 * place that sees the URL or the driver's error says it one way, from here: what is missing, and
 * how to add it.
 */
import { ConfigurationError } from '../core/errors.js';

/**
 * What the drivers say when the connection string carried no password and the server asked for
 * one: Neon's SQL-over-HTTP reply (its `NeonDbError` has an empty code), and pg's SCRAM step
 * with no password or an empty one.
 */
const MISSING_PASSWORD_MESSAGES = [
  /^missing authentication credentials$/,
  /^SASL: SCRAM-SERVER-FIRST-MESSAGE: client password must be a (?:non-empty )?string$/,
];

/**
 * The one sentence for it. `subject` names where the URL came from (`DATABASE_URL`, "the
 * connection string").
 *
 * @example
 * missingPasswordMessage('DATABASE_URL');
 * // 'DATABASE_URL has no password, and the database asks for one ...'
 */
export function missingPasswordMessage(subject: string): string {
  return (
    `${subject} has no password, and the database asks for one (Neon always does, and so does ` +
    'the local Neon stand-in): put it in the URL as postgres://USER:PASSWORD@HOST/DATABASE, ' +
    'percent-encoding any @ : / ? # % in the password'
  );
}

/** A {@link ConfigurationError} with {@link missingPasswordMessage}; the driver's error as `cause`. */
export function missingPasswordError(subject: string, cause?: unknown): ConfigurationError {
  return new ConfigurationError(missingPasswordMessage(subject), { cause });
}

/** True when a driver error means the connection string had no password the server could check. */
export function isMissingPasswordFailure(error: unknown): boolean {
  if (!(error instanceof Error)) return false;
  const code = (error as { code?: unknown }).code;
  if (code !== undefined && code !== '') return false;
  return MISSING_PASSWORD_MESSAGES.some((pattern) => pattern.test(error.message));
}

/**
 * False only for a `postgres://` URL that names no password, neither before the host nor as
 * `?password=`. Anything that is not such a URL (a libpq keyword string) counts as having one:
 * this says "missing" only when it is sure.
 */
export function urlHasPassword(url: string): boolean {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return true;
  }
  if (!/^postgres(?:ql)?:$/i.test(parsed.protocol)) return true;
  return parsed.password !== '' || (parsed.searchParams.get('password') ?? '') !== '';
}
