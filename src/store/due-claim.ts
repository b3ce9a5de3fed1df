/**
 * The due claim as the store runs it: with the keyed half (the walk of the ordering keys,
 * claim-walk.ts) or, while no message with an ordering key is unfinished, without it.
 *
 * The keyed half is most of the claim statement's plan, and PostgreSQL starts every node of a
 * plan on every run, walked or not: a claim of 100 rows with no key anywhere cost 1.1 ms more
 * server CPU with it than without (about 11 µs a message, docs/benchmarks.md, scenario 1).
 * Planning it costs more again, and a claim is planned on every run over Neon's HTTP driver and
 * on the first runs over each new connection: on a new connection, 5.6 to 6.2 ms against 2.0 to
 * 2.2 for the claim without it ("Idle ticks", docs/benchmarks.md).
 *
 * So every due claim says whether the next needs the walk: a keyed claim whether no message with
 * an ordering key is unfinished (`keyless`), an unkeyed one whether one is (`keyed_waiting`).
 * An unkeyed claim, and a store's first claim, come back with one row of nulls beside the flags
 * when they take nothing, so an empty one says it too (the others' rows skip the copy that
 * costs: a keyed claim that takes nothing keeps the walk). The claim after one that says a
 * keyed message waits walks the keys; an unkeyed claim that came back short while one waits is
 * `partial`, and the drain claims again at once instead of taking it for the end of what was
 * due.
 *
 * A store's first claim goes by what the last claim over its schema in this process said (none
 * yet: without the walk). A cron invocation builds a store per tick, so an idle outbox's tick
 * makes one claim without the walk, and an outbox whose keyed messages wait for days (in backoff,
 * or dead and kept) walks at once instead of paying a claim without it first on every tick.
 */

import type { ClaimRequest, ClaimResult } from '../core/outbox-store.js';
import { cursorOf, positionAfter, positionOf, positionText } from './claim-position.js';
import {
  type DueClaimShape,
  dueClaimParameters,
  dueClaimShape,
  type PositionedClaim,
} from './due-claim-shape.js';
import { type ClaimedRow, claimResultFromRows } from './message-rows.js';

/**
 * Whether the last due claim over each schema (by name) said a keyed message waits: where a
 * store's first claim starts. Past this many schemas, the kept ones are forgotten.
 */
const keyedWaitingBySchema = new Map<string, boolean>();
const SCHEMAS_KEPT = 64;

export class DueClaims {
  /** The next claim leaves keyed rows out: no message with an ordering key was unfinished. */
  private keyless: boolean;
  /** No claim yet. */
  private first = true;

  constructor(
    private readonly schema: string,
    private readonly texts: (shape: DueClaimShape) => string,
    private readonly run: (text: string, params: unknown[]) => Promise<readonly ClaimedRow[]>,
  ) {
    this.keyless = keyedWaitingBySchema.get(schema) !== true;
  }

  /**
   * `shared`: the claim's first five parameters (see claimStatement). The claim starts where
   * the request's position says (claim-position.ts), and says where the next resumes.
   */
  async claim(request: ClaimRequest, shared: readonly unknown[]): Promise<ClaimResult> {
    const walked = !this.keyless;
    const position = positionOf(request.resumeAt);
    const positioned: PositionedClaim = { ...request };
    const after = cursorOf(request, position);
    if (after) positioned.after = after;
    if (position.walkAfter !== undefined) positioned.walkAfter = position.walkAfter;
    const shape: DueClaimShape = {
      ...dueClaimShape(positioned),
      keyed: walked,
      answersWhenEmpty: !walked || this.first,
    };
    this.first = false;
    const answer = await this.run(this.texts(shape), dueClaimParameters(positioned, shared, shape));
    // One row of nulls beside the flags when a claim that answers when empty took none. An
    // empty claim that does not could not say: take it that a keyed message waits.
    const flags = answer[0];
    const rows = flags?.id == null ? [] : answer;
    const keyedWaiting = walked ? flags?.keyless !== true : flags?.keyed_waiting !== false;
    this.keyless = !keyedWaiting;
    if (keyedWaitingBySchema.size >= SCHEMAS_KEPT) keyedWaitingBySchema.clear();
    keyedWaitingBySchema.set(this.schema, keyedWaiting);
    const taken = claimResultFromRows(rows, request.claimToken);
    const { result } = taken;
    if (!walked && rows.length < request.limit && keyedWaiting) result.partial = true;
    if (taken.keysWalked !== undefined) result.tookRuns = true;
    result.resumeAt = positionText(positionAfter(position, after, taken));
    return result;
  }
}
