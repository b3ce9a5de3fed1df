/**
 * Writing one group of outcomes: what may pass is tried again, and a group the store refused for
 * good is split, so that one outcome it cannot take does not hold back the others.
 */
import type { DestinationChange } from './destination-health.js';
import { budgetLeft } from './drain-budget.js';
import { type DrainRun, notify } from './drain-run.js';
import type { DrainReport } from './drain-settings.js';
import { describeError, OutboxError } from './errors.js';
import type { SettleRequest } from './outbox-store.js';
import type { Logger } from './ports.js';
import { dead, retry, type Settlement } from './settlement.js';

/** Attempts at writing a group's outcomes before giving up (the lease then covers for us). */
const SETTLE_TRIES = 5;

/**
 * The wait before the second settle try, growing 4x per try (100 ms, 400 ms, 1.6 s, 6.4 s),
 * each cut to the time left before the deadline: a connection cut, a Neon reply lost or a
 * PostgreSQL restart passes in about a second, and a settle given up on means every sent
 * message of its group goes out again after the lease.
 */
const SETTLE_RETRY_WAIT_MS = 100;

/**
 * Records a group's outcomes, in one statement when all goes well.
 *
 * A write that fails in a way that may pass (a lost connection, a restart, a serialization
 * failure: the drivers mark such errors `retryable` by SQLSTATE or network code, see
 * src/drivers/postgres-errors.ts) is tried again while time and budget allow. If it still fails,
 * the rows keep their lease and another drain takes them after it: sent ones go out again with
 * the same key, which is what the key is for. That failure is kept on the run, which then sends
 * no more and rethrows it.
 *
 * A write whose data the database refused (a data error such as a NUL byte in a text, a check
 * violation: the same statement would fail the same way) is not tried again as it was: it is
 * split in halves, each written on its own, down to the outcome it cannot take
 * ({@link writeAlone}), so every other outcome of the group is recorded and the run goes on.
 * Under a budget each further write is paid from what is free, like a retry. Any other error
 * marked not retryable (a missing table, a permission) fails the run at once: no retry of the
 * write, nor any part of it, would pass.
 */
export async function writeGroup(requests: readonly SettleRequest[], run: DrainRun): Promise<void> {
  await writeOrSplit(requests, run, { paid: true, error: undefined });
}

/**
 * Whether a write's first try is already paid for (a group's first write is: its claims kept
 * it free), and the error of the write it is a part of.
 */
interface Part {
  paid: boolean;
  error: unknown;
}

/**
 * One write, split when refused. Resolves false when the database kept failing (or time or
 * budget ran out): the parts not yet written are then given up without trying them.
 */
async function writeOrSplit(
  requests: readonly SettleRequest[],
  run: DrainRun,
  part: Part,
): Promise<boolean> {
  const failed = await writeWithRetries(requests, run, part);
  if (failed === undefined) return true;
  if (failed.reason !== 'refused') {
    giveUp(requests, run, failed.error);
    return false;
  }
  if (requests.length === 1) return writeAlone(requests[0]!, run, failed.error);
  const half = Math.ceil(requests.length / 2);
  const rest = requests.slice(half);
  const next: Part = { paid: false, error: failed.error };
  if (!(await writeOrSplit(requests.slice(0, half), run, next))) {
    giveUp(rest, run, failed.error);
    return false;
  }
  return writeOrSplit(rest, run, next);
}

/**
 * Why a write did not happen, with the last error: the database refused its data, it kept
 * failing (or failed in a way no retry passes), or the budget or the time ran out before a try.
 */
interface WriteFailure {
  error: unknown;
  reason: 'refused' | 'failing' | 'no room';
}

