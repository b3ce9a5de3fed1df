import { sendContext, sendsAffordable } from './drain-budget.js';
import { recordDrainRun } from './drain-record.js';
import {
  type ClaimLease,
  changed,
  type DrainRun,
  enqueueClaimed,
  heldRuns,
  lowWater,
  newRun,
  noteStop,
  notify,
  type QueuedMessage,
  takeNext,
  tellFollower,
  withReport,
} from './drain-run.js';
import { batchFrom, type LaneShared, reasonNotToSend, sendBatch, sendOne } from './drain-sends.js';
import {
  type DrainOptions,
  type DrainReport,
  MAX_CLAIMS_ON_WIRE,
  MIN_BUDGET_FOR_CLAIM_BESIDE,
  PROBE_INTERVAL_MS,
  type StopReason,
} from './drain-settings.js';
import type { ClaimResult, ExhaustedMessage } from './outbox-store.js';
import { deadlineReader, resolveSettings } from './resolved-settings.js';
import { SendTimeouts } from './send-outcome.js';
import { isBatchSender } from './sender.js';
import { SettleGroups } from './settle-groups.js';
import { release } from './settlement.js';

/**
 * Runs one bounded drain: claim due messages, send them, record every outcome, until nothing is
 * due or the deadline or a budget says stop. Designed for a scheduled invocation: no timers keep
 * running after it returns, and it returns with every claimed row either settled or released,
 * so the next invocation never waits out a lease for work this one abandoned.
 *
 * How it runs: `concurrency` lanes each take the next claimed row the moment they are free; the
 * next claim starts while fewer rows wait than the lanes will send during one claim's round
 * trip (`prefetch`), and a second one beside it only when sends outrun one claim per round trip
 * (`MAX_CLAIMS_ON_WIRE`); outcomes are written in small groups as sends finish
 * (`settleGroupSize`, `settleGroupMs`), and before the earliest of their leases ends, one write
 * on the wire at a time. No lane waits for another lane's send.
 *
 * Guarantees: a message is sent only after a claim that committed, so two overlapping drains
 * never both send it while its lease lasts; every send starts only if it can finish (or time
 * out), wait for its group and be settled before both the lease and the deadline, and its
 * outcome is written before its lease ends, with or without a subrequest budget; outcome
 * writes carry the claim token, so a late writer cannot overwrite a newer owner.
 *
 * @example
 * const report = await drainOnce({
 *   store: outbox.store(neonHttpExecutor(sql)),
 *   senders: { email: sesSender(config) },
 *   deadline: new Date(Date.now() + 25_000),
 *   subrequestBudget: 1000,
 * });
 */
export async function drainOnce(options: DrainOptions): Promise<DrainReport> {
  const settings = resolveSettings(options);
  const { clock, logger } = settings;
  const startedAt = clock.now().getTime();
  const run = newRun(settings, options, deadlineReader(options.deadline, clock));
  const { report } = run;
  const shared: LaneShared = {
    timeouts: new SendTimeouts(settings.sendTimeoutMs),
    settles: new SettleGroups(run),
    context: sendContext(run),
  };
  // A lane that throws (only a logger, clock or random source can make it) fails the run, so
  // the others stop and every outcome is still written: no timer outlives the drain.
  const lanes = Array.from({ length: settings.concurrency }, () =>
    lane(run, shared).catch((error: unknown) => {
      run.failure ??= { error };
      notify(run);
    }),
  );
  await Promise.all(lanes);
  shared.timeouts.stop();
  await shared.settles.writeAll();
  report.durationMs = clock.now().getTime() - startedAt;
  report.stopReason = run.stopReason ?? 'empty';
  await recordDrainRun(run);
  run.trace?.end(run.failure?.error);
  if (run.failure) throw withReport(run.failure.error, report);
  logger.info('drain finished', { ...report });
  return report;
}

