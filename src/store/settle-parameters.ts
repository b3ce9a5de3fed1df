import type { SettledMessage, SettleRequest } from '../core/outbox-store.js';
import { deliveryDuration, deliveryStatus, failedAttemptJson } from './attempt-log.js';
import { historyBounds } from './history-groups.js';

/**
 * The settle statement's parameters for `requests` (see settleClaimedMessages): one array per
 * column of the outcomes (their attempt history's included), each claim token once, and with
 * delivered history the bounds of the group its deliveries make.
 */
export function settleParameters(
  requests: readonly SettleRequest[],
  now: Date,
  keepDelivered: boolean,
): unknown[] {
  const ids: string[] = [];
  const rowIds: string[] = [];
  const tokenNumbers: number[] = [];
  const tokens: string[] = [];
  const numberOf = new Map<string, number>();
  const outcomes: string[] = [];
  const dueTimes: (Date | null)[] = [];
  const errors: (string | null)[] = [];
  const failedAttempts: (string | null)[] = [];
  const statuses: (number | null)[] = [];
  const durations: (number | null)[] = [];
  const delivered: SettledMessage[] = [];
  for (const { message, settlement } of requests) {
    ids.push(message.id);
    rowIds.push(message.rowId);
    let tokenNumber = numberOf.get(message.claimToken);
    if (tokenNumber === undefined) {
      tokenNumber = tokens.push(message.claimToken);
      numberOf.set(message.claimToken, tokenNumber);
    }
    tokenNumbers.push(tokenNumber);
    outcomes.push(settlement.outcome);
    dueTimes.push(
      settlement.outcome === 'retry' || settlement.outcome === 'release' ? settlement.at : null,
    );
    errors.push(
      settlement.outcome === 'retry'
        ? settlement.error
        : settlement.outcome === 'dead'
          ? settlement.reason
          : null,
    );
    failedAttempts.push(failedAttemptJson(settlement));
    statuses.push(deliveryStatus(settlement));
    durations.push(deliveryDuration(settlement));
    if (settlement.outcome === 'delivered') delivered.push(message);
  }
  const params: unknown[] = [
    ids,
    rowIds,
    tokenNumbers,
    tokens,
    outcomes,
    dueTimes,
    errors,
    now,
    // A settle of deliveries alone has no failed attempt, and a sender that reports no status
    // none: one null instead of an array of nulls saves the server parsing it (unnest reads a
    // null array as empty and pads it with nulls beside the others).
    failedAttempts.some((attempt) => attempt !== null) ? failedAttempts : null,
    statuses.some((status) => status !== null) ? statuses : null,
    durations,
  ];
  if (keepDelivered) {
    const bounds = historyBounds(delivered);
    params.push(bounds?.ids ?? null, bounds?.smallestKey ?? null, bounds?.largestKey ?? null);
  }
  return params;
}
