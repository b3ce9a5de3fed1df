/**
 * Reading settings from an environment object: a Worker's `env` bindings, Lambda's or Node's
 * `process.env`. One reader for every runtime, so a setting means the same thing everywhere and
 * a malformed one fails the same way: a `ConfigurationError` naming the variable. Import from
 * `outbox-relay/env` to read your own settings the way the kits and the CLI read theirs.
 */
import { ConfigurationError } from '../core/errors.js';
import { missingPasswordError, urlHasPassword } from '../drivers/connection-password.js';

/**
 * A Worker's `env` or `process.env`: values read by name; only strings count. Any object, so a
 * Worker's `Env` written as an interface (what `wrangler types` generates, which has no index
 * signature) is taken as it is.
 */
export type EnvLike = object;

/** The trimmed value of `name`, or `undefined` when unset, empty or not a string. */
export function readEnv(env: EnvLike, name: string): string | undefined {
  const value: unknown = Reflect.get(env, name);
  return typeof value === 'string' && value.trim() !== '' ? value.trim() : undefined;
}

/** A whole number of at least `min` from `name`, or `fallback` when unset. */
export function integerFromEnv(env: EnvLike, name: string, fallback: number, min = 1): number {
  const text = readEnv(env, name);
  if (text === undefined) return fallback;
  const value = Number(text);
  if (!Number.isInteger(value) || value < min) {
    throw new ConfigurationError(`${name} must be a whole number of at least ${min}, got ${text}`);
  }
  return value;
}

/** `on`/`off` style switches: unset gives `fallback`; anything unrecognised is an error. */
export function switchFromEnv(env: EnvLike, name: string, fallback: boolean): boolean {
  const text = readEnv(env, name)?.toLowerCase();
  if (text === undefined) return fallback;
  if (['on', 'true', '1', 'yes'].includes(text)) return true;
  if (['off', 'false', '0', 'no'].includes(text)) return false;
  throw new ConfigurationError(`${name} must be on or off, got ${text}`);
}

export interface PostgresUrlOptions {
  /**
   * Refuse a URL without a password, naming the variable and how to add one. Set it where the
   * URL goes to Neon's drivers, which always need one; leave it off for pg, where a password
   * may come from `PGPASSWORD` or `~/.pgpass`. Default false.
   */
  requirePassword?: boolean;
}

/**
 * `DATABASE_URL` (or `name`), checked to be a PostgreSQL URL. A missing value and a value of
 * another kind (a `mysql://` URL, a bare host) get different messages, because "must be set"
 * sends someone who did set it looking in the wrong place.
 *
 * @example
 * import { neon } from '@neondatabase/serverless';
 * import { postgresUrlFromEnv } from 'outbox-relay/env';
 *
 * const sql = neon(postgresUrlFromEnv(env, 'DATABASE_URL', { requirePassword: true }));
 */
export function postgresUrlFromEnv(
  env: EnvLike,
  name = 'DATABASE_URL',
  options: PostgresUrlOptions = {},
): string {
  const url = readEnv(env, name);
  if (url === undefined) {
    throw new ConfigurationError(`${name} must be set to a postgres:// URL`);
  }
  if (!/^postgres(?:ql)?:\/\//i.test(url)) {
    const scheme = /^([a-z][a-z0-9+.-]*):/i.exec(url)?.[1];
    throw new ConfigurationError(
      scheme === undefined
        ? `${name} is not a postgres:// URL (it has no scheme)`
        : `${name} is a ${scheme}:// URL, not a postgres:// URL: outbox-relay needs PostgreSQL`,
    );
  }
  if (options.requirePassword && !urlHasPassword(url)) throw missingPasswordError(name);
  return url;
}
