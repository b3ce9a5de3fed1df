/**
 * Writing one group of outcomes, tried again while time and budget allow.
 */
import { budgetLeft, type DrainRun, notify } from './drain-run.js';
import type { DrainReport } from './drain-settings.js';
import { describeError, OutboxError } from './errors.js';
import type { SettleRequest } from './outbox-store.js';
import type { Logger } from './ports.js';
import type { Settlement } from './settlement.js';

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
 * Records a group's outcomes in one statement. A failed write is tried again while time and
 * budget allow; if it still fails, the rows keep their lease and another drain takes them after
 * it: sent ones go out again with the same key, which is what the key is for. The failure is
 * kept on the run, which then sends no more and rethrows it.
 */
export async function writeGroup(requests: readonly SettleRequest[], run: DrainRun): Promise<void> {
  const { settings, report } = run;
  let lastError: unknown;
  for (let tryNumber = 1; tryNumber <= SETTLE_TRIES; tryNumber++) {
    // The first try is paid for (budgetLeft keeps a settle free); further tries need free budget.
    if (tryNumber > 1) {
      if (budgetLeft(run) < 1) break;
      const room = run.timeLeftMs() - settings.roundTripReserveMs;
      if (room <= 0) break;
      await pause(Math.min(SETTLE_RETRY_WAIT_MS * 4 ** (tryNumber - 2), room));
    }
    report.roundTrips += 1;
    report.settles += 1;
    try {
      const { stale } = await settings.store.settle(requests, settings.clock.now());
      tally(requests, new Set(stale), report, settings.logger);
      settings.logger.debug('outcomes settled', { outcomes: requests.length });
      return;
    } catch (error) {
      lastError = error;
      settings.logger.warn('settle failed', { tryNumber, error: describeError(error) });
    }
  }
  run.failure ??= {
    error: new OutboxError(
      'OUTBOX_DATABASE',
      `could not record the outcomes of ${requests.length} messages; their leases will expire and another drain will take them`,
      { cause: lastError },
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
