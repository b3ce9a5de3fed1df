/**
 * The due claim as the store runs it: with the keyed half (the walk of the ordering keys,
 * claim-walk.ts) or, in a backlog with no message with an ordering key unfinished, without it.
 *
 * The keyed half is most of the claim statement's plan, and PostgreSQL starts every node of a
 * plan on every run, walked or not: a claim of 100 rows with no key anywhere cost 1.1 ms more
 * server CPU with it than without (about 11 µs a message, docs/benchmarks.md, scenario 1). So a
 * keyed claim also says whether any key is unfinished (`keyless`). After a full one that found
 * none, the claims leave keyed rows out while they come back full, each saying whether one is
 * unfinished now (`keyed_waiting`); the claim after one that does, or after a short one, walks
 * the keys again. An unkeyed claim that comes back short while a keyed row may wait (it says
 * so, or came back empty and so could not say) is `partial`: the drain claims again at once
 * instead of taking it for the end of what was due.
 */

import type { ClaimRequest, ClaimResult } from '../core/outbox-store.js';
import { type DueClaimShape, dueClaimParameters, dueClaimShape } from './due-claim-shape.js';
import { type ClaimedRow, claimResultFromRows } from './message-rows.js';

export class DueClaims {
  /**
   * The last claim came back full, and found no unfinished message with an ordering key: a
   * backlog without keys, where the next claim leaves them out. After a short claim the next
   * walks the keys, so a drain of a few messages makes the claims it always made.
   */
  private keyless = false;

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
    const rows = await this.run(this.texts(unkeyed), dueClaimParameters(request, shared, unkeyed));
    const full = rows.length >= request.limit;
    const keyedWaiting = rows.length === 0 || rows[0]!.keyed_waiting === true;
    this.keyless = full && !keyedWaiting;
    const result = claimResultFromRows(rows, request.claimToken);
    if (!full && keyedWaiting) result.partial = true;
    return result;
  }
}
