/**
 * What became of one claimed message. Built only through the constructors below, so an outcome
 * that makes no sense (a retry with no time, a delivery with an error) does not type-check.
 */
import type { AttemptFacts, DeliveryFacts } from './attempt-facts.js';
import { storableText } from './storable-text.js';

/**
 * `attempt`, where given, is what the attempt's history records (see attempt-facts.ts): the
 * drain gives it for every send it made (a delivery: its status and duration only). An outcome
 * without one (written by hand) is recorded without the time, duration and details.
 */
export type Settlement =
  | { readonly outcome: 'delivered'; readonly attempt?: DeliveryFacts }
  | {
      readonly outcome: 'retry';
      readonly at: Date;
      readonly error: ErrorText;
      readonly attempt?: AttemptFacts;
      readonly destinationFailure?: DestinationFailure;
    }
  | {
      readonly outcome: 'dead';
      readonly reason: ErrorText;
      readonly attempt?: AttemptFacts;
      readonly destinationFailure?: DestinationFailure;
    }
  | { readonly outcome: 'release'; readonly at: Date };

/**
 * A failure that says the destination itself is in trouble (no answer, a timeout, a 5xx, a
 * 429): counted toward pausing it (docs/destinations.md). A refusal of one message (a permanent
 * failure) says nothing of the others and carries none. `retryAfterMs`: how long the receiver
 * asked to be left alone (Retry-After), which pauses the destination that long at once.
 */
export interface DestinationFailure {
  readonly retryAfterMs: number | null;
}

declare const errorText: unique symbol;

/**
 * An error as a settlement stores it: made by {@link retry} and {@link dead} alone, so every
 * error and reason the drain writes (a receiver's answer, a provider's message, whatever a
 * sender threw) has been made storable on the way (`storableError` below), and a settlement
 * spelled out by hand with raw text does not type-check.
 */
export type ErrorText = string & { readonly [errorText]: true };

/** The sender succeeded. */
export function delivered(attempt?: DeliveryFacts): Settlement {
  return attempt === undefined ? { outcome: 'delivered' } : { outcome: 'delivered', attempt };
}

/**
 * Try again no earlier than `at`; the attempt counts. `error` is stored made storable and
 * readable, within {@link MAX_ERROR_LENGTH}, whatever it holds (see {@link ErrorText}).
 */
export function retry(
  at: Date,
  error: string,
  attempt?: AttemptFacts,
  destinationFailure?: DestinationFailure,
): Settlement {
  const settlement = { outcome: 'retry', at, error: storableError(error) } as const;
  return withFacts(settlement, attempt, destinationFailure);
}

/**
 * Set aside for an operator: permanent failure or attempts exhausted. `reason` is stored as
 * {@link retry} stores its error.
 */
export function dead(
  reason: string,
  attempt?: AttemptFacts,
  destinationFailure?: DestinationFailure,
): Settlement {
  const settlement = { outcome: 'dead', reason: storableError(reason) } as const;
  return withFacts(settlement, attempt, destinationFailure);
}

/** `settlement` with the facts given, and no property for those not given. */
function withFacts<S extends Settlement>(
  settlement: S,
  attempt: AttemptFacts | undefined,
  destinationFailure: DestinationFailure | undefined,
): S {
  if (attempt === undefined && destinationFailure === undefined) return settlement;
  return {
    ...settlement,
    ...(attempt === undefined ? {} : { attempt }),
    ...(destinationFailure === undefined ? {} : { destinationFailure }),
  };
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

/**
 * `error` as it can be stored and read: NUL and lone surrogates replaced, control characters
 * escaped, cut on a character boundary within {@link MAX_ERROR_LENGTH} (see
 * {@link storableText}). Text from anywhere (a receiver, a provider, a user's sender) gets here
 * before it can reach the settle statement, where one unstorable string would fail the whole
 * group's write.
 */
function storableError(error: string): ErrorText {
  return storableText(error, MAX_ERROR_LENGTH) as ErrorText;
}
