/**
 * Replay over the Postgres outbox (src/core/replay.ts): the walk's stretches of ids, their
 * counts and replays, and the audit rows. Every call is one statement.
 */
import type { SqlExecutor } from '../core/ports.js';
import type {
  ReplayAudit,
  ReplayCursor,
  ReplayOutcome,
  ReplaySampleMessage,
  ReplayStore,
} from '../core/replay.js';
import type { ReplaySelection } from '../core/replay-selection.js';
import { toDate, toDateOrNull } from './message-rows.js';
import { REPLAY_WINDOW_IDS, type ReplayStatements, replayStatements } from './replay-statements.js';

/** Audit rows one list returns when no limit is given, and at most. */
export const DEFAULT_REPLAY_AUDIT_LIMIT = 50;
export const MAX_REPLAY_AUDIT_LIMIT = 500;

/** The walk's position: ids after `after`, up to `last` (the largest that existed at its start). */
interface Walk {
  after: bigint;
  last: bigint;
}

export class PostgresReplayStore implements ReplayStore {
  private readonly sql: ReplayStatements;

  constructor(
    private readonly db: SqlExecutor,
    quotedSchema: string,
  ) {
    this.sql = replayStatements(quotedSchema);
  }

  async startReplayWalk(selection: ReplaySelection): Promise<ReplayCursor | null> {
    const text =
      selection.state === 'dead' ? this.sql.readDeadBounds : this.sql.readDeliveredBounds;
    const row = (await this.db.query(text)).rows[0] ?? {};
    if (row.low === null || row.low === undefined) return null;
    let after = BigInt(String(row.low)) - 1n;
    let last = BigInt(String(row.high));
    if (selection.ids) {
      const ids = selection.ids.map(BigInt);
      after = max(after, ids.reduce(min) - 1n);
      last = min(last, ids.reduce(max));
    }
    if (selection.afterId !== undefined) after = max(after, BigInt(selection.afterId));
    return after < last ? encode({ after, last }) : null;
  }

  async countReplayStep(
    selection: ReplaySelection,
    cursor: ReplayCursor,
    sampleSize: number,
  ): Promise<{ matched: number; sample: ReplaySampleMessage[]; next: ReplayCursor | null }> {
    const walk = decode(cursor);
    const end = stretchEnd(walk);
    const text =
      selection.state === 'dead' ? this.sql.countDeadStretch : this.sql.countDeliveredStretch;
    const result = await this.db.query(text, [
      ...selectionParameters(selection, walk.after, end),
      sampleSize,
    ]);
    const row = result.rows[0] ?? {};
    const sample = (row.sample as ReplaySampleMessage[] | null) ?? [];
    return {
      matched: Number(row.matched ?? 0),
      sample,
      next: end < walk.last ? encode({ after: end, last: walk.last }) : null,
    };
  }

  async replayStep(
    selection: ReplaySelection,
    cursor: ReplayCursor,
    step: { now: Date; limit: number; auditId: string },
  ): Promise<{ replayed: number; lastId: string | null; next: ReplayCursor | null }> {
    const walk = decode(cursor);
    const end = stretchEnd(walk);
    const text =
      selection.state === 'dead' ? this.sql.replayDeadStretch : this.sql.resendDeliveredStretch;
    const result = await this.db.query(text, [
      ...selectionParameters(selection, walk.after, end),
      step.now,
      step.limit,
      step.auditId,
    ]);
    const row = result.rows[0] ?? {};
    // A full batch may have left matches in the stretch: go on after its last. Otherwise the
    // stretch is done.
    const full = Number(row.chosen ?? 0) >= step.limit && row.last_chosen != null;
    const after = full ? BigInt(String(row.last_chosen)) : end;
    return {
      replayed: Number(row.replayed ?? 0),
      lastId: row.last_id == null ? null : String(row.last_id),
      next: after < walk.last ? encode({ after, last: walk.last }) : null,
    };
  }

  async startReplayAudit(audit: Omit<ReplayAudit, 'id' | 'replayed'>): Promise<string> {
    const result = await this.db.query(this.sql.insertReplayAudit, [
      audit.requestedBy,
      audit.startedAt,
      audit.finishedAt,
      JSON.stringify(audit.selection),
      audit.dryRun,
      audit.matched,
      audit.outcome,
    ]);
    return String(result.rows[0]?.id);
  }

  async finishReplayAudit(
    id: string,
    outcome: Exclude<ReplayOutcome, 'running'>,
    now: Date,
  ): Promise<void> {
    await this.db.query(this.sql.finishReplayAudit, [id, outcome, now]);
  }

  async listReplayAudits(
    options: { limit?: number; beforeId?: string } = {},
  ): Promise<ReplayAudit[]> {
    const limit = Math.min(options.limit ?? DEFAULT_REPLAY_AUDIT_LIMIT, MAX_REPLAY_AUDIT_LIMIT);
    const result = await this.db.query(this.sql.listReplayAudits, [
      limit,
      options.beforeId ?? null,
    ]);
    return result.rows.map((row) => ({
      id: String(row.id),
      requestedBy: String(row.requested_by),
      startedAt: toDate(row.started_at),
      finishedAt: toDateOrNull(row.finished_at),
      selection: row.selection as Record<string, unknown>,
      dryRun: row.dry_run === true,
      matched: Number(row.matched),
      replayed: Number(row.replayed),
      outcome: row.outcome as ReplayOutcome,
    }));
  }
}

/**
 * $1 to $9 of the stretch statements. Text filters go in LIKE-escaped (`\`, `%` and `_` as
 * themselves), so an operator's text is matched as written, never as a pattern.
 */
export function selectionParameters(
  selection: ReplaySelection,
  after: bigint,
  end: bigint,
): unknown[] {
  return [
    selection.kinds ?? null,
    selection.destination === undefined ? null : likeEscaped(selection.destination),
    selection.orderingKeys ?? null,
    selection.errorContains ?? null,
    selection.since ?? null,
    selection.until ?? null,
    selection.ids ?? null,
    after.toString(),
    end.toString(),
  ];
}

/** Text as a LIKE pattern that matches only itself (the default escape character is `\`). */
export function likeEscaped(text: string): string {
  return text.replace(/[\\%_]/g, (character) => `\\${character}`);
}

function stretchEnd(walk: Walk): bigint {
  return min(walk.after + REPLAY_WINDOW_IDS, walk.last);
}

function encode(walk: Walk): ReplayCursor {
  return { replayCursor: `${walk.after}:${walk.last}` };
}

function decode(cursor: ReplayCursor): Walk {
  const [after, last] = cursor.replayCursor.split(':');
  return { after: BigInt(after ?? '0'), last: BigInt(last ?? '0') };
}

function min(a: bigint, b: bigint): bigint {
  return a < b ? a : b;
}

function max(a: bigint, b: bigint): bigint {
  return a > b ? a : b;
}
