import { DEFAULT_DESTINATION_HEALTH } from '../core/destination-health.js';
import type { DrainRunRecord } from '../core/drain-record.js';
import { ValidationError } from '../core/errors.js';
import { UUID_PATTERN } from '../core/message.js';
import { isMessageId } from '../core/message-id.js';
import {
  type ClaimRequest,
  type ClaimResult,
  MESSAGE_STATES,
  type MessageRecord,
  type MessageState,
  type OutboxStats,
  type OutboxStore,
  type SettleOptions,
  type SettleRequest,
  type SettleResult,
} from '../core/outbox-store.js';
import type { QueryResult, SqlExecutor } from '../core/ports.js';
import type { PurgeReport, PurgeRequest, PurgeStore } from '../core/purge.js';
import { type AttemptRow, recordWithAttempts } from './attempt-log.js';
import { PostgresDestinationStore, type SettleRow } from './destination-store.js';
import { DueClaims } from './due-claim.js';
import { sharedClaimParameters } from './due-claim-shape.js';
import { decodeCursor, encodeCursor, listOrderTime } from './list-cursor.js';
import {
  actionableState,
  actionLimit,
  filterParameters,
  type HoldingHead,
  type MessageFilter,
} from './message-filter.js';
import {
  type ClaimedRow,
  claimResultFromRows,
  type MessageRow,
  messageFromRow,
  toDate,
  toDateOrNull,
} from './message-rows.js';
import {
  type DrainRunTotals,
  drainRunParameters,
  drainRunsFromRow,
  type OutcomeTotals,
  outcomeTotalsFromRow,
} from './metric-statements.js';
import { purgeFinished } from './purge-passes.js';
import { PostgresReplayStore } from './replay-store.js';
import { DEFAULT_SCHEMA, quoteSchema } from './schema-name.js';
import { settleKeepsHealth, settleParameters, settleResultFromRows } from './settle-parameters.js';
import { MAX_SETTLE_OUTCOMES, settleFits } from './settle-size.js';
import { type OutboxStatements, outboxStatements } from './statements.js';

export { DEFAULT_PURGE_BATCH } from './purge-passes.js';

/** Admin list page size when none is given, and the most one page may hold. */
export const DEFAULT_LIST_LIMIT = 50;
export const MAX_LIST_LIMIT = 500;

export type { HoldingHead, MessageFilter } from './message-filter.js';

export interface ListRequest extends MessageFilter {
  limit?: number;
  /** The `nextCursor` of the previous page. */
  cursor?: string;
}

export interface ListPage {
  messages: MessageRecord[];
  /** Pass back to get the next page; null on the last page. */
  nextCursor: string | null;
}

/**
 * The outbox table in Postgres, over any {@link SqlExecutor}: every operation is a single
 * statement, so it works the same over pg, Neon WebSocket and Neon HTTP.
 */
export class PostgresOutboxStore implements OutboxStore, PurgeStore {
  readonly schema: string;
  private readonly sql: OutboxStatements;
  private readonly keepDelivered: boolean;
  private readonly dueClaims: DueClaims;

  constructor(
    private readonly db: SqlExecutor,
    options: { schema?: string; keepDelivered?: boolean } = {},
  ) {
    this.schema = options.schema ?? DEFAULT_SCHEMA;
    this.keepDelivered = options.keepDelivered ?? true;
    this.sql = outboxStatements(quoteSchema(this.schema), {
      keepDelivered: this.keepDelivered,
    });
    this.dueClaims = new DueClaims(
      this.schema,
      this.sql.claimDueMessages,
      async (text, params) => (await this.rowsOf<ClaimedRow>(text, params)).rows,
    );
  }

  /**
   * One of this store's statements, its rows read as the columns that statement returns: the
   * port hands rows back as plain records (so any executor satisfies it), and only the store
   * knows what each of its statements selects.
   */
  private async rowsOf<Row>(text: string, params?: unknown[]): Promise<QueryResult<Row>> {
    return (await this.db.query(text, params)) as unknown as QueryResult<Row>;
  }

  async claim(request: ClaimRequest): Promise<ClaimResult> {
    const shared = sharedClaimParameters(request);
    if (!request.keys) return this.dueClaims.claim(request, shared);
    const result = await this.rowsOf<ClaimedRow>(this.sql.claimMessagesByKey, [
      ...shared,
      [...request.keys],
      request.limit,
    ]);
    return claimResultFromRows(result.rows, request.claimToken).result;
  }

  settleFits(requests: readonly SettleRequest[]): number {
    return settleFits(requests);
  }

  async settle(
    requests: readonly SettleRequest[],
    now: Date,
    options: SettleOptions = {},
  ): Promise<SettleResult> {
    if (requests.length === 0) return { settled: [], stale: [] };
    if (requests.length > MAX_SETTLE_OUTCOMES) {
      throw new RangeError(
        `settle takes at most ${MAX_SETTLE_OUTCOMES} outcomes at once, got ${requests.length}`,
      );
    }
    const health = settleKeepsHealth(requests)
      ? (options.health ?? DEFAULT_DESTINATION_HEALTH)
      : undefined;
    const statement = settleParameters(requests, now, this.keepDelivered, health);
    const result = await this.rowsOf<SettleRow>(
      statement.health ? this.sql.settleClaimedMessagesWithHealth : this.sql.settleClaimedMessages,
      statement.params,
    );
    return settleResultFromRows(requests, result.rows);
  }

