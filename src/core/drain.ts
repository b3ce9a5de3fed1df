import {
  type DrainOptions,
  type DrainReport,
  deadlineReader,
  resolveSettings,
  type Settings,
  type StopReason,
} from './drain-settings.js';
import {
  describeError,
  isSubrequestBudgetError,
  OutboxError,
  SubrequestBudgetError,
} from './errors.js';
import type { ClaimedMessage, MessageRecord, SettleRequest } from './outbox-store.js';
import type { Logger } from './ports.js';
import { outcomeOf, sendWithTimeout } from './send-outcome.js';
import type { SendContext } from './sender.js';
import { release, type Settlement } from './settlement.js';

/** Attempts at writing a batch's outcomes before giving up (the lease then covers for us). */
const SETTLE_TRIES = 5;

/**
 * The wait before the second settle try, growing 4x per try (100 ms, 400 ms, 1.6 s, 6.4 s),
 * each cut to the time left before the deadline: a connection cut, a Neon reply lost or a
 * PostgreSQL restart passes in about a second, and a settle given up on means every sent
 * message of its batch goes out again after the lease.
 */
const SETTLE_RETRY_WAIT_MS = 100;

/**
 * Runs one bounded drain: claim due messages, send them, record every outcome, repeat until
 * nothing is due or the deadline or a budget says stop. Designed for a scheduled invocation:
 * no timers keep running after it returns, and it returns with every claimed row either
 * settled or released, so the next invocation never waits out a lease for work this one
 * abandoned.
 *
 * Guarantees: a message is sent only after a claim that committed, so two overlapping drains
 * never both send it while its lease lasts; every send starts only if it can finish (or time
 * out) and be settled before both the lease and the deadline; outcome writes carry the claim
 * token, so a late writer cannot overwrite a newer owner.
 *
 * @example
 * const report = await drainOnce({
 *   store: outbox.store(neonHttpExecutor(sql)),
 *   senders: { email: sesSender(config) },
 *   deadline: Date.now() + 25_000,
 *   subrequestBudget: 1000,
 * });
 */
export async function drainOnce(options: DrainOptions): Promise<DrainReport> {
  const settings = resolveSettings(options);
  const { clock, logger } = settings;
  const startedAt = clock.now().getTime();
  const run: DrainRun = {
    settings,
    options,
    timeLeftMs: deadlineReader(options.deadline, clock),
    owedSettles: 0,
    budgetRefused: false,
    identity: Object.freeze({}),
    report: {
      claimed: 0,
      delivered: 0,
      retried: 0,
      dead: 0,
      released: 0,
      stale: 0,
      batches: 0,
      roundTrips: 0,
      sends: 0,
      senderSubrequests: 0,
      durationMs: 0,
      stopReason: 'empty',
    },
  };
  const { report } = run;

  let prefetched: Promise<Batch> | undefined;
  try {
    for (;;) {
      let batch: Batch;
      if (prefetched) {
        batch = await prefetched;
        prefetched = undefined;
      } else {
        const stop = reasonToStop(run);
        if (stop) {
          report.stopReason = stop;
          break;
        }
        batch = await claimBatch(run);
      }
      if (batch.claimed.length === 0) {
        if (batch.exhausted.length === 0) {
          report.stopReason = 'empty';
          break;
        }
        continue;
      }
      const sending = sendBatch(batch, run);
      // A full batch suggests more is due: claim the next one while this one sends, so the
      // claim's round trip hides behind the sends. A short batch means the queue is drained.
      if (settings.prefetch && batch.claimed.length === batch.limit && !reasonToStop(run)) {
        prefetched = claimBatch(run);
        prefetched.catch(() => {}); // awaited next iteration; do not report it unhandled
      }
      await settleBatch(batch, await sending, run);
      logger.debug('batch settled', { batch: report.batches, claimed: batch.claimed.length });
    }
  } catch (error) {
    // Hand back a prefetched batch we will never send, so nobody waits out its lease.
    if (prefetched) await releaseUnsent(prefetched, run);
    throw error;
  }

  report.durationMs = clock.now().getTime() - startedAt;
  logger.info('drain finished', { ...report });
  return report;
}

