/**
 * Where a drain's due claims resume (ClaimRequest.resumeAt): the store's own, opaque to the
 * drain, which passes back what its last claim to land returned. It holds where the walk of the
 * ordering keys starts, the cursor in due order, and how many claims started at the cursor since
 * one scanned from the start.
 */
import { compareMessageIds } from '../core/message-id.js';
import type { ClaimRequest } from '../core/outbox-store.js';

/** A row's place in due order: due time, then id. */
export interface ClaimCursor {
  dueAt: Date;
  id: string;
}

export interface ClaimPosition {
  /** The last row without an ordering key a claim took, claimed or set aside, in due order. */
  cursor?: ClaimCursor;
  /**
   * The ordering key the last walk took a run of last: the next walk starts after it, so keys
   * late in key order get their turn before early ones come round again.
   */
  walkAfter?: string;
  /** Claims that started at the cursor since the last that scanned from the start. */
  fromCursor: number;
}

/**
 * While a drain claims a backlog (its last claim came back full), each claim starts its scan
 * after the last row the drain claimed, by due time and id, and every fourth scans from the start
 * of the due order instead, for what came due behind the cursor: an ordering key's next message
 * once its head is delivered, a lease that ran out, a row released unsent. A claim after the
 * cursor that does not fill its batch takes rows from the start as well, so a short claim still
 * means nothing more was due.
 *
 * A scan from the start steps over every row at the head of the due order that it cannot take:
 * the rows this drain has claimed and not yet settled (queued, being sent, in a settle write;
 * several hundred in a fast drain), and the index entries of rows settle deleted, which stay
 * until a vacuum. In no-op drains of 30,000 (batch 100, 10 in flight) the claims' index scans
 * visited 6.1 to 6.6 heap rows per row claimed; starting at the cursor, 3.3 to 3.7
 * (docs/benchmarks.md, "The claim's cursor").
 */
export const CLAIMS_PER_FULL_SCAN = 4;

const START: ClaimPosition = Object.freeze({ fromCursor: 0 });

/**
 * The position a claim resumes at (ClaimRequest.resumeAt). The drain passes back only what this
 * store returned; what does not read as one (another version's, say) starts from the start,
 * which every claim may.
 */
export function positionOf(resumeAt: string | undefined): ClaimPosition {
  if (resumeAt === undefined) return START;
  let parts: unknown;
  try {
    parts = JSON.parse(resumeAt);
  } catch {
    return START;
  }
  if (!Array.isArray(parts) || parts.length !== 4) return START;
  const [dueMs, id, walkAfter, fromCursor] = parts as unknown[];
  const position: ClaimPosition = {
    fromCursor: Number.isSafeInteger(fromCursor) ? (fromCursor as number) : 0,
  };
  if (Number.isFinite(dueMs) && typeof id === 'string' && /^[1-9]\d{0,18}$/.test(id)) {
    position.cursor = { dueAt: new Date(dueMs as number), id };
  }
  if (typeof walkAfter === 'string') position.walkAfter = walkAfter;
  return position;
}

/** The position as ClaimResult.resumeAt carries it: what positionOf reads back. */
export function positionText(position: ClaimPosition): string {
  const { cursor, walkAfter, fromCursor } = position;
  return JSON.stringify([
    cursor ? cursor.dueAt.getTime() : null,
    cursor ? cursor.id : null,
    walkAfter ?? null,
    fromCursor,
  ]);
}

/** Which of two rows comes later in due order: above 0 when `a` does. */
export function compareCursors(a: ClaimCursor, b: ClaimCursor): number {
  return a.dueAt.getTime() - b.dueAt.getTime() || compareMessageIds(a.id, b.id);
}

/** Where a due claim's scan of the due order starts: in a backlog, at the cursor but every fourth. */
export function cursorOf(request: ClaimRequest, position: ClaimPosition): ClaimCursor | undefined {
  return request.backlog === true && position.fromCursor < CLAIMS_PER_FULL_SCAN - 1
    ? position.cursor
    : undefined;
}

/**
 * Where the claim after this one resumes: after the last row it took (where it took none, the
 * cursor it had), after the key its walk took last (where it took no run, the key it had).
 */
export function positionAfter(
  position: ClaimPosition,
  after: ClaimCursor | undefined,
  taken: { last?: ClaimCursor; keysWalked?: string },
): ClaimPosition {
  const next: ClaimPosition = { fromCursor: after ? position.fromCursor + 1 : 0 };
  const cursor = taken.last ?? position.cursor;
  if (cursor) next.cursor = cursor;
  const walkAfter = taken.keysWalked ?? position.walkAfter;
  if (walkAfter !== undefined) next.walkAfter = walkAfter;
  return next;
}
