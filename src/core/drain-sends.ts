/**
 * A lane's send, single or in a batch: whether a claimed row may go now, the send itself bounded
 * by its timeout, and each outcome handed to the settle groups and to the next row of its run.
 */

import { budgetLeft } from './drain-budget.js';
import {
  type DrainRun,
  noteSendTime,
  noteStop,
  notify,
  type QueuedMessage,
  tellFollower,
} from './drain-run.js';
import type { StopReason } from './drain-settings.js';
import type { DrainRunTrace, EndSpan } from './drain-tracing.js';
import { isSubrequestBudgetError } from './errors.js';
import type { ClaimedMessage } from './outbox-store.js';
import {
  outcomeOf,
  type SendResult,
  type SendTimeouts,
  sendBatchWithTimeout,
  sendWithTimeout,
} from './send-outcome.js';
import type { BatchSender, SendContext, Sender } from './sender.js';
import type { SettleGroups } from './settle-groups.js';
import { release, type Settlement } from './settlement.js';

/** What every lane of one drain uses: one timer, one settle writer, one budget view. */
export interface LaneShared {
  timeouts: SendTimeouts;
  settles: SettleGroups;
  context: SendContext;
}

/**
 * Why a claimed row goes back unsent, if it does: a send starts only if its full timeout, its
 * group's wait and a settle fit before both its lease ends and the deadline, and (`request`:
 * the row's send is a request of its own, not a place in another row's batch) the budget has
 * room for it beside the settle writes still owed. So every send of a claim ends before the
 * write its lease forces (SettleGroups writes by the earliest lease end minus the round-trip
 * reserve), and that write, paid for by the claim (see writesOwed), takes all of its outcomes.
 */
export function reasonNotToSend(
  next: QueuedMessage,
  run: DrainRun,
  request = true,
): StopReason | 'lease' | undefined {
  const { settings, options } = run;
  const now = settings.clock.now().getTime();
  const reserve = settings.roundTripReserveMs + settings.settleGroupMs;
  if (options.signal?.aborted || run.failure) return 'aborted';
  if (request && (run.budgetRefused || budgetLeft(run) < 1)) return 'budget';
  if (run.timeLeftMs() - reserve < settings.sendTimeoutMs) return 'deadline';
  // Its claim's lease, not the drain, is what runs out (a row queued behind slow sends, or late
  // in its key's run): it goes back for a later claim, and the drain goes on.
  if (next.lease.endsAt - now - reserve < settings.sendTimeoutMs) return 'lease';
  return undefined;
}

/**
 * The rows a lane sends with `first`, a row of a batch sender's kind it has just taken: first,
 * then queued rows of its kind that may go now, in queue order, up to the sender's `maxBatch`,
 * each taken off the queue and counted in flight. Rows waiting for the one ahead of them in
 * their run are not taken (so a batch never holds two of one ordering key), nor rows that would
 * go back unsent: the lane that takes them alone hands them back.
 */
export function batchFrom(run: DrainRun, first: QueuedMessage, maxBatch: number): QueuedMessage[] {
  const batch = [first];
  const { kind } = first.message;
  for (let index = 0; index < run.queue.length && batch.length < maxBatch; ) {
    const queued = run.queue[index]!;
    const joins =
      queued.message.kind === kind &&
      queued.turn !== 'ahead' &&
      queued.turn !== 'drop' &&
      reasonNotToSend(queued, run, false) === undefined;
    if (!joins) {
      index++;
      continue;
    }
    run.queue.splice(index, 1);
    run.inFlight += 1;
    batch.push(queued);
  }
  return batch;
}

/** Sends one row taken by a lane (counted as a send and in flight); records its outcome. */
export async function sendOne(
  run: DrainRun,
  { timeouts, settles, context }: LaneShared,
  next: QueuedMessage,
  sender: Sender,
): Promise<void> {
  // The attempt's duration by the monotonic clock: a clock step mid-send does not make a
  // send take minutes, or less than nothing.
  const sendStartedAt = performance.now();
  if (run.trace === undefined) {
    const result = await sendWithTimeout(next.message, sender, context, timeouts);
    return sent(run, settles, next, result, performance.now() - sendStartedAt);
  }
  const [message, endSpan] = traced(run.trace, next.message);
  const result = await sendWithTimeout(message, sender, context, timeouts);
  endSpan(result.failed ? result.error : undefined);
  sent(run, settles, next, result, performance.now() - sendStartedAt);
}

/** A single send's end: its time noted, its outcome recorded, the lanes told. */
function sent(
  run: DrainRun,
  settles: SettleGroups,
  next: QueuedMessage,
  result: SendResult,
  durationMs: number,
): void {
  noteSendTime(run, durationMs);
  run.inFlight -= 1;
  recordOutcome(run, settles, next, result, durationMs);
  notify(run);
}

/**
 * The message as its sender gets it, and the end of its send span, when the drain traces: the
 * receiver gets the send span's context instead of the enqueue's, so its work is a child of
 * the send.
 */
function traced(trace: DrainRunTrace, message: ClaimedMessage): [ClaimedMessage, EndSpan] {
  const { traceContext, end } = trace.send({
    key: message.key,
    kind: message.kind,
    attempt: message.attempts,
    traceContext: message.traceContext,
  });
  return [traceContext ? { ...message, traceContext } : message, end];
}

/**
 * Sends a batch taken by a lane in one call (counted as one send; its rows in flight), and
 * records each row's outcome.
 */
export async function sendBatch(
  run: DrainRun,
  { timeouts, settles, context }: LaneShared,
  batch: readonly QueuedMessage[],
  sender: BatchSender,
): Promise<void> {
  const sendStartedAt = performance.now();
  // With a tracer, a span per message, each in its own message's trace, ended by its result.
  const { trace } = run;
  const spans = trace && batch.map((queued) => traced(trace, queued.message));
  const results = await sendBatchWithTimeout(
    spans ? spans.map(([message]) => message) : batch.map((queued) => queued.message),
    sender,
    context,
    timeouts,
  );
  for (const [index, [, endSpan]] of (spans ?? []).entries()) {
    const result = results[index]!;
    endSpan(result.failed ? result.error : undefined);
  }
  const durationMs = performance.now() - sendStartedAt;
  noteSendTime(run, durationMs);
  run.inFlight -= batch.length;
  for (const [index, queued] of batch.entries()) {
    recordOutcome(run, settles, queued, results[index]!, durationMs);
  }
  notify(run);
}

/** A send's result as the settlement to record, told to the next row of its run. */
function recordOutcome(
  run: DrainRun,
  settles: SettleGroups,
  queued: QueuedMessage,
  result: SendResult,
  durationMs: number,
): void {
  const { settings } = run;
  let settlement: Settlement;
  if (result.failed && isSubrequestBudgetError(result.error)) {
    // Refused before the request was made: nothing went out, so no attempt is spent.
    run.budgetRefused = true;
    noteStop(run, 'budget');
    settlement = release(settings.clock.now());
  } else {
    settlement = outcomeOf(queued.message, result, settings, durationMs);
  }
  tellFollower(run, queued, settlement.outcome === 'delivered');
  settles.add(queued, settlement);
}