/** One lane: sends the next claimed row (or batch), records its outcome, until the drain is done. */
async function lane(run: DrainRun, shared: LaneShared): Promise<void> {
  for (;;) {
    const batch = await nextToSend(run, shared.settles);
    if (!batch) return;
    const next = batch[0]!;
    const sender = run.settings.senders[next.message.kind]!;
    try {
      if (isBatchSender(sender)) await sendBatch(run, shared, batch, sender);
      else await sendOne(run, shared, next, sender);
    } finally {
      // Whatever became of them (a lane that throws included), the next of each run hears.
      for (const queued of batch) tellFollower(run, queued, false);
    }
  }
}

/**
 * The next claimed row to send, counted as a send (and in flight) the moment it is taken, so
 * the budget and the next claim see it at once; rows that may not be sent go back released. A
 * batch sender's row comes with the rows of its batch (batchFrom), taken at the same moment, so
 * lanes woken together do not split what one call could carry. Claims more as the queue runs
 * low. Undefined once nothing is queued, no claim is on the wire or worth making, and no send is
 * left that could lead to one.
 */
async function nextToSend(
  run: DrainRun,
  settles: SettleGroups,
): Promise<QueuedMessage[] | undefined> {
  const { settings } = run;
  for (;;) {
    const next = takeNext(run);
    if (next) {
      // A follower whose row ahead was not delivered goes back unsent (see QueuedMessage.turn).
      const why = next.turn === 'drop' ? 'behind' : reasonNotToSend(next, run);
      if (why) {
        if (why !== 'lease' && why !== 'behind') noteStop(run, why);
        tellFollower(run, next, false);
        const settlement = release(settings.clock.now());
        settles.add(next, settlement);
        continue;
      }
      run.report.sends += 1;
      run.inFlight += 1;
    }
    const batch = next && withBatch(run, next);
    claimIfLow(run, settles);
    if (batch) return batch;
    if (run.claimsOnWire === 0 && run.inFlight === 0) return undefined;
    await changed(run);
  }
}

/** `next`, and for a batch sender's kind the rows that go in its call with it (batchFrom). */
function withBatch(run: DrainRun, next: QueuedMessage): QueuedMessage[] {
  const sender = run.settings.senders[next.message.kind]!;
  return isBatchSender(sender) ? batchFrom(run, next, sender.maxBatch) : [next];
}

/**
 * Starts a claim if the queue is low and one is worth making: none is on the wire, or the one
 * on the wire cannot keep the lanes fed alone (see MAX_CLAIMS_ON_WIRE).
 */
function claimIfLow(run: DrainRun, settles: SettleGroups): void {
  const { settings } = run;
  if (run.claimsOver || run.claimsOnWire >= MAX_CLAIMS_ON_WIRE) return;
  // Claims of keys' runs go one at a time: beside one, only a claim without keyed rows.
  const unkeyedOnly = run.walkingKeys && run.keyedClaimsOnWire > 0;
  if (run.claimsOnWire > 0 && !(unkeyedOnly ? unkeyedBeside(run) : mayClaimBeside(run))) return;
  // What a claim on the wire may bring counts as waiting: a second claim starts only if the
  // lanes would run dry before the next claim lands even when the first comes back full.
  const waiting = run.queue.length + run.rowsOnWire;
  const low = settings.prefetch ? waiting < lowWater(run) : run.queue.length === 0;
  if (!low) return;
  // A short claim means nothing more was due then: claim once more only when all is idle (for
  // work that came due meanwhile, such as the next message of an ordering key whose head was
  // just sent), and stop at the first claim that finds nothing while every row claimed before
  // it was recorded. A claim after a cursor that comes back short has looked from the start of
  // the due order too (see claimStatement, src/store/claim-statements.ts).
  const idle = !run.moreDue;
  if (idle) {
    if (!run.lastClaimFound) run.claimsOver = true;
    if (!run.lastClaimFound || run.queue.length > 0 || run.inFlight > 0) return;
  }
  if (claimsStopped(run, false)) return;
  // Rows claimed and not yet recorded, or a claim on the wire: if this claim finds nothing, it
  // may only be because they still hold their ordering keys.
  const unrecorded = run.unsettled > 0 || settles.writing || run.claimsOnWire > 0;
  run.claimsOnWire += 1;
  if (!unkeyedOnly) run.keyedClaimsOnWire += 1;
  // Before the idle claim, write the outcomes still waiting: an ordering key's next message
  // becomes claimable only once its head's delivery is recorded.
  const claimed = idle
    ? settles.writeAll().then(() => claimUnlessStopped(run))
    : claim(run, unrecorded, unkeyedOnly);
  const landed = () => {
    run.claimsOnWire -= 1;
    if (!unkeyedOnly) run.keyedClaimsOnWire -= 1;
  };
  void claimed.then(
    () => {
      landed();
      notify(run);
    },
    (error: unknown) => {
      landed();
      run.failure ??= { error };
      run.claimsOver = true;
      notify(run);
    },
  );
}

