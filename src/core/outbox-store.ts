import type { DestinationChange, DestinationHealthPolicy } from './destination-health.js';
import type { DrainRunRecord } from './drain-record.js';
import type { JsonValue } from './message.js';
import type { Settlement } from './settlement.js';
import type { TraceContext } from './trace-context.js';

export type MessageState = 'pending' | 'claimed' | 'delivered' | 'dead';

export const MESSAGE_STATES: readonly MessageState[] = ['pending', 'claimed', 'delivered', 'dead'];

/** One outbox row, as operators and senders see it. */
export interface MessageRecord {
  /** bigint identity, as a string: it may exceed 2^53. */
  id: string;
  /** The stable ID receivers deduplicate on. */
  key: string;
  kind: string;
  payload: JsonValue;
  orderingKey: string | null;
  dedupeKey: string | null;
  state: MessageState;
  attempts: number;
  maxAttempts: number;
  /** Pending: when it is due. Claimed: when the lease runs out. */
  dueAt: Date;
  claimedAt: Date | null;
  lastError: string | null;
  createdAt: Date;
  deliveredAt: Date | null;
  deadAt: Date | null;
  /**
   * The message's attempts, oldest first: every failed one, and its delivery once delivered.
   * Read by `get` and `getByKey`; lists leave it out. Attempts made before attempt history
   * existed (migration 0007), or by a drain that died before recording the outcome, are not in
   * it (gaps in the attempt numbers): `attempts` still counts them.
   */
  attemptLog?: AttemptRecord[];
  /** The W3C trace context the message was enqueued under, when it was (docs/tracing.md). */
  traceContext?: TraceContext;
}

/** One attempt of a message, as attempt history recorded it. */
export interface AttemptRecord {
  /** Its number, 1 for the first; null when not recorded. */
  attempt: number | null;
  /**
   * A failed attempt: when its send started. A delivery: when its outcome was recorded (its
   * send ended at most a settle group's wait before).
   */
  at: Date | null;
  /** How long the send took, ms; null when not recorded. */
  durationMs: number | null;
  outcome: 'delivered' | 'retry' | 'dead';
  /** The HTTP status, when the sender reported one. */
  status: number | null;
  /** The provider's error code, when the sender reported one. */
  providerCode: string | null;
  /** Scheme, host and path (never the query), or a provider's name; null when not reported. */
  destination: string | null;
  /** At most 1 KiB of the failure; null for a delivery. */
  error: string | null;
}

/**
 * A claimed row: what its send needs, and the token that proves ownership in every later write.
 * Only these columns travel back from a claim; lists and lookups return whole records. A store
 * may keep facts of its own on the messages it returns (the PostgreSQL store: where the row is,
 * the payload's stored size), which the drain passes back to `settle` as they came.
 */
export interface ClaimedMessage {
  id: string;
  key: string;
  kind: string;
  payload: JsonValue;
  orderingKey: string | null;
  /** Counted at claim: 1 on the first attempt. */
  attempts: number;
  maxAttempts: number;
  createdAt: Date;
  claimToken: string;
  /**
   * The last row of the request's `holding` run this one continues: the claim took it right
   * behind that row, which this drain still holds, so it may be sent only once that row is
   * delivered. Absent for a row without an ordering key, and for a run that starts at its key's
   * head.
   */
  behind?: string;
  /**
   * Whether its destination had failures or a pause when it was claimed (the store's business:
   * its settle then records the outcome against the destination; docs/destinations.md).
   */
  destinationWatched?: boolean;
  /** The W3C trace context it was enqueued under, when it was: the sender passes it on. */
  traceContext?: TraceContext;
}

/** A row a claim set aside as dead: its final attempt's lease ran out without an outcome. */
export type ExhaustedMessage = Pick<MessageRecord, 'id' | 'key' | 'kind' | 'attempts'>;

export interface ClaimRequest {
  now: Date;
  claimToken: string;
  limit: number;
  leaseMs: number;
  /** Claim only these message keys (the after-commit kick); undefined claims any due row. */
  keys?: readonly string[];
  /** Whether a dead message blocks later messages with its ordering key. */
  deadHeadBlocks: boolean;
  /** Claim only these kinds: the ones this drain has senders for. */
  kinds: readonly string[];
  /**
   * Due claims: where the drain's last claim to land left off (its `resumeAt`), opaque to all
   * but the store, which may start its scans there instead of from the start. The PostgreSQL
   * store starts its walk of the ordering keys after the key the last walk took last, and in a
   * backlog scans the due order after the last row it took (docs/benchmarks.md, "The claim's
   * cursor").
   */
  resumeAt?: string;
  /**
   * Due claims: the drain's last claim came back full (or set rows aside), so more is probably
   * due: a backlog.
   */
  backlog?: boolean;
  /**
   * Also take one probe of each half-open destination (docs/destinations.md), beside the due
   * rows. Due claims only; the drain asks on its first claim and every few seconds after.
   */
  probe?: boolean;
  /**
   * Due claims: rows of one ordering key this claim may take before every other key with
   * claimable rows has had as many (whole numbers from 1; default the limit). A key's rows
   * come as a run, its head first, to be sent one after another in one lane, so the share
   * bounds how long one lane holds a key and how much one deep key takes from the rest. When
   * every key has had its share and the claim is still short, keys take more, in turns, up to
   * the limit (one key alone may fill it).
   */
  keyShare?: number;
  /**
   * Due claims: the runs of ordering keys this drain holds, none known to have failed. Where a
   * key's first unfinished row is one of such a run, the claim may take the rows right behind
   * the run's last (each says so in `behind`), so a drain keeps a deep key going while its last
   * run is still out, instead of waiting for that run's outcomes to be recorded. A store checks
   * that the last row is still claimed under the token given, with its lease live, and that the
   * key's first unfinished row lies between the run's first and last: a run that fails either
   * check continues nothing.
   */
  holding?: readonly HeldRun[];
  /**
   * Due claims: take no message with an ordering key. The drain asks for such a claim beside
   * one that takes keys' runs (those go one at a time), so a backlog's messages without a key
   * do not wait for the runs' claims. Its `resumeAt` says where the next scan of the due order
   * starts, and keeps the walk of the keys where the request's left it.
   */
  unkeyedOnly?: boolean;
}

