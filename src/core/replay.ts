/**
 * Replay and redrive: dead messages back to pending, delivered ones sent again, chosen by a
 * {@link ReplaySelection}, in bounded batches at a set rate, each replay audited. One engine
 * behind the CLI (`outbox replay`), the admin API and the dashboard.
 *
 * A replayed message keeps its id and key: receivers deduplicate on the key, and the claim's
 * ordering rule (nothing earlier by id unfinished) keeps its place among its ordering key's
 * messages. It gets a fresh attempt budget (attempts 0, due now).
 */
import { ConfigurationError } from './errors.js';
import { type Clock, systemClock } from './ports.js';
import { checkReplaySelection, type ReplaySelection, selectionJson } from './replay-selection.js';

/** Where a walk over a selection stands: the store's own, opaque to everyone else. */
export type ReplayCursor = { readonly replayCursor: string };

/** A few of the matching messages, for the operator to check before replaying. */
export interface ReplaySampleMessage {
  id: string;
  key: string;
  kind: string;
  orderingKey: string | null;
  /** The first 200 characters. */
  lastError: string | null;
}

export type ReplayOutcome = 'running' | 'finished' | 'stopped' | 'failed';

/** One row of the audit: a replay or a dry run that matched anything. */
export interface ReplayAudit {
  id: string;
  requestedBy: string;
  startedAt: Date;
  finishedAt: Date | null;
  selection: Record<string, unknown>;
  dryRun: boolean;
  matched: number;
  replayed: number;
  /** `running` with nothing running: its process died mid-run; `replayed` is still exact. */
  outcome: ReplayOutcome;
}

/** What replays need of a store. Every call is one bounded statement. */
export interface ReplayStore {
  /** The start of a walk over the messages `selection` may match now; null when none can. */
  startReplayWalk(selection: ReplaySelection): Promise<ReplayCursor | null>;
  /** The matches in the next stretch of the walk, a few of them, and the cursor after it. */
  countReplayStep(
    selection: ReplaySelection,
    cursor: ReplayCursor,
    sampleSize: number,
  ): Promise<{ matched: number; sample: ReplaySampleMessage[]; next: ReplayCursor | null }>;
  /**
   * Replays at most `limit` matches in the next stretch of the walk, in id order, and adds them
   * to the audit row's count in the same statement. `lastId`: the last id replayed.
   */
  replayStep(
    selection: ReplaySelection,
    cursor: ReplayCursor,
    step: { now: Date; limit: number; auditId: string },
  ): Promise<{ replayed: number; lastId: string | null; next: ReplayCursor | null }>;
  startReplayAudit(audit: Omit<ReplayAudit, 'id' | 'replayed'>): Promise<string>;
  finishReplayAudit(
    id: string,
    outcome: Exclude<ReplayOutcome, 'running'>,
    now: Date,
  ): Promise<void>;
  /** Newest first; `beforeId` pages on. */
  listReplayAudits(options?: { limit?: number; beforeId?: string }): Promise<ReplayAudit[]>;
}

/**
 * 500 messages per batch: each batch is one statement, so locks are held briefly and a stop
 * loses nothing; at this size a batch is a small share of the 1 s any statement may take.
 */
export const DEFAULT_REPLAY_BATCH_SIZE = 500;

/**
 * At most 2,000 per batch: batches of 5,000 took up to 0.8 s on a loaded 2-core machine
 * (docs/replay.md, "Measured"), too near the 1 s bound; 2,000 keeps every statement well under.
 */
export const MAX_REPLAY_BATCH_SIZE = 2000;

/**
 * 1,000 messages a second: a backlog of 100,000 returns in under two minutes, while the drains
 * that send it again see a steady trickle rather than the whole backlog due at one instant.
 */
export const DEFAULT_REPLAY_RATE_PER_SECOND = 1000;
export const MAX_REPLAY_RATE_PER_SECOND = 100_000;

/** Matching messages a dry run shows. */
export const REPLAY_SAMPLE_SIZE = 5;

