/**
 * The due claim as the store runs it, in one of three ways with ordering keys: with the walk of
 * the keys (claim-walk.ts), taking heads in due order (claim-heads.ts), or, while no message with
 * an ordering key is unfinished, without keyed rows at all.
 *
 * The walk is most of the claim statement's plan, and PostgreSQL starts every node of a plan on
 * every run, walked or not: a claim of 100 rows with no key anywhere cost 1.1 ms more server CPU
 * with it than without (about 11 µs a message, docs/benchmarks.md, scenario 1). Planning it
 * costs more again, and a claim is planned on every run over Neon's HTTP driver and on the first
 * runs over each new connection: on a new connection, 5.6 to 6.2 ms against 2.0 to 2.2 for the
 * claim without it ("Idle ticks", docs/benchmarks.md).
 *
 * So every due claim says whether the next needs keyed rows: a keyed claim whether no message
 * with an ordering key is unfinished (`keyless`), an unkeyed one whether one is
 * (`keyed_waiting`). An unkeyed claim, a claim taking heads, and a store's first claim come back
 * with one row of nulls beside the flags when they take nothing, so an empty one says it too
 * (the walk's rows skip the copy that costs: a walk that takes nothing keeps the walk). The
 * claim after one that says a keyed message waits takes keyed rows the way the last full claim
 * over the schema led to (the walk, before any); an unkeyed claim that came back short while one
 * waits is `partial`, and the drain claims again at once instead of taking it for the end of
 * what was due.
 *
 * The walk pays for every key it visits, which over many keys with a few messages each is most
 * of the claim: there a claim taking heads costs about what an unkeyed one does (nextKeyed says
 * when). A claim taking heads that its window held back is `partial` too. Over as many deep
 * keys as fill a claim at a share each, the walks leave out what only a walk that falls short
 * needs (nextSharesOnly).
 *
 * A store's first claim goes by what the last claim over its schema in this process did (none
 * yet: without keyed rows). A cron invocation builds a store per tick, so an idle outbox's tick
 * makes one claim without keyed rows, and an outbox whose keyed messages wait for days (in
 * backoff, or dead and kept) walks at once instead of paying a claim without them first on every
 * tick. After a store that took keyed rows and left none unfinished, the first claim takes heads.
 */

import type { ClaimRequest, ClaimResult } from '../core/outbox-store.js';
import {
  type ClaimCursor,
  type ClaimPosition,
  compareCursors,
  cursorOf,
  positionAfter,
  positionOf,
  positionText,
} from './claim-position.js';
import {
  cursorSteps,
  type DueClaimShape,
  dueClaimParameters,
  dueClaimShape,
  type KeyedRows,
  type PositionedClaim,
} from './due-claim-shape.js';
import { type ClaimedRow, claimResultFromRows } from './message-rows.js';

/** The ways a claim takes keyed rows when it takes them: by the walk, or as heads. */
type KeyedWay = Exclude<KeyedRows, 'none'>;

/**
 * Per schema (by name), from the last due claim over it in this process: how the claim after it
 * takes keyed rows (where a store's first claim starts), the way the last claim that came back
 * full led to (where the claims go once a claim without keyed rows finds one waiting), and
 * whether the store that made it took keyed rows (see DueClaims' constructor). Past this many
 * schemas, the kept ones are forgotten.
 */
const lastClaimBySchema = new Map<
  string,
  { keyed: KeyedRows; keyedWay: KeyedWay; tookKeyed: boolean }
>();
const SCHEMAS_KEPT = 64;

/**
 * Walk claims after a claim taking heads found its window held back before the next may try
 * again: 8 at first, twice as many after each try that is held back again, up to 64. Over a few
 * deep keys every try is held back (and costs about a claim: docs/benchmarks.md, "Heads in due
 * order"), so the tries come one in 64 claims once the backlog has shown its shape.
 */
const HEADS_RETRY_FIRST = 8;
const HEADS_RETRY_MOST = 64;