/**
 * A run of one ordering key's rows a drain holds, claimed as one run or as runs that continue
 * each other (see ClaimRequest.holding), by its first row and its last.
 */
export interface HeldRun {
  orderingKey: string;
  /** The run's first row: the key's first unfinished row when it was claimed. */
  firstId: string;
  /** Its last row, the one a continuing run comes right behind... */
  lastId: string;
  /** ...and the token that row is claimed under. */
  lastToken: string;
}

export interface ClaimResult {
  /** Rows now claimed by this token, to be sent. */
  claimed: ClaimedMessage[];
  /** Rows the claim set aside as dead: their final attempt's lease ran out unsettled. */
  exhausted: ExhaustedMessage[];
  /** Due claims: where the drain's next due claim resumes (ClaimRequest.resumeAt). */
  resumeAt?: string;
  /**
   * Due claims: the drain's next claims should go one at a time (beside each, at most a claim
   * with `unkeyedOnly`), because this claim took runs of ordering keys or the next claim walks
   * the keys. A second claim made before this one's rows are recorded would find those runs
   * locked, or start its walk at the same key, and come back short.
   */
  oneAtATime?: boolean;
  /**
   * Due claims: nothing more was claimable until this claim's rows are recorded (what is left
   * waits behind them, is out with other drains, or is not yet due), so a claim ahead would come
   * back empty. The drain then claims again once its rows are recorded.
   */
  caughtUp?: boolean;
  /**
   * Due claims: the claim looked at only some of the due rows (a store may leave out a kind of
   * row it last found none of), so coming back short does not mean nothing more was due: claim
   * again.
   */
  partial?: boolean;
}

/**
 * What a settle needs of a claimed message: the message as its store's claim returned it, with
 * whatever else that store keeps on it (where the row is, its size), passed back as it came.
 */
export type SettledMessage = Pick<
  ClaimedMessage,
  'id' | 'key' | 'claimToken' | 'destinationWatched'
>;

/** One claimed message's outcome, to be recorded. */
export interface SettleRequest {
  message: SettledMessage;
  settlement: Settlement;
}

export interface SettleResult {
  /** Ids written. */
  settled: string[];
  /** Ids whose claim token no longer matched: another drain owns them now; left unchanged. */
  stale: string[];
  /** Destinations this settle paused or resumed (docs/destinations.md); absent when none. */
  destinations?: DestinationChange[];
}

export interface SettleOptions {
  /**
   * How failures pause destinations; `false` counts none. Default
   * `DEFAULT_DESTINATION_HEALTH`.
   */
  health?: DestinationHealthPolicy | false;
}

export interface OutboxStats {
  pending: number;
  /** Pending, due now, and free to be claimed: not held. */
  due: number;
  /**
   * Pending and due now, but held behind an earlier message of their ordering key that is
   * still pending or claimed (or dead, where dead heads block): a drain cannot take them until
   * that one is delivered, retried or discarded. Counted neither in `due` nor in the lag.
   */
  held: number;
  /** Claimed with a live lease: being sent right now. */
  claimed: number;
  /** Claimed, but the lease has run out: the drain died; claimable again. */
  leaseExpired: number;
  delivered: number;
  dead: number;
  /**
   * Age in ms of the oldest message a drain could take now (due, or its lease passed, and not
   * held behind its ordering key's head); 0 when none.
   */
  lagMs: number;
  oldestDueAt: Date | null;
}

/** The storage operations the drain and the admin surfaces need. */
export interface OutboxStore {
  claim(request: ClaimRequest): Promise<ClaimResult>;
  /**
   * Every outcome in ONE statement, each guarded by its claim token; as many as
   * {@link settleFits} says fit in one.
   */
  settle(
    requests: readonly SettleRequest[],
    now: Date,
    options?: SettleOptions,
  ): Promise<SettleResult>;
  /**
   * How many of `requests`, from the first, one `settle` takes (1 at least): a store's writes
   * have limits of their own (the PostgreSQL store's: 1,000 outcomes, and about 8 MB of
   * delivered payload, a group of history being one value). A store without limits returns
   * `requests.length`; a store that wraps another passes this on, as its settle.
   */
  settleFits(requests: readonly SettleRequest[]): number;
  /**
   * Adds one drain run to the store's record for metrics, in one statement. Optional: a drain
   * over a store without it records nothing.
   */
  recordDrainRun?(record: DrainRunRecord): Promise<void>;
}
