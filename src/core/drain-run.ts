/**
 * The state one drain carries between its claims, lanes and settle groups, and how it queues
 * the runs of ordering keys it claims (the budget arithmetic over this state: drain-budget.ts).
 */

import type { DrainOptions, DrainReport, StopReason } from './drain-settings.js';
import type { DrainRunTrace } from './drain-tracing.js';
import type { ClaimedMessage, HeldRun } from './outbox-store.js';
import type { Settings } from './resolved-settings.js';

/**
 * One claim's rows, as the settle groups and the budget see them: when their lease runs out,
 * and how many have no outcome in a settle write yet. Under a budget each claim keeps one write
 * free while any of its rows waits for one: the write its lease may force before the drain ends.
 */
export interface ClaimLease {
  /** When the claim's lease runs out (ms since the epoch, on the drain's clock). */
  endsAt: number;
  /** Its rows whose outcome has not gone into a settle write: queued, sending or waiting. */
  unsettled: number;
}

/** A claimed row waiting for a lane, with what proves and bounds its ownership. */
export interface QueuedMessage {
  message: ClaimedMessage;
  claimToken: string;
  /** The claim it came with: its lease end, and its rows still to be written. */
  lease: ClaimLease;
  /**
   * A follower in its ordering key's run (the claim took its key's head and the rows right
   * behind it): 'ahead' while the row before it has no outcome, then 'go' once that one was
   * delivered, or 'drop' when it was not. A lane takes it only then, and a dropped one goes back
   * released, uncounted, so nothing passes a message that will be retried.
   */
  turn?: 'ahead' | 'go' | 'drop';
  /** The next row of its run, told this one's outcome (see {@link tellFollower}). */
  follower?: QueuedMessage;
  /** What became of it, once known: delivered, or not (failed, released, dropped). */
  outcome?: 'delivered' | 'not';
}

/**
 * An ordering key's run this drain holds: claimed as one run from the key's head, or as runs
 * that continue each other (ClaimedMessage.behind), every row sent only after the one before
 * it was delivered. The next claim may continue it behind its last row (ClaimRequest.holding).
 */
interface HeldKeyRun {
  /** The id of its first row, the key's head when it was claimed. */
  firstId: string;
  /** Its last row so far. */
  last: QueuedMessage;
  /**
   * How many claims have started since its last row's outcome went into a settle write: the
   * first of them no longer offers to continue it (once the write is in, the key's next row is a
   * head a run starts at), and the one after forgets it. In between, a claim on the wire may
   * still come back with a run behind it, which goes at once.
   */
  claimsSinceWritten?: number;
}

/**
 * Queues a claim's rows in the order the claim gave them, each of an ordering key behind the
 * one before it with that key (see QueuedMessage.turn). A run that continues one this drain
 * holds goes behind that run's last row: at once if that row was delivered, dropped (released
 * unsent) if it was not, or if the drain holds no such row any more.
 */
export function enqueueClaimed(run: DrainRun, rows: readonly QueuedMessage[]): void {
  const firstOfKey = new Map<string, QueuedMessage>();
  const lastOfKey = new Map<string, QueuedMessage>();
  for (const queued of rows) {
    const key = queued.message.orderingKey;
    if (key !== null) {
      if (!firstOfKey.has(key)) firstOfKey.set(key, queued);
      const before = lastOfKey.get(key) ?? heldRunBehind(run, queued);
      if (before) {
        before.follower = queued;
        queued.turn =
          before.outcome === undefined ? 'ahead' : before.outcome === 'delivered' ? 'go' : 'drop';
      }
      lastOfKey.set(key, queued);
    }
    run.queue.push(queued);
  }
  for (const [key, last] of lastOfKey) {
    const first = firstOfKey.get(key)!;
    // A run dropped as it came continues nothing the drain holds.
    if (first.turn === 'drop') continue;
    const held = run.heldRuns.get(key);
    if (held && first.message.behind !== undefined) {
      held.last = last;
      held.claimsSinceWritten = undefined;
    } else {
      run.heldRuns.set(key, { firstId: first.message.id, last });
    }
  }
}

/**
 * The row a continuing run's first row goes behind: the last row of the key's held run, when
 * it is the row the claim says. A run behind anything else is dropped (`turn` 'drop'); a row
 * that continues nothing returns undefined.
 */
function heldRunBehind(run: DrainRun, queued: QueuedMessage): QueuedMessage | undefined {
  const { behind, orderingKey } = queued.message;
  if (behind === undefined || orderingKey === null) return undefined;
  const last = run.heldRuns.get(orderingKey)?.last;
  if (last?.message.id === behind) return last;
  queued.turn = 'drop';
  return undefined;
}