export class DueClaims {
  /** How the next claim takes keyed rows. */
  private keyed: KeyedRows;
  /** How a claim after one without keyed rows takes them (see lastClaimBySchema). */
  private keyedWay: KeyedWay;
  /** No claim yet. */
  private first = true;
  /** The next walk takes first shares only (see nextSharesOnly). */
  private sharesOnly = false;
  /** A claim of this store ran a text with a cursor (see dueClaimShape): the later ones do too. */
  private cursorTextRun = false;
  /** A claim of this store took a row with an ordering key. */
  private tookKeyed = false;
  /** The furthest cursor a claim of this store returned, and the walk its last claim of runs left. */
  private cursorReturned: ClaimCursor | undefined;
  private walkReturned: string | undefined;
  /**
   * The claims of this store on the wire that scan the due order after a cursor (not walks: those
   * go one at a time): their cursor and limit (see rowsOnWireAfter).
   */
  private readonly onWire = new Set<{ after: ClaimCursor; limit: number }>();
  /** Walk claims left before a claim may take heads again. */
  private walksBeforeHeads = 0;
  /** What walksBeforeHeads becomes when the next claim taking heads is held back. */
  private headsRetry = HEADS_RETRY_FIRST;

  constructor(
    private readonly schema: string,
    private readonly texts: (shape: DueClaimShape) => string,
    private readonly run: (text: string, params: unknown[]) => Promise<readonly ClaimedRow[]>,
  ) {
    const last = lastClaimBySchema.get(schema);
    this.keyed = last?.keyed ?? 'none';
    this.keyedWay = last?.keyedWay ?? 'walk';
    // The last store took keyed rows and left none unfinished (its last claim said so): keyed
    // messages come and go here, and a tick that drains them all would otherwise start every
    // next one with a claim that cannot take the ones enqueued since, then claim again (over
    // Neon's HTTP driver, a subrequest a tick). Heads take them, and unkeyed rows, for about
    // what a claim without keyed rows costs; one that finds no keyed message unfinished says so,
    // and its store's next claim leaves them out again.
    if (this.keyed === 'none' && last?.tookKeyed === true) this.keyed = 'heads';
  }

  /**
   * `shared`: the claim's first five parameters (see claimStatement). The claim starts where
   * the request's position says (claim-position.ts), and says where the next resumes.
   */
  async claim(request: ClaimRequest, shared: readonly unknown[]): Promise<ClaimResult> {
    if (request.backlog !== true) {
      this.cursorReturned = undefined;
      this.walkReturned = undefined;
    }
    const position = positionOf(request.resumeAt);
    const positioned: PositionedClaim = { ...request };
    const after = cursorOf(request, position);
    if (after) positioned.after = after;
    if (position.walkAfter !== undefined) positioned.walkAfter = position.walkAfter;
    if (request.unkeyedOnly === true) return this.unkeyedBeside(positioned, shared, position);
    const { keyed } = this;
    const shape: DueClaimShape = {
      ...dueClaimShape(positioned, this.cursorTextRun),
      keyed,
      answersWhenEmpty: keyed !== 'walk' || this.first,
    };
    if (keyed === 'walk' && this.sharesOnly) shape.sharesOnly = true;
    this.first = false;
    this.cursorTextRun ||= shape.after;
    // Beside a claim on the wire from this cursor, start past the rows it is taking.
    const wire = after && cursorSteps(shape) ? { after, limit: request.limit } : undefined;
    if (wire) {
      const skip = this.rowsOnWireAfter(wire.after);
      if (skip > 0) positioned.skip = skip;
      this.onWire.add(wire);
    }
    let answer: readonly ClaimedRow[];
    try {
      answer = await this.run(this.texts(shape), dueClaimParameters(positioned, shared, shape));
    } finally {
      if (wire) this.onWire.delete(wire);
    }
    // One row of nulls beside the flags when a claim that answers when empty took none. An
    // empty claim that does not could not say: take it that a keyed message waits.
    const flags = answer[0];
    const rows = flags?.id == null ? [] : answer;
    const keyedWaiting =
      keyed === 'none' ? flags?.keyed_waiting !== false : flags?.keyless !== true;
    const heldBack = flags?.held_back === true;
    const taken = claimResultFromRows(rows, request.claimToken, keyed === 'heads');
    const { result } = taken;
    if (keyed === 'none' && rows.length < request.limit && keyedWaiting) result.partial = true;
    if (heldBack) result.partial = true;
    if (shape.sharesOnly === true && rows.length < request.limit) result.partial = true;
    this.keyed = keyedWaiting
      ? this.nextKeyed(shape, rows, heldBack, request.holding?.length ?? 0)
      : 'none';
    this.sharesOnly = this.keyed === 'walk' && nextSharesOnly(shape, rows);
    // Followed by a walk: the claims go one at a time even when this one took no run (its
    // unkeyed rows due first filled it, or it took no keyed rows at all). Two walks on the wire
    // start at the same key, and the second finds the first's runs locked: over a backlog half
    // unkeyed, 22 of 56 claims went beside another, and each connection they reached planned
    // the walk anew.
    if (taken.keysWalked !== undefined || this.keyed === 'walk') {
      result.oneAtATime = true;
    }
    if (rows.length >= request.limit && this.keyed !== 'none') this.keyedWay = this.keyed;
    this.tookKeyed ||= keyed !== 'none' && rows.some((row) => row.ordering_key !== null);
    if (lastClaimBySchema.size >= SCHEMAS_KEPT) lastClaimBySchema.clear();
    lastClaimBySchema.set(this.schema, {
      keyed: this.keyed,
      keyedWay: this.keyedWay,
      tookKeyed: this.tookKeyed,
    });
    result.resumeAt = positionText(this.furthest(positionAfter(position, after, taken), false));
    return result;
  }

