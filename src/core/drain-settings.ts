/**
 * A drain's options: what callers may set, its report, and the defaults (each with why that
 * value). resolved-settings.ts fills the defaults in and refuses what cannot run.
 */
import type { DestinationChange, DestinationHealthPolicy } from './destination-health.js';
import type { DrainTracer } from './drain-tracing.js';
import type { OutboxStore } from './outbox-store.js';
import type { Clock, IdGenerator, Logger } from './ports.js';
import type { BackoffOptions } from './retry-policy.js';
import type { SenderRegistry } from './sender.js';

/** Why a drain returned. */
export type StopReason =
  /** Nothing left that is due, claimable and sendable by this drain. */
  | 'empty'
  /** Too little time left for one more send plus a settle. */
  | 'deadline'
  /** The message limit or the subrequest budget is spent. */
  | 'budget'
  /** The caller's AbortSignal fired (shutdown). */
  | 'aborted';

/** Where a drain's claims left off: the store's, opaque to all else (see DrainOptions.resume). */
export interface DrainResume {
  /** ClaimResult.resumeAt of the last due claim to land. */
  at?: string;
}

export interface DrainOptions {
  store: OutboxStore;
  /**
   * Spans for the run, each claim and settle, and each send (docs/tracing.md):
   * `drainTracer(api, tracer)` of `outbox-relay/opentelemetry`. Default none, and then the drain
   * does nothing for tracing at all.
   */
  tracer?: DrainTracer;
  /** A sender per kind. Kinds without one are not claimed by this drain. */
  senders: SenderRegistry;
  /**
   * When the invocation must be done: an absolute time, or a function returning the ms left
   * (Lambda's `context.getRemainingTimeInMillis`). Default: no deadline.
   */
  deadline?: Date | (() => number);
  /** Stop after claiming this many messages. Default: no limit. */
  maxMessages?: number;
  /**
   * Most subrequests this drain may make: SQL round trips, sends, and whatever senders report
   * through `SendContext.spend` (a secret read). Each is counted before it is made, and one
   * settle is kept free per claim whose rows still need one (the write its lease may force, or
   * the drain's last), so the drain never makes one more (Workers cap subrequests per
   * invocation: 50 on the free plan, 10,000 by default on paid). Under a budget, outcomes are
   * written in full groups, before the earliest of their leases ends, and at the end; not by
   * age. Default: no limit.
   */
  subrequestBudget?: number;
  /** Rows per claim. Default {@link DEFAULT_BATCH_SIZE}. */
  batchSize?: number;
  /** Sends in flight at once. Default {@link DEFAULT_CONCURRENCY}. */
  concurrency?: number;
  /** How long a claim holds its rows. Default {@link DEFAULT_LEASE_MS}. */
  leaseMs?: number;
  /** Time allowed per send; must leave room for a settle inside the lease. */
  sendTimeoutMs?: number;
  /** Time set aside for one SQL round trip (claim or settle). */
  roundTripReserveMs?: number;
  backoff?: BackoffOptions;
  /**
   * Whether a dead message blocks later messages with its ordering key until an operator
   * retries or discards it. Default true: order is the promise, so a gap must be a decision.
   */
  deadHeadBlocks?: boolean;
  /**
   * Claim ahead: start the next claim while rows still wait for lanes (one per lane, plus as
   * many as the lanes send in one claim's round trip, at most a batch more), so the claim's
   * round trip hides behind the sends; when sends outrun one claim per round trip, a second
   * claim runs beside it ({@link MAX_CLAIMS_ON_WIRE}). Off, a claim starts only once every
   * claimed row has been handed to a lane, one at a time. Default {@link DEFAULT_PREFETCH}.
   */
  prefetch?: boolean;
  /**
   * Outcomes settle in groups: a group is written once it holds this many outcomes, or
   * `settleGroupMs` after its first, one write at a time; and always before the earliest lease
   * of its rows ends, less `roundTripReserveMs`, or another drain could claim a row whose
   * outcome is still waiting and send it again. Default {@link DEFAULT_SETTLE_GROUP_SIZE}.
   */
  settleGroupSize?: number;
  /**
   * The longest an outcome waits for its group to fill before it is written. Under a finite
   * `subrequestBudget` groups are written by size and by lease only (and at the end), since
   * every write is a subrequest taken from sends. Default {@link DEFAULT_SETTLE_GROUP_MS}.
   *
   * Longer windows mean fewer, fuller writes: at 20 ms the server spent 30 to 45% less CPU per
   * message at 400 to 1,900 msg/s (docs/benchmarks.md, phase D), with no measurable change in
   * rate. The price: a crash can leave that many more outcomes unwritten, and an ordering key's
   * next message waits that much longer while the drain is busy with other work.
   */
  settleGroupMs?: number;
  /** Claim only these message keys: the after-commit kick. */
  keys?: readonly string[];
  /**
   * Where this drain's claims start, kept up to date as they land: pass the same object to the
   * next drain and it walks the ordering keys on from where this one stopped, instead of from
   * the first key. Runs that end before the walk comes round (a small subrequest budget, a
   * deadline) then serve every key in turn, not the first keys in key order over and over.
   * `createDrainer` keeps one per drainer, and the Workers and Lambda kits one per handler.
   * Default: a drain of its own, from the first key.
   */
  resume?: DrainResume;
  /**
   * Record this run for metrics at its end (its duration, and its failure's code), in one
   * statement counted against the subrequest budget and kept free in it from the start; see
   * `outbox_drain_duration_seconds` in docs/admin.md. Only with a store that keeps records
   * (`recordDrainRun`) and a budget of at least {@link MIN_BUDGET_TO_RECORD_RUN}. Default
   * false; `createDrainer` turns it on for every run but a kick's.
   */
  recordRun?: boolean;
  /** Stop claiming and sending; what is in flight finishes and everything is settled. */
  signal?: AbortSignal;
  clock?: Clock;
  newId?: IdGenerator;
  /** Jitter source in [0, 1). */
  random?: () => number;
  logger?: Logger;
  /**
   * When failures pause a destination (docs/destinations.md): after `failuresToPause` retryable
   * failures in a row (default 5), or at once when a receiver answers with Retry-After, its
   * messages wait, uncounted, for `pauseMs` (default 30 s, doubling each pause in a row up to
   * `maxPauseMs`, default 10 min), then one probe goes first. `false`: failures pause nothing
   * (an operator's pause still holds).
   */
  destinationHealth?: Partial<DestinationHealthPolicy> | false;
  /**
   * Called when a settle of this drain paused or resumed a destination, after it is logged
   * (`destination paused` / `destination resumed`, one JSON line each). Awaited in the drain's
   * settle path, so keep it short: post to a chat, page someone. A hook that throws is logged
   * and otherwise ignored.
   */
  onDestinationChange?: (change: DestinationChange) => void | Promise<void>;
}