/**
 * The runs of ordering keys a claim may continue (ClaimRequest.holding): those whose last row
 * is not known to have failed and whose lease has not run out. Others are forgotten.
 */
export function heldRuns(run: DrainRun, now: number): HeldRun[] {
  const holding: HeldRun[] = [];
  for (const [orderingKey, held] of run.heldRuns) {
    const { firstId, last } = held;
    if (held.claimsSinceWritten !== undefined) {
      held.claimsSinceWritten += 1;
      if (held.claimsSinceWritten > 1) run.heldRuns.delete(orderingKey);
      continue;
    }
    if (last.outcome === 'not' || last.lease.endsAt <= now) {
      run.heldRuns.delete(orderingKey);
      continue;
    }
    holding.push({ orderingKey, firstId, lastId: last.message.id, lastToken: last.claimToken });
  }
  return holding;
}

/**
 * The next queued row a lane may take: the first that is not waiting for the row ahead of it in
 * its run. Rows are taken in queue order otherwise, so a claim's rows go out oldest claim first.
 */
export function takeNext(run: DrainRun): QueuedMessage | undefined {
  const index = run.queue.findIndex((queued) => queued.turn !== 'ahead');
  return index < 0 ? undefined : run.queue.splice(index, 1)[0];
}

/**
 * Tells the next row of a run whether this one was delivered; only the first word counts, so a
 * lane may say `false` again on its way out whatever became of the row.
 */
export function tellFollower(run: DrainRun, queued: QueuedMessage, delivered: boolean): void {
  if (queued.outcome !== undefined) return;
  queued.outcome = delivered ? 'delivered' : 'not';
  const { follower } = queued;
  if (follower?.turn !== 'ahead') return;
  follower.turn = delivered ? 'go' : 'drop';
  notify(run);
}

export interface DrainRun {
  settings: Settings;
  options: DrainOptions;
  /** The run's spans, when the drain has a tracer. */
  trace: DrainRunTrace | undefined;
  report: DrainReport;
  timeLeftMs: () => number;
  /** Claimed rows not yet handed to a lane, oldest claim first. */
  queue: QueuedMessage[];
  /** Sends running right now. */
  inFlight: number;
  /** Claimed rows whose outcome has not yet gone into a settle write (queued, sending, waiting). */
  unsettled: number;
  /** Claims with such rows: each keeps one settle write free under a budget (see ClaimLease). */
  unsettledClaims: number;
  /** Claims on the wire right now: at most {@link MAX_CLAIMS_ON_WIRE}. */
  claimsOnWire: number;
  /** Rows the claims on the wire may bring: the sum of their limits. */
  rowsOnWire: number;
  /** The last claim came back full (or set rows aside): more is probably due. */
  moreDue: boolean;
  /**
   * Worth one more claim once everything is idle: the last claim to land found anything, or
   * rows claimed before it were not yet recorded when it started (their delivery may free an
   * ordering key's next message, which that claim could not see).
   */
  lastClaimFound: boolean;
  /** Claims are over for this drain: a stop reason held, or a failure. */
  claimsOver: boolean;
  /** Where the next due claim resumes: the last claim to land said (the store's, opaque here). */
  resumeAt: string | undefined;
  /**
   * The runs of ordering keys this drain holds, by key, until their last row's outcome goes
   * into a settle write (see heldRuns, noteWritten).
   */
  heldRuns: Map<string, HeldKeyRun>;
  /**
   * The last claim to land that could take keyed rows took an ordering key's run: the next
   * claims that can go one at a time, and only a claim without keyed rows goes beside one.
   */
  walkingKeys: boolean;
  /** Claims on the wire that may take rows with an ordering key (all but those beside a walk). */
  keyedClaimsOnWire: number;
  /**
   * Rows without an ordering key probably wait: the last claim of keys' runs took some, or the
   * last claim beside one came back full. Only then does a claim without keyed rows go beside.
   */
  unkeyedWaiting: boolean;
  /** When a claim next also takes probes of half-open destinations (ms, the drain's clock). */
  nextProbeAt: number;
  /** How long the last claim took, ms: the time the queue must last while the next one runs. */
  claimMs: number;
  /** A moving average of how long a send takes, ms. */
  sendMs: number;
  /** A sender asked for more than the budget had left: claim no more. */
  budgetRefused: boolean;
  /** The first reason the drain saw to stop; 'empty' when it ran out of work. */
  stopReason: StopReason | undefined;
  /** A claim or settle that failed for good: the drain sends no more and rethrows it. */
  failure: { error: unknown } | undefined;
  /** What senders see as `context.run`: this run's identity and nothing of its state. */
  identity: object;
  /** Lanes with nothing to do, waiting for a claim to land or a send to end. */
  waiting: (() => void)[];
  /**
   * 1 while the run owes the statement that records it for metrics (recordDrainRun in
   * drain-record.ts), 0 otherwise: kept free in the budget from the start, as a settle write
   * is, so a drain that spends its budget still records itself.
   */
  recordOwed: number;
}