  /**
   * A claim without keyed rows the drain makes beside one that takes keys' runs
   * (ClaimRequest.unkeyedOnly): it says nothing of keyed messages, so the way the next claim
   * takes them stays as the claims that take them left it.
   */
  private async unkeyedBeside(
    positioned: PositionedClaim,
    shared: readonly unknown[],
    position: ClaimPosition,
  ): Promise<ClaimResult> {
    const shape: DueClaimShape = {
      ...dueClaimShape(positioned, this.cursorTextRun),
      keyed: 'none',
    };
    this.cursorTextRun ||= shape.after;
    const rows = await this.run(this.texts(shape), dueClaimParameters(positioned, shared, shape));
    const taken = claimResultFromRows(rows, positioned.claimToken);
    taken.result.resumeAt = positionText(
      this.furthest(positionAfter(position, positioned.after, taken), true),
    );
    return taken.result;
  }

  /**
   * How many unfinished rows past `after` a claim starting there steps (PositionedClaim.skip,
   * claim-cursor.ts): the limits of the claims on the wire from it or from a cursor before it.
   * A drain keeps at most two claims on the wire, so this is the other one's: from the same
   * cursor, it is taking the rows right after it; from an earlier one, the claim that moved the
   * cursor here landed first, and the other (started beside that one, so stepping past its rows)
   * is taking the rows from about here on. If instead the other is the earlier of the two (the
   * later one landed first), the rows stepped past wait behind the cursor for the next claim
   * that reads from the start.
   */
  private rowsOnWireAfter(after: ClaimCursor): number {
    let rows = 0;
    for (const each of this.onWire) {
      if (compareCursors(each.after, after) <= 0) rows += each.limit;
    }
    return rows;
  }

  /**
   * `next` with the furthest cursor a claim of this store returned in this backlog, and, for a
   * claim beside the runs' claims (`beside`, ClaimRequest.unkeyedOnly), the walk of the keys
   * where the last of those left it. The drain takes the position of whichever claim lands last,
   * and two claims on the wire start at one cursor: the one that lands last may have stopped
   * short of the other, and the next claims would step over the other's rows again (over 10 keys
   * with half the backlog unkeyed, claims of runs beside claims without keys each ran 2.8 ms
   * against 2.2). Rows both scans passed over without taking (locked by the other for a moment)
   * lie behind the cursor, where every fourth claim and every short one look
   * (claim-position.ts).
   */
  private furthest(next: ClaimPosition, beside: boolean): ClaimPosition {
    const mine = next.cursor;
    const kept = this.cursorReturned;
    if (kept && (!mine || compareCursors(kept, mine) > 0)) next.cursor = kept;
    else this.cursorReturned = mine;
    if (beside && this.walkReturned !== undefined) next.walkAfter = this.walkReturned;
    if (!beside) this.walkReturned = next.walkAfter;
    return next;
  }