export interface ReplayProgress {
  matched: number;
  replayed: number;
  batches: number;
  lastId: string | null;
  elapsedMs: number;
}

export interface ReplayOptions {
  store: ReplayStore;
  /** Checked again here ({@link checkReplaySelection}); a bad one throws `ValidationError`. */
  selection: ReplaySelection;
  /** Who asked, for the audit row (1 to 200 characters). */
  requestedBy: string;
  /** Count and sample only; still audited when anything matches. */
  dryRun?: boolean;
  /** Default {@link DEFAULT_REPLAY_RATE_PER_SECOND}. */
  ratePerSecond?: number;
  /** Default {@link DEFAULT_REPLAY_BATCH_SIZE}; never more than the rate. */
  batchSize?: number;
  /** Stop (outcome `stopped`) before a batch that would start after this many ms. */
  budgetMs?: number;
  /**
   * The most messages the caller agreed to replay (the count a confirmation showed): when more
   * match now, nothing is written and the outcome is `grew`, with the new count and sample.
   */
  matchedAtMost?: number;
  /** Aborting stops before the next batch; the batches done stay done. */
  signal?: AbortSignal;
  /** After each batch; the next batch waits for a returned promise. */
  onProgress?: (progress: ReplayProgress) => void | Promise<void>;
  clock?: Clock;
  /** Waits `ms` or until `signal` aborts. Default: a timer. */
  pause?: (ms: number, signal?: AbortSignal) => Promise<void>;
}

export interface ReplayReport {
  /** Null when nothing matched: then nothing was written, not even an audit row. */
  auditId: string | null;
  matched: number;
  sample: ReplaySampleMessage[];
  dryRun: boolean;
  replayed: number;
  batches: number;
  /** `empty`: nothing matched. `grew`: more matched than `matchedAtMost`; nothing written. */
  outcome: 'empty' | 'grew' | 'finished' | 'stopped';
  /** Why it stopped early. */
  stoppedBy?: 'signal' | 'budget';
  /** The last id replayed: pass it as `afterId` to go on after a stop. */
  lastId: string | null;
  durationMs: number;
}

/**
 * Counts the messages `selection` matches now, exactly, in bounded statements, with a few of
 * them. Writes nothing. A bad selection throws `ValidationError` naming the field.
 */
export async function countReplay(
  store: ReplayStore,
  given: ReplaySelection,
  sampleSize = REPLAY_SAMPLE_SIZE,
): Promise<{ matched: number; sample: ReplaySampleMessage[] }> {
  const selection = checkReplaySelection(given);
  return countFrom(store, selection, await store.startReplayWalk(selection), sampleSize);
}

async function countFrom(
  store: ReplayStore,
  selection: ReplaySelection,
  start: ReplayCursor | null,
  sampleSize: number,
): Promise<{ matched: number; sample: ReplaySampleMessage[] }> {
  let cursor = start;
  let matched = 0;
  const sample: ReplaySampleMessage[] = [];
  while (cursor !== null) {
    const step = await store.countReplayStep(selection, cursor, sampleSize - sample.length);
    matched += step.matched;
    sample.push(...step.sample.slice(0, sampleSize - sample.length));
    cursor = step.next;
  }
  return { matched, sample };
}

/**
 * Counts the selection, writes its audit row, then (unless a dry run) replays it batch by batch
 * at the rate given, raising the row's count in each batch's statement and closing the row as
 * `finished` or `stopped` (on `signal` or the budget). A selection that matches nothing writes
 * nothing. Only messages that match when the replay starts are taken (the walk ends at the ids
 * that existed then); one that matches later waits for the next replay.
 *
 * @example
 * const report = await replayMessages({
 *   store: store.replays(),
 *   selection: { state: 'dead', kinds: ['webhook'] },
 *   requestedBy: 'ada',
 * });
 */