/**
 * Claims of due rows (not a kick's keys) while the last claim to land came back full. Not
 * before one has landed: `moreDue` starts true only so that the first claim is made, and a
 * position kept from an earlier drain (DrainOptions.resume) says where to resume, not that this
 * drain started in a backlog. (The claims counted on the wire include the one being made.)
 */
function claimingBacklog(run: DrainRun): boolean {
  return run.moreDue && !run.options.keys && run.report.batches > run.claimsOnWire;
}

/**
 * Whether a second claim may join the one on the wire: only with claim ahead on, once a claim
 * has landed full, for due rows rather than a kick's keys, and under no subrequest budget
 * or a large one: the claim beside one that comes back short is a round trip wasted, which a
 * small budget would feel as a send forgone. Not beside a claim of ordering keys' runs (see
 * claimIfLow): two claims made before either lands start their walk of the keys at the same
 * place, and the second finds the first's runs locked and comes back short (over 1,000 keys,
 * every other claim beside came back empty, and a short claim makes the drain wait for its
 * outcomes).
 */
function mayClaimBeside(run: DrainRun): boolean {
  const { settings } = run;
  return (
    settings.prefetch &&
    claimingBacklog(run) &&
    settings.subrequestBudget >= MIN_BUDGET_FOR_CLAIM_BESIDE
  );
}

/**
 * Whether a claim without keyed rows (ClaimRequest.unkeyedOnly) may join the claim of keys' runs
 * on the wire: as mayClaimBeside says, while rows without a key wait. Runs go one claim at a
 * time, each behind the last one's rows (ClaimRequest.holding); a backlog's unkeyed rows need
 * not: over 10 keys of 250 with 2,500 unkeyed rows in turns, they otherwise went out at the
 * pace of the runs' claims.
 */
function unkeyedBeside(run: DrainRun): boolean {
  return run.unkeyedWaiting && mayClaimBeside(run);
}

/** A claim after a wait (counted on the wire): the budget or a failure may have changed meanwhile. */
async function claimUnlessStopped(run: DrainRun): Promise<void> {
  if (!claimsStopped(run, true)) await claim(run, false);
}

/**
 * Whether claims are over for this drain; the first time a reason holds, it is noted. `onWire`:
 * the claim in question is already counted in `claimsOnWire` (and so its settle write).
 */
function claimsStopped(run: DrainRun, onWire: boolean): boolean {
  const stop = reasonNotToClaim(run, onWire);
  if (!stop) return false;
  noteStop(run, stop);
  run.claimsOver = true;
  return true;
}

function reasonNotToClaim(run: DrainRun, onWire: boolean): StopReason | undefined {
  const { settings, report } = run;
  if (run.options.signal?.aborted || run.failure) return 'aborted';
  // Room for the claim itself and one send, beside the claim's own settle write, the writes
  // already owed and the rows already spoken for.
  if (
    run.budgetRefused ||
    settings.maxMessages - report.claimed - run.rowsOnWire <= 0 ||
    sendsAffordable(run) - (onWire ? 0 : 1) < 2
  )
    return 'budget';
  // A claim is worth making only if one send, its group's wait and both round trips fit.
  const needed = 2 * settings.roundTripReserveMs + settings.settleGroupMs + settings.sendTimeoutMs;
  if (run.timeLeftMs() < needed) return 'deadline';
  return undefined;
}

