/**
 * Outcomes written in small groups as sends finish, rather than once per batch after its slowest
 * send: one write on the wire at a time; the next group is whatever finished meanwhile, written
 * once it is full or has waited long enough.
 */
import { budgetLeft, type DrainRun, notify } from './drain-run.js';
import type { DrainReport } from './drain-settings.js';
import { describeError, OutboxError } from './errors.js';
import {
  MAX_SETTLE_OUTCOMES,
  MAX_SETTLE_PAYLOAD_BYTES,
  type SettleRequest,
} from './outbox-store.js';
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

export class SettleGroups {
  readonly #run: DrainRun;
  #waiting: SettleRequest[] = [];
  /** When the first outcome of the waiting group arrived (performance.now()). */
  #firstAt = 0;
  #timer: ReturnType<typeof setTimeout> | undefined;
  #writing: Promise<void> | undefined;

  constructor(run: DrainRun) {
    this.#run = run;
  }

  /** Whether a write is on the wire (outcomes still waiting for one count in run.unsettled). */
  get writing(): boolean {
    return this.#writing !== undefined;
  }

  /** One outcome is known: it is written with its group. */
  add(request: SettleRequest): void {
    if (this.#waiting.length === 0) this.#firstAt = performance.now();
    this.#waiting.push(request);
    this.#consider();
  }

  /**
   * Writes everything still waiting, now, and resolves once no write is on the wire. Outcomes
   * added later are grouped as before.
   */
  async writeAll(): Promise<void> {
    clearTimeout(this.#timer);
    this.#timer = undefined;
    for (;;) {
      if (this.#writing) {
        await this.#writing;
        continue;
      }
      if (this.#waiting.length === 0) return;
      this.#start();
    }
  }

  /** Starts a write if the waiting group is due and affordable, or arms the timer for it. */
  #consider(): void {
    const run = this.#run;
    if (this.#writing || this.#waiting.length === 0 || run.failure) return;
    const { settings } = run;
    // Under a budget every write is a subrequest a send could have had: write by size only.
    const byTime = !Number.isFinite(settings.subrequestBudget);
    const age = performance.now() - this.#firstAt;
    if (
      this.#waiting.length >= settings.settleGroupSize ||
      (byTime && age >= settings.settleGroupMs)
    ) {
      // A write that leaves claimed rows behind must leave the last write's subrequest free.
      const leavesRows = run.unsettled > this.#waiting.length || run.claimsOnWire > 0;
      if (!leavesRows || budgetLeft(run) >= 1) this.#start();
      return;
    }
    if (byTime && this.#timer === undefined) {
      this.#timer = setTimeout(() => {
        this.#timer = undefined;
        this.#consider();
      }, settings.settleGroupMs - age);
    }
  }

  #start(): void {
    clearTimeout(this.#timer);
    this.#timer = undefined;
    const taken = writable(this.#waiting);
    const group = taken === this.#waiting.length ? this.#waiting : this.#waiting.slice(0, taken);
    this.#waiting = taken === this.#waiting.length ? [] : this.#waiting.slice(taken);
    this.#run.unsettled -= group.length;
    this.#writing = writeGroup(group, this.#run)
      .catch((error: unknown) => {
        // Only a logger or clock that throws gets here: keep it for the drain to rethrow.
        this.#run.failure ??= { error };
      })
      .finally(() => {
        this.#writing = undefined;
        this.#consider();
      });
  }
}

/**
 * How many of the waiting outcomes, oldest first, one write takes: at most MAX_SETTLE_OUTCOMES,
 * and deliveries up to MAX_SETTLE_PAYLOAD_BYTES of payload (the one that passes it included).
 * What is left waits for the next write.
 */
function writable(waiting: readonly SettleRequest[]): number {
  const most = Math.min(waiting.length, MAX_SETTLE_OUTCOMES);
  let bytes = 0;
  for (let taken = 0; taken < most; taken++) {
    const { message, settlement } = waiting[taken]!;
    if (settlement.outcome !== 'delivered') continue;
    bytes += message.payloadBytes;
    if (bytes >= MAX_SETTLE_PAYLOAD_BYTES) return taken + 1;
  }
  return most;
}

/**
 * Records a group's outcomes in one statement. A failed write is tried again while time and
 * budget allow; if it still fails, the rows keep their lease and another drain takes them after
 * it: sent ones go out again with the same key, which is what the key is for. The failure is
 * kept on the run, which then sends no more and rethrows it.
 */
async function writeGroup(requests: readonly SettleRequest[], run: DrainRun): Promise<void> {
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