export async function replayMessages(options: ReplayOptions): Promise<ReplayReport> {
  const { store } = options;
  const selection = checkReplaySelection(options.selection);
  const clock = options.clock ?? systemClock;
  const rate = options.ratePerSecond ?? DEFAULT_REPLAY_RATE_PER_SECOND;
  const batchSize = Math.min(options.batchSize ?? DEFAULT_REPLAY_BATCH_SIZE, rate);
  checkWhole('ratePerSecond', rate, 1, MAX_REPLAY_RATE_PER_SECOND);
  checkWhole('batchSize', batchSize, 1, MAX_REPLAY_BATCH_SIZE);
  if (options.requestedBy.length < 1 || options.requestedBy.length > 200) {
    throw new ConfigurationError('replayMessages: requestedBy must be 1 to 200 characters');
  }
  const pause = options.pause ?? pauseFor;
  const started = clock.now();
  const elapsed = () => clock.now().getTime() - started.getTime();
  const dryRun = options.dryRun ?? false;
  // One walk's bounds for the count and the replay, so both cover the same ids.
  const start = await store.startReplayWalk(selection);
  const { matched, sample } = await countFrom(store, selection, start, REPLAY_SAMPLE_SIZE);
  const report: ReplayReport = {
    auditId: null,
    matched,
    sample,
    dryRun,
    replayed: 0,
    batches: 0,
    outcome: 'empty',
    lastId: null,
    durationMs: 0,
  };
  if (matched === 0) return { ...report, durationMs: elapsed() };
  if (options.matchedAtMost !== undefined && matched > options.matchedAtMost) {
    return { ...report, outcome: 'grew', durationMs: elapsed() };
  }
  const auditId = await store.startReplayAudit({
    requestedBy: options.requestedBy,
    startedAt: started,
    finishedAt: dryRun ? clock.now() : null,
    selection: selectionJson(selection),
    dryRun,
    matched,
    outcome: dryRun ? 'finished' : 'running',
  });
  report.auditId = auditId;
  report.outcome = 'finished';
  if (dryRun) return { ...report, durationMs: elapsed() };
  try {
    let cursor = start;
    const deadline = options.budgetMs === undefined ? Infinity : options.budgetMs;
    while (cursor !== null) {
      // The rate: batch n may start once n batches' worth of messages fit the time so far.
      const waitMs = Math.max(0, (report.replayed * 1000) / rate - elapsed());
      if (elapsed() + waitMs >= deadline) {
        report.outcome = 'stopped';
        report.stoppedBy = 'budget';
        break;
      }
      if (waitMs > 0 && !options.signal?.aborted) await pause(waitMs, options.signal);
      if (options.signal?.aborted) {
        report.outcome = 'stopped';
        report.stoppedBy = 'signal';
        break;
      }
      const step = await store.replayStep(selection, cursor, {
        now: clock.now(),
        limit: batchSize,
        auditId,
      });
      report.replayed += step.replayed;
      report.batches += 1;
      if (step.lastId !== null) report.lastId = step.lastId;
      cursor = step.next;
      await options.onProgress?.({
        matched,
        replayed: report.replayed,
        batches: report.batches,
        lastId: report.lastId,
        elapsedMs: elapsed(),
      });
    }
  } catch (error) {
    await store.finishReplayAudit(auditId, 'failed', clock.now()).catch(() => {});
    throw error;
  }
  await store.finishReplayAudit(auditId, report.outcome, clock.now());
  return { ...report, durationMs: elapsed() };
}

function checkWhole(name: string, value: number, min: number, max: number): void {
  if (!Number.isSafeInteger(value) || value < min || value > max) {
    throw new ConfigurationError(
      `replayMessages: ${name} must be a whole number from ${min} to ${max}`,
    );
  }
}

/** A timer that ends early when `signal` aborts. */
function pauseFor(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(done, ms);
    signal?.addEventListener('abort', done, { once: true });
    function done() {
      clearTimeout(timer);
      signal?.removeEventListener('abort', done);
      resolve();
    }
  });
}