  /**
   * Counts by state and the lag, as drains with `deadHeadBlocks` (default true, as theirs) see
   * the table: a message held behind an unfinished one of its ordering key counts as `held`,
   * not `due`, and not in the lag.
   */
  async stats(now: Date, options: { deadHeadBlocks?: boolean } = {}): Promise<OutboxStats> {
    const result = await this.db.query(this.sql.readStats, [now, options.deadHeadBlocks ?? true]);
    const row = result.rows[0] ?? {};
    const oldestDueAt = toDateOrNull(row.oldest_due_at);
    return {
      pending: Number(row.pending ?? 0),
      due: Number(row.due ?? 0),
      held: Number(row.held ?? 0),
      claimed: Number(row.claimed ?? 0),
      leaseExpired: Number(row.lease_expired ?? 0),
      delivered: Number(row.delivered ?? 0),
      dead: Number(row.dead ?? 0),
      oldestDueAt,
      lagMs: oldestDueAt ? Math.max(0, now.getTime() - oldestDueAt.getTime()) : 0,
    };
  }

  /** One page of messages in a state, keyset-paginated so deep pages cost what the first does. */
  async list(request: ListRequest): Promise<ListPage> {
    if (!MESSAGE_STATES.includes(request.state)) {
      throw new ValidationError('state', `expected one of ${MESSAGE_STATES.join(', ')}`);
    }
    const limit = request.limit ?? DEFAULT_LIST_LIMIT;
    if (!Number.isInteger(limit) || limit < 1 || limit > MAX_LIST_LIMIT) {
      throw new ValidationError('limit', `expected an integer from 1 to ${MAX_LIST_LIMIT}`);
    }
    const cursor = request.cursor === undefined ? null : decodeCursor(request.cursor);
    const page = limit + 1;
    const text = {
      pending: this.sql.listPending,
      claimed: this.sql.listClaimed,
      delivered: this.sql.listDelivered,
      dead: this.sql.listDead,
    }[request.state];
    const [kind, ...filters] = filterParameters(request);
    const result = await this.rowsOf<MessageRow>(text, [
      kind,
      cursor?.at ?? null,
      cursor?.id ?? null,
      page,
      ...filters,
    ]);
    const messages = result.rows.slice(0, limit).map(messageFromRow);
    const last = messages.at(-1);
    const more = result.rows.length > limit && last !== undefined;
    return { messages, nextCursor: more ? encodeCursor(listOrderTime(last), last.id) : null };
  }

  /** Outcomes per minute since `since`, for metrics and the dashboard chart. */
  async deliveryCounts(since: Date): Promise<DeliveryCount[]> {
    const result = await this.db.query(this.sql.readDeliveryCounts, [since]);
    return result.rows.map((row) => ({
      minute: toDate(row.minute),
      delivered: Number(row.delivered),
      failed: Number(row.failed),
      dead: Number(row.dead),
    }));
  }

  /** Outcomes by kind since the outbox began: counters that purge never lowers. */
  async outcomeTotals(): Promise<OutcomeTotals[]> {
    return (await this.db.query(this.sql.readOutcomeTotals)).rows.map(outcomeTotalsFromRow);
  }

  /** The drains' record of their runs (`recordRun`), by duration bucket and error code. */
  async drainRuns(): Promise<DrainRunTotals[]> {
    return (await this.db.query(this.sql.readDrainRuns)).rows.map(drainRunsFromRow);
  }

  async recordDrainRun(record: DrainRunRecord): Promise<void> {
    await this.db.query(this.sql.recordDrainRun, drainRunParameters(record));
  }

  /** The latest messages that failed at least once and are not delivered, newest first. */
  async recentErrors(limit = 20): Promise<MessageRecord[]> {
    const result = await this.rowsOf<MessageRow>(this.sql.listRecentErrors, [limit]);
    return result.rows.map(messageFromRow);
  }

  /**
   * For each of `ids` that is a pending message held behind the head of its ordering key, that
   * head (see {@link HoldingHead}), by the held message's id. One statement however many ids.
   * `deadHeadBlocks`: the drains' setting (default true, as theirs); without it a dead message
   * holds nothing back.
   */
  async holdingHeads(
    ids: readonly string[],
    options: { deadHeadBlocks?: boolean } = {},
  ): Promise<Map<string, HoldingHead>> {
    const heads = new Map<string, HoldingHead>();
    if (ids.length === 0) return heads;
    const result = await this.rowsOf<{
      id: string;
      head_id: string;
      head_key: string;
      head_state: HoldingHead['state'];
      head_due_at: Date | string;
    }>(this.sql.listHoldingHeads, [ids.map(parseId), options.deadHeadBlocks ?? true]);
    for (const row of result.rows) {
      heads.set(String(row.id), {
        id: String(row.head_id),
        key: row.head_key,
        state: row.head_state,
        dueAt: toDate(row.head_due_at),
      });
    }
    return heads;
  }

