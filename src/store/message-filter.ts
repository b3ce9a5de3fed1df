/**
 * Which messages an operator means: the filters lists and bulk actions share, and the checks on
 * what an action may take. The statements they feed are in operator-statements.ts.
 */
import { ValidationError } from '../core/errors.js';
import type { MessageState } from '../core/outbox-store.js';

/** Which messages of a state a list shows, or an operator's action takes. */
export interface MessageFilter {
  state: MessageState;
  kind?: string;
  /** A piece of the last error, matched in any case. */
  error?: string;
  orderingKey?: string;
  /**
   * From (inclusive) and until (exclusive), on the time the list orders by: when a pending
   * message is due, a claimed one's lease ends, a delivered one was delivered, a dead one died.
   */
  from?: Date;
  until?: Date;
}

/** The message a pending message waits for: the head of its ordering key. */
export interface HoldingHead {
  id: string;
  key: string;
  state: 'pending' | 'claimed' | 'dead';
  /** Pending: when the head is due. Claimed: when its lease ends. Dead: its last due time. */
  dueAt: Date;
}

/** The states bulk retry and discard take; a claimed message is its drain's. */
export const ACTIONABLE_STATES: readonly MessageState[] = ['dead', 'pending'];

/** A filter's values in the statements' order: kind, error, ordering key, from, until. */
export function filterParameters(filter: MessageFilter): unknown[] {
  return [
    filter.kind || null,
    filter.error || null,
    filter.orderingKey || null,
    filter.from ?? null,
    filter.until ?? null,
  ];
}

export function actionableState(state: MessageState): MessageState {
  if (!ACTIONABLE_STATES.includes(state)) {
    throw new ValidationError('state', `expected one of ${ACTIONABLE_STATES.join(', ')}`);
  }
  return state;
}

export function actionLimit(limit: number): number {
  if (!Number.isSafeInteger(limit) || limit < 1) {
    throw new ValidationError('limit', 'expected a whole number above 0');
  }
  return limit;
}
