/**
 * The value rules flags share: durations, whole numbers in a range, message ids, destination
 * names. Each throws a usage error naming the flag, so `outbox` exits 2 before touching the
 * database.
 */
import { isValidationError } from '../core/errors.js';
import { MAX_DESTINATION_NAME_LENGTH } from '../core/message.js';
import { isMessageId } from '../core/message-id.js';
import { checkedDestination } from '../store/destination-store.js';
import { usageError } from './cli-errors.js';

const DURATION_UNITS_MS: Readonly<Record<string, number>> = {
  ms: 1,
  s: 1_000,
  m: 60_000,
  h: 3_600_000,
  d: 86_400_000,
};

/**
 * A duration such as `500ms`, `30s`, `5m`, `2h` or `7d`, in milliseconds: a whole number and
 * one unit. A bare number is refused, because `--delay 30` could mean seconds or ms.
 *
 * @example
 * parseDuration('7d', '--older-than'); // 604800000
 */
export function parseDuration(text: string, flag: string): number {
  const match = /^(\d+)(ms|s|m|h|d)$/.exec(text.trim());
  const amount = match ? Number(match[1]) : Number.NaN;
  const unit = match ? DURATION_UNITS_MS[match[2]!]! : Number.NaN;
  const ms = amount * unit;
  if (!Number.isSafeInteger(ms)) {
    throw usageError(
      `${flag}: "${text}" is not a duration; use a whole number and a unit: 500ms, 30s, 5m, 2h, 7d`,
    );
  }
  return ms;
}

/** A whole number from `min` to `max`, written in decimal digits. */
export function parseInteger(
  text: string,
  flag: string,
  min: number,
  max: number,
  options: { why?: string } = {},
): number {
  const value = /^\d+$/.test(text.trim()) ? Number(text) : Number.NaN;
  if (!Number.isSafeInteger(value) || value < min || value > max) {
    const range = max === Number.MAX_SAFE_INTEGER ? `at least ${min}` : `from ${min} to ${max}`;
    const why = options.why === undefined ? '' : ` ${options.why}`;
    throw usageError(`${flag}: expected a whole number ${range}, got "${text}"${why}`);
  }
  return value;
}

/** `parseInteger` for a flag that may be absent. */
export function optionalInteger(
  text: string | undefined,
  flag: string,
  min: number,
  max: number,
): number | undefined {
  return text === undefined ? undefined : parseInteger(text, flag, min, max);
}

/**
 * The one message id a command takes as its argument: present, alone, and a positive integer
 * within bigint's range (`isMessageId`), so a bad id is a usage error, not a database error.
 */
export function singleMessageId(
  command: string,
  positionals: readonly string[],
  alternative = '',
): string {
  const [id, extra] = positionals;
  if (id === undefined) {
    throw usageError(`${command}: give the message id${alternative}, as \`outbox list\` shows it`);
  }
  if (extra !== undefined) throw usageError(`${command}: one message id at a time`);
  if (!isMessageId(id)) {
    throw usageError(
      `${command}: "${id}" is not a message id (a positive integer, the ID column of \`outbox list\`)`,
    );
  }
  return id;
}

/**
 * The one destination a command takes as its argument: present, alone, and a name a
 * destination can have (the store's rule), so a bad one is a usage error before connecting.
 */
export function singleDestination(command: string, positionals: readonly string[]): string {
  const [name, extra] = positionals;
  if (name === undefined) {
    throw usageError(
      `${command}: give the destination, as \`outbox destinations\` shows it (a webhook's is its URL's origin: https://hooks.example.com)`,
    );
  }
  if (extra !== undefined) throw usageError(`${command}: one destination at a time`);
  return destinationName(name, command);
}

/** `text` when it can be a destination's name (the store's rule); `where` names the flag. */
export function destinationName(text: string, where: string): string {
  try {
    return checkedDestination(text, 'destination');
  } catch (error) {
    if (!isValidationError(error)) throw error;
    throw usageError(
      `${where}: "${text}" cannot be a destination's name (1 to ${MAX_DESTINATION_NAME_LENGTH} characters PostgreSQL can store)`,
    );
  }
}