  /** The message with this id, or null; with its attempt history (`attemptLog`). */
  async get(id: string): Promise<MessageRecord | null> {
    const result = await this.rowsOf<MessageRow & AttemptRow>(this.sql.readMessage, [parseId(id)]);
    const row = result.rows[0];
    return row ? recordWithAttempts(row) : null;
  }

  /**
   * The message with this key (the ID receivers deduplicate on), or null, with its attempt
   * history. A key that is not a UUID cannot be in the table: it is a `ValidationError` on
   * `key`, not a database error.
   */
  async getByKey(key: string): Promise<MessageRecord | null> {
    if (!UUID_PATTERN.test(key)) throw new ValidationError('key', 'expected a UUID');
    const result = await this.rowsOf<MessageRow & AttemptRow>(this.sql.readMessageByKey, [key]);
    const row = result.rows[0];
    return row ? recordWithAttempts(row) : null;
  }

  /** Moves one dead message back to pending, due `now`. False when it is not dead. */
  async retryDead(id: string, now: Date): Promise<boolean> {
    const result = await this.db.query(this.sql.retryDeadMessage, [parseId(id), now]);
    return result.rowCount > 0;
  }

  /** Moves every dead message (of one kind, if given) back to pending. Returns how many. */
  async retryAllDead(now: Date, options: { kind?: string } = {}): Promise<number> {
    const result = await this.db.query(this.sql.retryAllDead, [now, options.kind ?? null]);
    return result.rowCount;
  }

  /** Destination health: each destination's state, and pause and resume by hand. */
  destinations(): PostgresDestinationStore {
    return new PostgresDestinationStore(this.db, quoteSchema(this.schema));
  }

  /** Replay and redrive over this outbox, and its audit (`replayMessages` in core/replay.ts). */
  replays(): PostgresReplayStore {
    return new PostgresReplayStore(this.db, quoteSchema(this.schema));
  }

  /**
   * Retries those of `ids` that are still in `state` (dead: pending again with fresh attempts;
   * pending: due now). Returns the ids it changed; the others had moved on.
   */
  async retryMessages(ids: readonly string[], state: MessageState, now: Date): Promise<string[]> {
    if (ids.length === 0) return [];
    const result = await this.rowsOf<{ id: string }>(this.sql.retrySelected, [
      ids.map(parseId),
      actionableState(state),
      now,
    ]);
    return result.rows.map((row) => String(row.id));
  }

  /** Deletes those of `ids` that are still in `state` (dead or pending). Returns their ids. */
  async discardMessages(ids: readonly string[], state: MessageState): Promise<string[]> {
    if (ids.length === 0) return [];
    const result = await this.rowsOf<{ id: string }>(this.sql.discardSelected, [
      ids.map(parseId),
      actionableState(state),
    ]);
    return result.rows.map((row) => String(row.id));
  }

  /**
   * Retries at most `limit` messages that match `filter` (dead or pending), oldest first, in
   * one statement; returns how many. Fewer than `limit` means none that matched were left.
   */
  async retryMatching(filter: MessageFilter, limit: number, now: Date): Promise<number> {
    const params = [actionableState(filter.state), actionLimit(limit), ...filterParameters(filter)];
    const result = await this.db.query(this.sql.retryMatching, [...params, now]);
    return result.rowCount;
  }

  /** Deletes at most `limit` messages that match `filter` (dead or pending); returns how many. */
  async discardMatching(filter: MessageFilter, limit: number): Promise<number> {
    const params = [actionableState(filter.state), actionLimit(limit), ...filterParameters(filter)];
    const result = await this.db.query(this.sql.discardMatching, params);
    return result.rowCount;
  }

  /**
   * Deletes a message that is not being delivered right now. Returns the state it had, or null
   * when there is no such message or it is claimed (try again once its drain settles it).
   */
  async discard(id: string): Promise<MessageState | null> {
    const result = await this.rowsOf<{ state: MessageState }>(this.sql.discardMessage, [
      parseId(id),
    ]);
    return result.rows[0]?.state ?? null;
  }

  /**
   * Deletes finished rows in bounded statements, oldest first, so the hot table stays small,
   * then, if it deleted any, vacuums both tables so the freed space is reused at once. Run it
   * from the schedule (`purgeOnce`) on an executor outside any transaction block (VACUUM cannot
   * run inside one); it never touches pending or claimed rows.
   */
  async purge(request: PurgeRequest): Promise<PurgeReport> {
    return purgeFinished(this.db, this.sql, request);
  }
}

export interface DeliveryCount {
  minute: Date;
  delivered: number;
  /** Attempts that failed (retried or set aside). */
  failed: number;
  dead: number;
}

/**
 * Every method taking an id checks it here, before querying: a malformed id or one past
 * `bigint` would otherwise fail in the database with a raw driver error.
 */
function parseId(id: unknown): string {
  if (typeof id !== 'string' || !isMessageId(id)) {
    throw new ValidationError('id', 'expected a message id: a positive integer within bigint');
  }
  return id;
}