/** The state one drain carries between claims, sends and settles. */
interface DrainRun {
  settings: Settings;
  options: DrainOptions;
  report: DrainReport;
  timeLeftMs: () => number;
  /** Settles still owed for claimed batches: budget reserved for them. */
  owedSettles: number;
  /** A sender asked for more than the budget had left: claim no more. */
  budgetRefused: boolean;
  /** What senders see as `context.run`: this run's identity and nothing of its state. */
  identity: object;
}

interface Batch {
  claimToken: string;
  claimedAt: Date;
  /** Rows asked for: a batch that came back full suggests more is due. */
  limit: number;
  claimed: ClaimedMessage[];
  exhausted: MessageRecord[];
}

/** Subrequests still free: spent ones and settles owed are taken. */
function budgetLeft(run: DrainRun): number {
  const { report } = run;
  const spent = report.roundTrips + report.sends + report.senderSubrequests;
  return run.settings.subrequestBudget - spent - run.owedSettles;
}

function reasonToStop(run: DrainRun): StopReason | undefined {
  const { settings, report } = run;
  if (run.options.signal?.aborted) return 'aborted';
  // One claim, at least one send, one settle.
  if (run.budgetRefused || settings.maxMessages - report.claimed <= 0 || budgetLeft(run) < 3)
    return 'budget';
  // A batch is worth claiming only if one send and both round trips fit.
  if (run.timeLeftMs() < 2 * settings.roundTripReserveMs + settings.sendTimeoutMs)
    return 'deadline';
  return undefined;
}

async function claimBatch(run: DrainRun): Promise<Batch> {
  const { settings, report } = run;
  const claimedAt = settings.clock.now();
  const claimToken = settings.newId();
  report.roundTrips += 1;
  report.batches += 1;
  run.owedSettles += 1;
  const limit = Math.max(
    1,
    Math.min(settings.batchSize, settings.maxMessages - report.claimed, budgetLeft(run)),
  );
  const { claimed, exhausted } = await settings.store.claim({
    now: claimedAt,
    claimToken,
    limit,
    leaseMs: settings.leaseMs,
    keys: run.options.keys,
    deadHeadBlocks: settings.deadHeadBlocks,
    kinds: settings.kinds,
  });
  if (claimed.length === 0) run.owedSettles -= 1;
  report.claimed += claimed.length;
  report.dead += exhausted.length;
  for (const message of exhausted) {
    settings.logger.warn('message dead: attempts exhausted by crashed drains', logFields(message));
  }
  return { claimToken, claimedAt, limit, claimed, exhausted };
}

/** Best effort on the way out of a failed drain: release a batch claimed but never sent. */
async function releaseUnsent(batch: Promise<Batch>, run: DrainRun): Promise<void> {
  try {
    const unsent = await batch;
    if (unsent.claimed.length === 0) return;
    const now = run.settings.clock.now();
    await settleBatch(
      unsent,
      unsent.claimed.map(() => release(now)),
      run,
    );
  } catch {
    // The lease covers us: another drain takes these rows once it passes.
  }
}

/**
 * Sends a batch with at most `concurrency` in flight. A message is sent only if its full send
 * timeout plus a settle fits before both the lease ends and the deadline, and the budget has room
 * for it beside every settle still owed; otherwise (and after an abort) it is released unsent.
 */
async function sendBatch(batch: Batch, run: DrainRun): Promise<Settlement[]> {
  const { settings, report, options } = run;
  const leaseEndsAt = batch.claimedAt.getTime() + settings.leaseMs;
  const outcomes: Settlement[] = new Array(batch.claimed.length);
  let next = 0;
  const worker = async () => {
    while (next < batch.claimed.length) {
      const index = next++;
      const message = batch.claimed[index]!;
      const now = settings.clock.now().getTime();
      const room = Math.min(run.timeLeftMs(), leaseEndsAt - now) - settings.roundTripReserveMs;
      if (
        options.signal?.aborted ||
        run.budgetRefused ||
        room < settings.sendTimeoutMs ||
        budgetLeft(run) < 1
      ) {
        outcomes[index] = release(settings.clock.now());
        continue;
      }
      report.sends += 1;
      const error = await sendWithTimeout(message, settings, sendContext(run));
      if (isSubrequestBudgetError(error)) {
        // Refused before the request was made: nothing went out, so no attempt is spent.
        run.budgetRefused = true;
        outcomes[index] = release(settings.clock.now());
        continue;
      }
      outcomes[index] = outcomeOf(message, error, settings);
    }
  };
  const workers = Math.min(settings.concurrency, batch.claimed.length);
  await Promise.all(Array.from({ length: workers }, worker));
  return outcomes;
}

