/**
 * Message ids are PostgreSQL `bigint` identities, carried as decimal strings because they may
 * exceed 2^53. Anything that takes an id from outside (an admin URL, a CLI argument) checks it
 * here first, so a value past the column's range is refused as bad input instead of reaching
 * the database and failing there.
 */

/** The largest `bigint`: 2^63 - 1. */
export const MAX_MESSAGE_ID = 9_223_372_036_854_775_807n;

const DECIMAL_ID = /^[1-9][0-9]{0,18}$/;

/** Whether `text` is a message id: a positive decimal integer no larger than `bigint` holds. */
export function isMessageId(text: string): boolean {
  return DECIMAL_ID.test(text) && BigInt(text) <= MAX_MESSAGE_ID;
}

/**
 * Orders message ids as numbers without parsing them: ids are positive integers in canonical
 * decimal (no leading zeros), so a shorter one is the smaller and equal lengths compare as text.
 */
export function compareMessageIds(a: string, b: string): number {
  return a.length - b.length || (a < b ? -1 : a > b ? 1 : 0);
}
