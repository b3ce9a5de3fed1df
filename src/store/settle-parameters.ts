import type { DestinationChange, DestinationHealthPolicy } from '../core/destination-health.js';
import type { SettledMessage, SettleRequest, SettleResult } from '../core/outbox-store.js';
import { MAX_RETRY_AFTER_MS } from '../core/retry-policy.js';
import { deliveryDuration, deliveryStatus, failedAttemptJson } from './attempt-log.js';
import { destinationChangeFromRow, type SettleRow } from './destination-store.js';
import { historyBounds } from './history-groups.js';
import { placed } from './settle-size.js';

/**
 * The settle statement's parameters for `requests` (see settle-statement.ts): one array per
 * column of the outcomes (their attempt history's included), each claim token once, with
 * delivered history the bounds of the group its deliveries make, and with a `health` policy
 * destination health's (for settleClaimedMessagesWithHealth; `false` counts no failures).
 * `health` in the result: which text the parameters are for.
 */
export function settleParameters(
  requests: readonly SettleRequest[],
  now: Date,
  keepDelivered: boolean,
  health?: DestinationHealthPolicy | false,
): { params: unknown[]; health: boolean } {
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
  const failed: boolean[] = [];
  const retryAfter: (number | null)[] = [];
  for (const { message, settlement } of requests) {
    ids.push(message.id);
    rowIds.push(placed(message).rowId);
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
    const failure =
      settlement.outcome === 'retry' || settlement.outcome === 'dead'
        ? settlement.destinationFailure
        : undefined;
    failed.push(failure !== undefined);
    retryAfter.push(retryAfterMs(failure?.retryAfterMs));
  }
  // Arrays all of nulls go as one null (unnest reads a null array as empty and pads it with
  // nulls beside the others): a group of deliveries has no due time, error or failed attempt.
  const params: unknown[] = [
    plainArray(ids, INTEGER),
    plainArray(rowIds, TID),
    plainArray(tokenNumbers, INTEGER),
    tokens,
    plainArray(outcomes, WORD),
    dueTimes.some((at) => at !== null) ? dueTimes : null,
    errors.some((error) => error !== null) ? errors : null,
    now,
    // A sender that reports no status has none: one null instead of an array of nulls saves the
    // server parsing it.
    failedAttempts.some((attempt) => attempt !== null) ? failedAttempts : null,
    statuses.some((status) => status !== null) ? statuses : null,
    plainArray(durations, INTEGER),
  ];
  if (keepDelivered) {
    const bounds = historyBounds(delivered);
    params.push(bounds?.ids ?? null, bounds?.smallestKey ?? null, bounds?.largestKey ?? null);
  }
  if (health === undefined) return { params, health: false };
  // Destination health's: null arrays when no outcome failed, as above.
  const anyFailed = failed.includes(true);
  params.push(
    anyFailed ? failed : null,
    anyFailed && retryAfter.some((ms) => ms !== null) ? retryAfter : null,
    health === false ? null : health.failuresToPause,
    health === false ? null : health.pauseMs,
    health === false ? null : health.maxPauseMs,
  );
  return { params, health: true };
}

/** Elements an array literal may hold unquoted: a whole number, an outcome's word. */
const INTEGER = (value: string | number) =>
  typeof value === 'number' ? Number.isSafeInteger(value) : /^-?\d+$/.test(value);
const WORD = (value: string | number) => typeof value === 'string' && /^[a-z]+$/.test(value);
/** A tid, `(page,offset)`: quoted in an array literal, for its comma. */
const TID = (value: string | number) => typeof value === 'string' && /^\(\d+,\d+\)$/.test(value);

/**
 * One of the settle's arrays as PostgreSQL's array literal, built with one join when every
 * element is plain (`plain`; nulls as NULL), and otherwise left to the driver. The drivers quote
 * and escape each element: over a no-op drain, 1.3 KB of garbage a message and about 3% of the
 * drain process's CPU (docs/benchmarks.md, "The drain process's CPU since 546db54").
 */
function plainArray(
  values: readonly (string | number | null)[],
  plain: (value: string | number) => boolean,
): string | readonly unknown[] {
  let nulls = false;
  for (const value of values) {
    if (value === null) nulls = true;
    else if (!plain(value)) return values;
  }
  if (plain === TID) return nulls ? values : `{"${values.join('","')}"}`;
  return `{${(nulls ? values.map((value) => value ?? 'NULL') : values).join(',')}}`;
}

/**
 * Whether a settle of `requests` keeps destination health: when an outcome is a failure that
 * counts against its destination, or a message's destination had failures or a pause when it
 * was claimed (its delivery resets them; the probe's closes the pause). Otherwise the settle
 * without it runs, and a healthy destination's deliveries write nothing for health.
 */
export function settleKeepsHealth(requests: readonly SettleRequest[]): boolean {
  return requests.some(
    ({ message, settlement }) =>
      message.destinationWatched === true ||
      ((settlement.outcome === 'retry' || settlement.outcome === 'dead') &&
        settlement.destinationFailure !== undefined),
  );
}

/** A Retry-After a sender reported, as the settle takes it: whole ms, at most a day; else null. */
function retryAfterMs(ms: number | null | undefined): number | null {
  if (typeof ms !== 'number' || !Number.isFinite(ms) || ms <= 0) return null;
  return Math.round(Math.min(ms, MAX_RETRY_AFTER_MS));
}

/**
 * What the settle statement's rows say of `requests`: a row without a destination names an
 * outcome left unwritten because another drain owns its row now (stale); a row with one, a
 * destination the settle paused or resumed.
 */
export function settleResultFromRows(
  requests: readonly SettleRequest[],
  rows: readonly SettleRow[],
): SettleResult {
  const stale = new Set<string>();
  const destinations: DestinationChange[] = [];
  for (const row of rows) {
    if (row.destination === null || row.destination === undefined) stale.add(String(row.id));
    else destinations.push(destinationChangeFromRow(row));
  }
  const ids = requests.map(({ message }) => message.id);
  const settled = {
    settled: ids.filter((id) => !stale.has(id)),
    stale: ids.filter((id) => stale.has(id)),
  };
  return destinations.length === 0 ? settled : { ...settled, destinations };
}