/** Tries while what failed may pass and time and budget allow; undefined once written. */
async function writeWithRetries(
  requests: readonly SettleRequest[],
  run: DrainRun,
  part: Part,
): Promise<WriteFailure | undefined> {
  const { settings, report } = run;
  let lastError = part.error;
  for (let tryNumber = 1; tryNumber <= SETTLE_TRIES; tryNumber++) {
    if (tryNumber > 1) {
      if (!hasRoom(run)) return { error: lastError, reason: 'failing' };
      await pause(Math.min(SETTLE_RETRY_WAIT_MS * 4 ** (tryNumber - 2), roomMs(run)));
    }
    // A paid first try may go; any other needs free budget (looked at again after the pause:
    // sends may have spent it meanwhile) and time for its round trip.
    if ((tryNumber > 1 || !part.paid) && !hasRoom(run)) {
      return { error: lastError, reason: tryNumber > 1 ? 'failing' : 'no room' };
    }
    report.roundTrips += 1;
    report.settles += 1;
    const endSpan = run.trace?.settle(requests.length);
    try {
      const { stale, destinations } = await settings.store.settle(requests, settings.clock.now(), {
        health: settings.destinationHealth,
      });
      endSpan?.();
      tally(requests, new Set(stale), report, settings.logger);
      settings.logger.debug('outcomes settled', { outcomes: requests.length });
      if (destinations !== undefined) await announce(destinations, settings);
      return undefined;
    } catch (error) {
      endSpan?.(error);
      lastError = error;
      const verdict = againVerdict(error);
      settings.logger.warn('settle failed', {
        tryNumber,
        outcomes: requests.length,
        verdict,
        error: describeError(error),
      });
      if (verdict === 'refused') return { error, reason: 'refused' };
      if (verdict === 'fails again') return { error, reason: 'failing' };
    }
  }
  return { error: lastError, reason: 'failing' };
}

/** Ms left before the deadline beside one settle's round trip. */
function roomMs(run: DrainRun): number {
  return run.timeLeftMs() - run.settings.roundTripReserveMs;
}

/** Whether one more write fits: time for its round trip, and a subrequest to spare. */
function hasRoom(run: DrainRun): boolean {
  return roomMs(run) > 0 && budgetLeft(run) >= 1;
}

/**
 * What a failed write's error says about making it again:
 *
 * - `may pass`: the drivers mark such errors `retryable` by SQLSTATE or network code (a lost
 *   connection, a restart, a serialization failure: src/drivers/postgres-errors.ts). An error
 *   with no mark comes from a store of another kind and is tried again too: it may be a lost
 *   connection.
 * - `refused`: not retryable, and the database refused the data of the statement (SQLSTATE
 *   class 22, data exception, such as a NUL in a text; or 23, integrity constraint violation,
 *   such as a CHECK): the same write fails again, but one outcome's data may be all that fails.
 * - `fails again`: anything else marked not retryable (a missing table, a permission, a client
 *   already closed): the same write fails again, and so would any part of it.
 */
type AgainVerdict = 'may pass' | 'refused' | 'fails again';

function againVerdict(error: unknown): AgainVerdict {
  if (typeof error !== 'object' || error === null || !('retryable' in error)) return 'may pass';
  if (error.retryable === true) return 'may pass';
  const code = 'code' in error && typeof error.code === 'string' ? error.code : '';
  return REFUSED_DATA_CLASSES.has(code.slice(0, 2)) ? 'refused' : 'fails again';
}

/** SQLSTATE classes (the standard's, so any SQL database's) for data a statement could not take. */
const REFUSED_DATA_CLASSES: ReadonlySet<string> = new Set(['22', '23']);

/**
 * The one outcome of a group the store refused for good. A retry or a dead letter is written
 * again with a plain error text in place of its own: its text is what a store most likely cannot
 * take (bytes from a receiver), and the message then goes on as it would have, its own text in
 * the drain's log. A delivery or a release carries no text; if the store refuses one, or the
 * plain text too, the outcome is logged and left to its lease: another drain takes the message
 * once the lease runs out (a delivered one goes out again, under the same key), and the one
 * after it once more, until its attempts run out and a claim sets it dead. Either way the run
 * goes on and does not fail: the trouble is this message's, not the database's.
 */