/**
 * The budget as one send sees it: a request a sender reports is taken from what is free,
 * settles owed included, so a sender can never spend a settle's subrequest.
 */
function sendContext(run: DrainRun): SendContext {
  return {
    run: run.identity,
    spend(subrequests, what) {
      if (!Number.isInteger(subrequests) || subrequests < 0) {
        throw new RangeError(`spend: subrequests must be a whole number >= 0, got ${subrequests}`);
      }
      const left = budgetLeft(run);
      if (subrequests > left) {
        throw new SubrequestBudgetError(
          `${what} needs ${subrequests} subrequests and the drain's budget has ${left} left; the message goes back unsent`,
        );
      }
      run.report.senderSubrequests += subrequests;
    },
  };
}

/**
 * Records every outcome of a batch in one statement. A failed write is tried again while time
 * and budget allow; if it still fails, the rows keep their lease and another drain takes them
 * after it: sent ones go out again with the same key, which is what the key is for.
 */
async function settleBatch(
  batch: Pick<Batch, 'claimed' | 'claimToken'>,
  outcomes: readonly Settlement[],
  run: DrainRun,
): Promise<void> {
  const { settings, report } = run;
  const requests: SettleRequest[] = batch.claimed.map((message, index) => ({
    id: message.id,
    claimToken: batch.claimToken,
    settlement: outcomes[index]!,
  }));
  // The reserved round trip is spent by the first try; further tries need free budget.
  run.owedSettles -= 1;
  let lastError: unknown;
  for (let tryNumber = 1; tryNumber <= SETTLE_TRIES; tryNumber++) {
    if (tryNumber > 1) {
      if (budgetLeft(run) < 1) break;
      const room = run.timeLeftMs() - settings.roundTripReserveMs;
      if (room <= 0) break;
      await pause(Math.min(SETTLE_RETRY_WAIT_MS * 4 ** (tryNumber - 2), room));
    }
    report.roundTrips += 1;
    try {
      const { stale } = await settings.store.settle(requests, settings.clock.now());
      tally(requests, new Set(stale), report, settings.logger);
      return;
    } catch (error) {
      lastError = error;
      settings.logger.warn('settle failed', { tryNumber, error: describeError(error) });
    }
  }
  throw Object.assign(
    new OutboxError(
      'OUTBOX_DATABASE',
      `could not record the outcomes of ${requests.length} messages; their leases will expire and another drain will take them`,
      { cause: lastError },
    ),
    { report },
  );
}

function pause(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

function tally(
  requests: readonly SettleRequest[],
  stale: ReadonlySet<string>,
  report: DrainReport,
  logger: Logger,
): void {
  for (const { id, settlement } of requests) {
    if (stale.has(id)) {
      report.stale += 1;
      logger.warn('stale settle: another drain owns this message now', { id, settlement });
      continue;
    }
    switch (settlement.outcome) {
      case 'delivered':
        report.delivered += 1;
        break;
      case 'retry':
        report.retried += 1;
        break;
      case 'dead':
        report.dead += 1;
        break;
      case 'release':
        report.released += 1;
        break;
    }
  }
}

function logFields(message: { id: string; key: string; kind: string; attempts: number }) {
  return { id: message.id, key: message.key, kind: message.kind, attempts: message.attempts };
}

export {
  DEFAULT_BATCH_SIZE,
  DEFAULT_CONCURRENCY,
  DEFAULT_LEASE_MS,
  DEFAULT_PREFETCH,
  DEFAULT_ROUND_TRIP_RESERVE_MS,
  DEFAULT_SEND_TIMEOUT_MS,
  type DrainOptions,
  type DrainReport,
  MAX_BATCH_SIZE,
  MAX_CONCURRENCY,
  type StopReason,
} from './drain-settings.js';
