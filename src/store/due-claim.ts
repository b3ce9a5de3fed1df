/**
 * The due claim as the store runs it: with the keyed half (the walk of the ordering keys,
 * claim-walk.ts) or, while no message with an ordering key is unfinished, without it.
 *
 * The keyed half is most of the claim statement's plan, and PostgreSQL starts every node of a
 * plan on every run, walked or not: a claim of 100 rows with no key anywhere cost 1.1 ms more
 * server CPU with it than without (about 11 µs a message, docs/benchmarks.md, scenario 1). Its
 * planning costs more again: about 2 ms against 0.4 for the claim without it, paid on every
 * claim over Neon's HTTP driver and on the first claims of every new connection, so on every
 * idle cron tick. So a store's first claim leaves keyed rows out, and says whether one is
 * unfinished (`keyed_waiting`; the unkeyed claim returns one row of nulls when it took none, so
 * an empty claim says it too). The claim after one that says so walks the keys, and one that
 * came back short while a keyed row waits is `partial`: the drain claims again at once instead
 * of taking it for the end of what was due. A keyed claim in turn says whether any key is
 * unfinished (`keyless`); after a full one that found none, the claims leave keyed rows out
 * again.
 */

import type { ClaimRequest, ClaimResult } from '../core/outbox-store.js';
import { type DueClaimShape, dueClaimParameters, dueClaimShape } from './due-claim-shape.js';
import { type ClaimedRow, claimResultFromRows } from './message-rows.js';

export class DueClaims {
  /**
   * No message with an ordering key was unfinished as of the last claim (or none has been made):
   * the next claim leaves keyed rows out.
   */
  private keyless = true;

  constructor(
    private readonly texts: (shape: DueClaimShape) => string,
    private readonly run: (text: string, params: unknown[]) => Promise<readonly ClaimedRow[]>,
  ) {}

  /** `shared`: the claim's first five parameters (see claimStatement). */
  async claim(request: ClaimRequest, shared: readonly unknown[]): Promise<ClaimResult> {
    const shape = dueClaimShape(request);
    if (!this.keyless) {
      const rows = await this.run(this.texts(shape), dueClaimParameters(request, shared, shape));
      this.keyless = rows.length >= request.limit && rows[0]!.keyless === true;
      return claimResultFromRows(rows, request.claimToken);
    }
    const unkeyed: DueClaimShape = { ...shape, keyed: false };
    const answer = await this.run(
      this.texts(unkeyed),
      dueClaimParameters(request, shared, unkeyed),
    );
    // One row of nulls but the flag when the claim took none.
    const rows = answer[0]?.id == null ? [] : answer;
    // No row at all (which the statement does not return) could not say: take it that one waits.
    const keyedWaiting = answer[0]?.keyed_waiting !== false;
    this.keyless = !keyedWaiting;
    const result = claimResultFromRows(rows, request.claimToken);
    if (rows.length < request.limit && keyedWaiting) result.partial = true;
    return result;
  }
}