async function writeAlone(request: SettleRequest, run: DrainRun, error: unknown): Promise<boolean> {
  const { logger } = run.settings;
  const { message, settlement } = request;
  const fields = { id: message.id, key: message.key, outcome: settlement.outcome };
  const plain = plainSettlement(settlement, error);
  let refusal = error;
  if (plain !== undefined) {
    // With no budget or time left for it, the outcome is left to its lease as below.
    const failed = await writeWithRetries([{ message, settlement: plain }], run, {
      paid: false,
      error,
    });
    if (failed === undefined) {
      logger.error('outcome recorded with a plain error text: the store refused its own', {
        ...fields,
        refused: describeError(error),
        settlement,
      });
      return true;
    }
    if (failed.reason === 'failing') {
      giveUp([request], run, failed.error);
      return false;
    }
    refusal = failed.error;
  }
  logger.error(
    'outcome not recorded: the store refused it; its lease will run out and another drain take the message',
    { ...fields, error: describeError(refusal), settlement },
  );
  return true;
}

/** The outcome with a plain error text in place of its own; undefined when it has none. */
function plainSettlement(settlement: Settlement, error: unknown): Settlement | undefined {
  const code =
    typeof error === 'object' && error !== null && 'code' in error
      ? ` (${String(error.code)})`
      : '';
  const text = `the store refused this attempt's error text${code}; the drain logged it`;
  // The attempt's facts stay: attemptFacts made them storable already.
  if (settlement.outcome === 'retry') return retry(settlement.at, text, settlement.attempt);
  if (settlement.outcome === 'dead') return dead(text, settlement.attempt);
  return undefined;
}

/** The run fails with the first outcomes it could not record; each such group is logged. */
function giveUp(requests: readonly SettleRequest[], run: DrainRun, error: unknown): void {
  run.settings.logger.warn('outcomes not recorded; their leases will run out', {
    outcomes: requests.length,
    error: describeError(error),
  });
  run.failure ??= {
    error: new OutboxError(
      'OUTBOX_DATABASE',
      `could not record the outcomes of ${requests.length} messages; their leases will expire and another drain will take them`,
      { cause: error },
    ),
  };
  notify(run);
}

function pause(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** The report's count for each recorded outcome. */
const REPORTED_AS = {
  delivered: 'delivered',
  retry: 'retried',
  dead: 'dead',
  release: 'released',
} as const satisfies Record<Settlement['outcome'], keyof DrainReport>;

function tally(
  requests: readonly SettleRequest[],
  stale: ReadonlySet<string>,
  report: DrainReport,
  logger: Logger,
): void {
  for (const { message, settlement } of requests) {
    const { id } = message;
    if (stale.has(id)) {
      report.stale += 1;
      logger.warn('stale settle: another drain owns this message now', { id, settlement });
      continue;
    }
    report[REPORTED_AS[settlement.outcome]] += 1;
  }
}

/**
 * One JSON line per destination a settle paused or resumed, then the user's hook: the
 * notification that a receiver went down or came back, whichever drain saw it.
 */
async function announce(
  changes: readonly DestinationChange[],
  settings: DrainRun['settings'],
): Promise<void> {
  for (const change of changes) {
    if (change.change === 'paused') {
      settings.logger.warn('destination paused', {
        destination: change.destination,
        pausedBy: change.pausedBy,
        pausedUntil: change.pausedUntil?.toISOString(),
        failures: change.failures,
        lastError: change.lastError,
      });
    } else {
      settings.logger.info('destination resumed', { destination: change.destination });
    }
    if (settings.onDestinationChange === undefined) continue;
    try {
      await settings.onDestinationChange(change);
    } catch (error) {
      settings.logger.warn('onDestinationChange failed', {
        destination: change.destination,
        error: describeError(error),
      });
    }
  }
}