/**
 * The drain settings a user chooses once for every drain they run, by name. `outbox.config.ts`'s
 * `drain`, `createDrainer` and the runtime kits' setup take exactly these fields, and they reach
 * `drainOnce` as set; the only change on the way is a time budget lowering `sendTimeoutMs` and
 * `roundTripReserveMs` to fit (`budgetedTimeouts`).
 */
export const DRAIN_TUNING_FIELDS = [
  'batchSize',
  'concurrency',
  'leaseMs',
  'sendTimeoutMs',
  'roundTripReserveMs',
  'backoff',
  'deadHeadBlocks',
  'prefetch',
  'settleGroupSize',
  'settleGroupMs',
  'destinationHealth',
] as const satisfies readonly (keyof DrainOptions)[];

/** The fields of {@link DRAIN_TUNING_FIELDS}, typed and documented as {@link DrainOptions} has them. */
export type DrainTuning = Pick<DrainOptions, (typeof DRAIN_TUNING_FIELDS)[number]>;

export interface DrainReport {
  /** Rows claimed for sending. */
  claimed: number;
  delivered: number;
  retried: number;
  /** Set aside: permanent failures, exhausted attempts (including at claim time). */
  dead: number;
  /** Claimed but not sent (deadline, budget, shutdown): handed back, due now, attempt uncounted. */
  released: number;
  /** Outcomes not recorded because another drain had re-claimed the row: left to that drain. */
  stale: number;
  /** Claim statements run. */
  batches: number;
  /** Settle statements run (groups of outcomes written), retries included. */
  settles: number;
  /** SQL statements run (claims and settles, and the run's record with `recordRun`). */
  roundTrips: number;
  /** Sender calls made. */
  sends: number;
  /** Subrequests senders reported beyond their sends (secret reads, token fetches). */
  senderSubrequests: number;
  durationMs: number;
  stopReason: StopReason;
}

/**
 * 100 rows per claim, on every runtime. Measured with 20 ms added to every SQL round trip (a
 * Worker reaching Neon in another region; docs/benchmarks.md, scenario 8), 10 in flight: with
 * instant sends batch 100 drained 3.3x faster than 25; with a 20 ms receiver every batch from
 * 25 to 500 delivered 367 to 384 msg/s (within spread). Larger batches gain only with instant
 * sends, while every row claimed and not yet sent waits out its lease if the drain dies. Under a
 * subrequest budget (Workers Free: 50) a claim never takes more rows than the budget can send
 * and settle, so the budget, not this default, sizes claims there.
 */
