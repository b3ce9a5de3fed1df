/**
 * Outcomes written in small groups as sends finish, rather than once per batch after its slowest
 * send: one write on the wire at a time; the next group is whatever finished meanwhile, written
 * once it is full, has waited long enough, or its earliest lease is about to end.
 */

import { budgetLeft } from './drain-budget.js';
import { type ClaimLease, type DrainRun, noteWritten, type QueuedMessage } from './drain-run.js';
import type { OutboxStore, SettleRequest } from './outbox-store.js';
import { writeGroup } from './settle-writes.js';
import type { Settlement } from './settlement.js';

/**
 * The longest timer Node and workerd arm as asked (2^31 - 1 ms, about 24.8 days); a longer one
 * fires at once. A lease end further away is looked at again then.
 */
const MAX_TIMER_MS = 2 ** 31 - 1;

/** One outcome waiting for its write, with the claim it came with: its lease bounds the wait. */
interface WaitingOutcome {
  request: SettleRequest;
  lease: ClaimLease;
  queued: QueuedMessage;
}

/**
 * When the waiting outcomes are written:
 *
 * - **Before the earliest of their leases ends**, less a round trip (`roundTripReserveMs`), with
 *   or without a budget: past it another drain may claim the row and send it again. Every send
 *   of a claim ends before that moment (reasonNotToSend in drain.ts), so this write takes all of
 *   the claim's outcomes, and the claim's own settle write, kept free in the budget since the
 *   claim (writesOwed in drain-budget.ts), pays for it.
 * - Once `settleGroupSize` wait, or (with no budget) `settleGroupMs` after the first of them.
 *   Under a budget every write is a subrequest a send could have had, so groups are not written
 *   by age there.
 * - At the end of the drain and before its idle claim ({@link writeAll}).
 *
 * Under a budget a write starts only if it is paid for: it takes some claim's last outcomes, or
 * the budget has a subrequest to spare beside the writes still owed.
 */
export class SettleGroups {
  readonly #run: DrainRun;
  /** Earliest lease end first: a write takes the outcomes whose leases end soonest. */
  #waiting: WaitingOutcome[] = [];
  /** When the first outcome of the waiting group arrived (performance.now()). */
  #firstAt = 0;
  #timer: ReturnType<typeof setTimeout> | undefined;
  /** When the armed timer fires (performance.now()). */
  #timerAt = Number.POSITIVE_INFINITY;
  #writing: Promise<void> | undefined;

  constructor(run: DrainRun) {
    this.#run = run;
  }

  /** Whether a write is on the wire (outcomes still waiting for one count in run.unsettled). */
  get writing(): boolean {
    return this.#writing !== undefined;
  }

  /** One claimed row's outcome is known: it is written with its group, before its lease ends. */
  add(queued: QueuedMessage, settlement: Settlement): void {
    const { lease } = queued;
    const request = { message: queued.message, settlement };
    const waiting = this.#waiting;
    if (waiting.length === 0) this.#firstAt = performance.now();
    // Claims land in lease order nearly always: this is an append but for a claim that landed
    // after a later one, or a row released long after its claim.
    let index = waiting.length;
    while (index > 0 && waiting[index - 1]!.lease.endsAt > lease.endsAt) index--;
    waiting.splice(index, 0, { request, lease, queued });
    this.#consider();
  }

  /**
   * Writes everything still waiting, now, and resolves once no write is on the wire, with no
   * timer armed. Outcomes added later are grouped as before.
   */
  async writeAll(): Promise<void> {
    this.#disarm();
    for (;;) {
      if (this.#writing) {
        await this.#writing;
        continue;
      }
      if (this.#waiting.length === 0) return;
      this.#start(writable(this.#run.settings.store, this.#waiting));
    }
  }

  /** Starts a write if the waiting group is due and paid for, or arms the timer for it. */
  #consider(): void {
    const run = this.#run;
    if (this.#writing || this.#waiting.length === 0 || run.failure) return;
    const { settings } = run;
    const byAge = !Number.isFinite(settings.subrequestBudget);
    const waitMs = Math.min(
      this.#waiting[0]!.lease.endsAt - settings.roundTripReserveMs - settings.clock.now().getTime(),
      byAge ? settings.settleGroupMs - (performance.now() - this.#firstAt) : MAX_TIMER_MS,
    );
    const due = this.#waiting.length >= settings.settleGroupSize || waitMs <= 0;
    // Under a budget too short for a claim (its round trip, its write, a send) and a send per
    // other lane, a write that completes two claims is made at once: it frees the writes they
    // kept for sends and claims.
    const free = budgetLeft(run);
    const short = free < settings.concurrency + 2;
    if (due || short) {
      const taken = writable(settings.store, this.#waiting);
      const completed = short ? claimsCompleted(this.#waiting, taken) : 0;
      // Paid for: a subrequest to spare beside the writes owed, or the write takes some
      // claim's last outcomes and that claim's own write was kept free for it.
      if ((due && (free >= 1 || completed >= 1)) || completed >= 2) {
        this.#start(taken);
        return;
      }
    }
    // Due and not paid for: a later outcome (a claim's last) or a write's end looks again.
    if (!due) this.#arm(Math.min(waitMs, MAX_TIMER_MS));
  }

  #arm(waitMs: number): void {
    const at = performance.now() + waitMs;
    if (this.#timer !== undefined && this.#timerAt <= at) return;
    clearTimeout(this.#timer);
    this.#timerAt = at;
    this.#timer = setTimeout(() => {
      this.#timer = undefined;
      this.#timerAt = Number.POSITIVE_INFINITY;
      this.#consider();
    }, waitMs);
  }

  #disarm(): void {
    clearTimeout(this.#timer);
    this.#timer = undefined;
    this.#timerAt = Number.POSITIVE_INFINITY;
  }

  /** Writes the first `taken` waiting outcomes. */
  #start(taken: number): void {
    this.#disarm();
    const run = this.#run;
    const group = this.#waiting.splice(0, taken);
    for (const { queued } of group) noteWritten(run, queued);
    this.#writing = writeGroup(
      group.map(({ request }) => request),
      run,
    )
      .catch((error: unknown) => {
        // Only a logger or clock that throws gets here: keep it for the drain to rethrow.
        run.failure ??= { error };
      })
      .finally(() => {
        this.#writing = undefined;
        this.#consider();
      });
  }
}

/** How many claims have their last unwritten outcomes among the first `taken` waiting. */
function claimsCompleted(waiting: readonly WaitingOutcome[], taken: number): number {
  const inWrite = new Map<ClaimLease, number>();
  let completed = 0;
  for (let index = 0; index < taken; index++) {
    const { lease } = waiting[index]!;
    const count = (inWrite.get(lease) ?? 0) + 1;
    inWrite.set(lease, count);
    if (count === lease.unsettled) completed += 1;
  }
  return completed;
}

/**
 * How many of the waiting outcomes, earliest lease first, one write takes: as many as the
 * store's settle fits (OutboxStore.settleFits). What is left waits for the next write.
 */
function writable(store: OutboxStore, waiting: readonly WaitingOutcome[]): number {
  const fits = store.settleFits(waiting.map(({ request }) => request));
  return Math.max(1, Math.min(waiting.length, fits));
}
