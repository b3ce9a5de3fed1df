/**
 * What became of one claimed message. Built only through the constructors below, so an outcome
 * that makes no sense (a retry with no time, a delivery with an error) does not type-check.
 */
export type Settlement =
  | { readonly outcome: 'delivered' }
  | { readonly outcome: 'retry'; readonly at: Date; readonly error: string }
  | { readonly outcome: 'dead'; readonly reason: string }
  | { readonly outcome: 'release'; readonly at: Date };

/** The sender succeeded. */
export function delivered(): Settlement {
  return { outcome: 'delivered' };
}

/** Try again no earlier than `at`; the attempt counts. */
export function retry(at: Date, error: string): Settlement {
  return { outcome: 'retry', at, error: truncateError(error) };
}

/** Set aside for an operator: permanent failure or attempts exhausted. */
export function dead(reason: string): Settlement {
  return { outcome: 'dead', reason: truncateError(reason) };
}

/** Claimed but never sent: claimable again from `at`, and the attempt does not count. */
export function release(at: Date): Settlement {
  return { outcome: 'release', at };
}

/**
 * 2,000 characters of error: enough for a provider's message and a response snippet, small
 * enough that a failing batch does not bloat the hot table with stack traces.
 */
export const MAX_ERROR_LENGTH = 2000;

export function truncateError(error: string): string {
  return error.length <= MAX_ERROR_LENGTH ? error : `${error.slice(0, MAX_ERROR_LENGTH - 1)}…`;
}