export const DEFAULT_BATCH_SIZE = 100;

/** 10 sends at once: enough to hide provider latency without tripping typical rate limits. */
export const DEFAULT_CONCURRENCY = 10;

/**
 * Two minutes: a claimed row may wait for a lane behind a batch or two of sends, then send and
 * wait for its settle; a row whose lease could run out first goes back unsent instead. If the
 * drain dies, this is how long its rows wait before another drain takes them.
 */
export const DEFAULT_LEASE_MS = 2 * 60 * 1000;

/** 15 s per send: well above a healthy provider's p99, well below the lease. */
export const DEFAULT_SEND_TIMEOUT_MS = 15_000;

/**
 * 2 s per SQL round trip: Neon answers in milliseconds when warm, but a compute waking from
 * suspend can take a second or more, and a settle that misses the deadline loses its outcomes.
 */
export const DEFAULT_ROUND_TRIP_RESERVE_MS = 2_000;

/**
 * On by default: with 20 ms per SQL round trip (Neon HTTP from a distant Worker), claiming ahead
 * keeps the lanes fed while the claim is on the wire (docs/benchmarks.md, scenario 8). The cost
 * is up to `concurrency` more rows under lease, waiting for a lane, and one claim that may come
 * back empty.
 */
export const DEFAULT_PREFETCH = true;

/**
 * A default claim's outcomes per settle at most before it is written: one statement (one
 * commit, one counter upsert) for what one claim brought, where fast sends finish a claim's rows
 * at once. At 32, such a claim was recorded in two writes, the first the moment 32 were in:
 * while claims go one at a time (ordering keys), scenario 11 ran 1.06x to 1.13x faster at 0.90x
 * to 0.95x the server CPU per message with 100, and without keys no change (docs/benchmarks.md,
 * "One write per claim"). Slow sends still write by age (`settleGroupMs`). A crash between a send
 * and its settle leaves at most the sends in flight plus this many sent-but-unmarked messages to
 * go out again, under the same keys.
 */
export const DEFAULT_SETTLE_GROUP_SIZE = DEFAULT_BATCH_SIZE;

/**
 * 5 ms: an outcome is written within a few milliseconds of its send even when sends are slow,
 * so a crash leaves few sent-but-unmarked messages, while fast drains still fill whole groups.
 */
export const DEFAULT_SETTLE_GROUP_MS = 5;

/**
 * Five seconds between claims that also probe half-open destinations and park what waits for
 * open ones (docs/destinations.md): a default pause lasts 30 s or more, so a probe waits at
 * most a sixth of it, and the claims between skip the lookup and its writes. With a shorter
 * first pause (`destinationHealth.pauseMs`), that pause is the interval.
 */
export const PROBE_INTERVAL_MS = 5_000;

/**
 * Claims a drain keeps on the wire at once. A second claim starts beside the first only when
 * even a full batch from the first would leave the lanes idle before the next claim could land:
 * sends outrun one claim per round trip (instant sends, a far database). Only with claim ahead
 * on (`prefetch`), after a full claim, and with no subrequest budget or a large one
 * ({@link MIN_BUDGET_FOR_CLAIM_BESIDE}): at the end of a backlog one of the two comes back
 * empty, one round trip more per drain. SKIP LOCKED keeps the two claims' rows apart, as it
 * does for two overlapping drains. With slow sends the queue never runs that low and claims go
 * one at a time. A no-op drain of 50,000 ran 1.25x faster with two
 * than with one, at the same CPU per message (docs/benchmarks.md, "Two claims on the wire").
 */
export const MAX_CLAIMS_ON_WIRE = 2;

/**
 * Under a subrequest budget, a second claim runs beside the first only if the budget is at least
 * this. The claim beside one that comes back short is a round trip spent for nothing, once per
 * drain: at most a thousandth of such a budget. Workers Free (50 subrequests) claims one at a
 * time; Workers Paid (10,000 by default) gets two on the wire, which is what a database in
 * another region needs when sends are fast (docs/benchmarks.md, scenario 8).
 */
export const MIN_BUDGET_FOR_CLAIM_BESIDE = 1_000;

/**
 * Four subrequests: a claim, a send, a settle and the run's record. Under a smaller budget a run
 * does not record itself, rather than give up the one message it could deliver.
 */
export const MIN_BUDGET_TO_RECORD_RUN = 4;

/** Largest batch and concurrency a drain accepts: beyond these a claim or a settle gets unwieldy. */
export const MAX_BATCH_SIZE = 1000;
export const MAX_CONCURRENCY = 1000;