  /**
   * How the claim after this one takes keyed rows, while a keyed message waits. A claim without
   * them is followed the way the last full claim led to (keyedWay). A walk that came back full
   * with runs shorter than a share on average (many keys, a few messages each: over a few deep
   * keys every run is a share long) is followed by a claim taking heads.
   *
   * Claims taking heads go on while they come back full, and after one that came back short
   * while the drain holds runs of more keys than a walk visits at full shares (`keysHeld`,
   * ClaimRequest.holding, against limit / share): over many keys of a few messages each, what such
   * a claim left (its window held back or not) is mostly the next messages of keys whose heads
   * this drain has out, each a head once that is recorded. A walk would take them now, as runs
   * behind those heads, but over many keys it pays a step per key, goes one claim at a time, and
   * is planned anew on each connection it reaches (9 to 29 ms on the wire against 5 to 8 over
   * 1,000 keys of 5): past the first wave of such a backlog, a window held back was followed by
   * eight walks in a row. With heads kept, scenario 11 over 1,000 keys of 5 ran at 1.10x to 1.15x
   * the rate of the build before, at 0.81x to 0.93x its server CPU per message
   * (docs/benchmarks.md, "Heads stay heads over many keys"). A claim held back stays partial, so
   * the drain claims again as its queue runs low.
   *
   * Holding runs of fewer keys, a short claim is followed by walks: few keys are left, maybe
   * deep (the walk takes their runs a share at a time, not a row per key per claim), and after
   * one held back by its window (deep keys ahead) by at least walksBeforeHeads of them.
   */
  private nextKeyed(
    shape: DueClaimShape,
    rows: readonly ClaimedRow[],
    heldBack: boolean,
    keysHeld: number,
  ): KeyedRows {
    const full = rows.length >= shape.limit;
    if (shape.keyed === 'none') return this.keyedWay;
    if (shape.keyed === 'heads') {
      if (full) {
        this.headsRetry = HEADS_RETRY_FIRST;
        return 'heads';
      }
      if (keysHeld > Math.ceil(shape.limit / shape.share)) return 'heads';
      if (heldBack) {
        this.walksBeforeHeads = this.headsRetry;
        this.headsRetry = Math.min(2 * this.headsRetry, HEADS_RETRY_MOST);
      }
      return 'walk';
    }
    if (this.walksBeforeHeads > 0) {
      this.walksBeforeHeads -= 1;
      return 'walk';
    }
    // Runs shorter than a share on average: more keys than the keyed rows fill at a share each.
    const keyed = rows.filter((row) => row.ordering_key !== null);
    const keys = new Set(keyed.map((row) => row.ordering_key)).size;
    return full && keys > Math.ceil(keyed.length / shape.share) ? 'heads' : 'walk';
  }
}

/**
 * Whether the walk after this claim takes each key's first share only
 * (DueClaimShape.sharesOnly): this claim was a full walk whose keyed rows alone, a share or less
 * of each key, took as many keys as fill a claim at a share each. The next walk over such a
 * backlog takes no second shares (they come only when the first fall short) and is seldom
 * caught up (only when every key it took ends at its share), and its plan is smaller without
 * the tests for either: over 10 keys x 500, 0.95x the server CPU per message and 1.02x to 1.04x
 * the rate (docs/benchmarks.md, "Walks of first shares only"). Coming back short, it is
 * partial, and the walk after it is whole again.
 */
function nextSharesOnly(shape: DueClaimShape, rows: readonly ClaimedRow[]): boolean {
  if (shape.keyed !== 'walk' || rows.length < shape.limit) return false;
  const perKey = new Map<string, number>();
  for (const { ordering_key: key } of rows) {
    if (key !== null) perKey.set(key, (perKey.get(key) ?? 0) + 1);
  }
  const taken = [...perKey.values()];
  return taken.length * shape.share >= shape.limit && taken.every((n) => n <= shape.share);
}