export function newRun(
  settings: Settings,
  options: DrainOptions,
  timeLeftMs: () => number,
): DrainRun {
  const run: DrainRun = {
    settings,
    options,
    trace: options.tracer?.startRun(),
    timeLeftMs,
    queue: [],
    inFlight: 0,
    unsettled: 0,
    unsettledClaims: 0,
    claimsOnWire: 0,
    rowsOnWire: 0,
    moreDue: true,
    lastClaimFound: false,
    claimsOver: false,
    resumeAt: options.resume?.at,
    heldRuns: new Map(),
    walkingKeys: false,
    keyedClaimsOnWire: 0,
    unkeyedWaiting: false,
    nextProbeAt: Number.NEGATIVE_INFINITY,
    claimMs: 0,
    sendMs: 0,
    budgetRefused: false,
    stopReason: undefined,
    failure: undefined,
    identity: Object.freeze({}),
    waiting: [],
    recordOwed: settings.recordRun ? 1 : 0,
    report: {
      claimed: 0,
      delivered: 0,
      retried: 0,
      dead: 0,
      released: 0,
      stale: 0,
      batches: 0,
      settles: 0,
      roundTrips: 0,
      sends: 0,
      senderSubrequests: 0,
      durationMs: 0,
      stopReason: 'empty',
    },
  };
  return run;
}

/** Resolves the next time something changes: a claim lands, a send ends, a write fails. */
export function changed(run: DrainRun): Promise<void> {
  return new Promise((resolve) => run.waiting.push(resolve));
}

/** Wakes every waiting lane; costs nothing when none waits. */
export function notify(run: DrainRun): void {
  if (run.waiting.length === 0) return;
  const waiting = run.waiting;
  run.waiting = [];
  for (const wake of waiting) wake();
}

/**
 * Notes that one outcome of a claim went into a settle write; the claim's write is free again
 * once none of its rows is left. Returns whether that was its last. A held run whose last row
 * this is is offered to no more claims (see HeldKeyRun.claimsSinceWritten).
 */
export function noteWritten(run: DrainRun, queued: QueuedMessage): boolean {
  const { lease, message } = queued;
  const key = message.orderingKey;
  const held = key === null ? undefined : run.heldRuns.get(key);
  if (held?.last === queued) held.claimsSinceWritten = 0;
  run.unsettled -= 1;
  lease.unsettled -= 1;
  if (lease.unsettled > 0) return false;
  run.unsettledClaims -= 1;
  return true;
}

/** Records why the drain stops, keeping the first reason seen. */
export function noteStop(run: DrainRun, reason: StopReason): void {
  run.stopReason ??= reason;
}

/** How much the newest send counts in the moving average of send times. */
const SEND_TIME_WEIGHT = 0.2;

export function noteSendTime(run: DrainRun, ms: number): void {
  run.sendMs = run.sendMs === 0 ? ms : run.sendMs + SEND_TIME_WEIGHT * (ms - run.sendMs);
}

/**
 * Claim ahead when fewer rows wait than the lanes will take while a claim is on the wire: one
 * per lane, plus what the lanes get through in one claim's time at the current send time.
 * Slow sends and a near database need little; fast sends or a far database (Neon HTTP from
 * another region) need up to a batch. Never more than a batch beyond the lanes.
 */
export function lowWater(run: DrainRun): number {
  const { concurrency, batchSize, rowsPerSend } = run.settings;
  // A lane's send takes up to rowsPerSend rows (a batch sender's batch).
  const lanes = concurrency * rowsPerSend;
  if (run.sendMs === 0) return lanes;
  const duringClaim = Math.ceil((lanes * run.claimMs) / Math.max(run.sendMs, 0.01));
  return lanes + Math.min(batchSize, duringClaim);
}

/** The report travels with a drain's failure, so a caller sees what was done before it. */
export function withReport(error: unknown, report: DrainReport): unknown {
  if (typeof error === 'object' && error !== null) Object.assign(error, { report });
  return error;
}