/**
 * `unrecorded`: rows claimed earlier were not all recorded as this claim started. `unkeyedOnly`:
 * a claim beside one of keys' runs (see unkeyedBeside), which takes no keyed rows and leaves the
 * drain's view of them (whether runs are being walked, more is due, the last claim found
 * anything) to the claims that take them.
 */
async function claim(run: DrainRun, unrecorded: boolean, unkeyedOnly = false): Promise<void> {
  const { settings, report } = run;
  const claimedAt = settings.clock.now();
  const claimToken = settings.newId();
  report.roundTrips += 1;
  report.batches += 1;
  const limit = Math.max(
    1,
    Math.min(
      settings.batchSize,
      settings.maxMessages - report.claimed - run.rowsOnWire,
      sendsAffordable(run) * settings.rowsPerSend,
    ),
  );
  // Probes of half-open destinations ride on a run's first claim and one every
  // PROBE_INTERVAL_MS after (or every first pause, when pauses are shorter): the claims
  // between need not pay for looking.
  const probe = run.options.keys === undefined && claimedAt.getTime() >= run.nextProbeAt;
  if (probe) {
    const { destinationHealth } = settings;
    run.nextProbeAt =
      claimedAt.getTime() +
      Math.min(
        PROBE_INTERVAL_MS,
        destinationHealth === false ? PROBE_INTERVAL_MS : destinationHealth.pauseMs,
      );
  }
  const startedAt = performance.now();
  run.rowsOnWire += limit;
  const endSpan = run.trace?.claim();
  let result: ClaimResult;
  try {
    result = await settings.store.claim({
      now: claimedAt,
      claimToken,
      limit,
      leaseMs: settings.leaseMs,
      keys: run.options.keys,
      deadHeadBlocks: settings.deadHeadBlocks,
      kinds: settings.kinds,
      resumeAt: run.resumeAt,
      backlog: claimingBacklog(run),
      probe,
      // A lane sends a key's run one row after another: a share of the batch per lane keeps
      // every lane busy when the claim spans as many keys as there are lanes.
      keyShare: Math.ceil(limit / settings.concurrency),
      holding: run.options.keys || unkeyedOnly ? undefined : heldRuns(run, claimedAt.getTime()),
      ...(unkeyedOnly ? { unkeyedOnly } : {}),
    });
    endSpan?.();
  } catch (error) {
    endSpan?.(error);
    throw error;
  } finally {
    run.rowsOnWire -= limit;
  }
  const { claimed, exhausted } = result;
  run.claimMs = performance.now() - startedAt;
  // With two claims on the wire, each resumes where the last to land before them left off, and
  // the one to land last says where the next resumes: it may have stopped earlier than the
  // other, by at most a batch, which the next claim steps over again.
  if (result.resumeAt !== undefined) {
    run.resumeAt = result.resumeAt;
    if (run.options.resume) run.options.resume.at = result.resumeAt;
  }
  report.claimed += claimed.length;
  report.dead += exhausted.length;
  const full = claimed.length >= limit || exhausted.length > 0;
  const found = claimed.length > 0 || exhausted.length > 0;
  if (unkeyedOnly) {
    run.unkeyedWaiting = full;
    if (full) run.moreDue = true;
    if (found) run.lastClaimFound = true;
  } else {
    run.walkingKeys = result.oneAtATime === true;
    run.unkeyedWaiting = claimed.some((message) => message.orderingKey === null);
    run.moreDue = (full && result.caughtUp !== true) || result.partial === true;
    run.lastClaimFound = found || unrecorded;
  }
  run.unsettled += claimed.length;
  if (claimed.length > 0) run.unsettledClaims += 1;
  const lease: ClaimLease = {
    endsAt: claimedAt.getTime() + settings.leaseMs,
    unsettled: claimed.length,
  };
  enqueueClaimed(
    run,
    claimed.map((message) => ({ message, claimToken, lease })),
  );
  for (const message of exhausted) {
    settings.logger.warn('message dead: attempts exhausted by crashed drains', logFields(message));
  }
}

function logFields(message: ExhaustedMessage) {
  return { id: message.id, key: message.key, kind: message.kind, attempts: message.attempts };
}
