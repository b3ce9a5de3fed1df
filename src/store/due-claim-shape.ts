/**
 * The shape of a due claim (what its text depends on) and its parameters, numbered by shape:
 * the five every claim shares, then only those its text reads, so no text reads a parameter
 * just to give it a type.
 */
import { MAX_MESSAGE_ID } from '../core/message-id.js';
import type { ClaimRequest } from '../core/outbox-store.js';
import type { ClaimCursor } from './claim-position.js';

/** A due claim's request, with where it starts (see claim-position.ts). */
export interface PositionedClaim extends ClaimRequest {
  /** Claim only rows after this one in due order (the claim's cursor). */
  after?: ClaimCursor;
  /** Start the walk of the ordering keys after this key (none: at the first). */
  walkAfter?: string;
  /**
   * Rows the store's claims on the wire from this cursor or one before it may take: the scan
   * starts that many unfinished rows past the cursor (claim-cursor.ts; DueClaims.claim).
   */
  skip?: number;
}

/** How a due claim takes rows with an ordering key (DueClaimShape.keyed). */
export type KeyedRows = 'walk' | 'heads' | 'none';

/** What shapes a due claim's text: its limit, a key's share, a cursor, probes, keyed rows. */
export interface DueClaimShape {
  limit: number;
  /** Rows one ordering key may take before every other key has had its turn. */
  share: number;
  /**
   * Reads a cursor and scans the due order after it first (claimStatement). In a backlog every
   * claim does: one that scans from the start reads a cursor past every row (see dueClaimShape).
   */
  after: boolean;
  probe?: boolean;
  /**
   * How rows with an ordering key are taken (see DueClaims, due-claim.ts). `walk` (the
   * default): as runs, by a walk of the keys (claim-walk.ts). `heads`: in due order with the
   * unkeyed rows, each only while it is its key's head, within a window (claim-heads.ts).
   * `none`: unkeyed rows only, for a backlog with no message with an ordering key unfinished;
   * the rows then say whether one is now.
   */
  keyed?: KeyedRows;
  /**
   * Comes back with one row of nulls beside its flags when it takes nothing, so an empty claim
   * still says whether the next needs the walk (see DueClaims). It costs every row taken a copy
   * (the update's rows go through a CTE), so only the claims likely to find nothing ask for it.
   * Default false.
   */
  answersWhenEmpty?: boolean;
  /**
   * A walk that takes each key's first share and no more (no second shares when the keys fall
   * short of the limit), and does not say whether it caught up: the walk for a backlog deep in
   * as many keys as fill a claim at a share each, where neither would act, and whose plan is
   * smaller without them (see nextSharesOnly, due-claim.ts). Coming back short, it is partial.
   * Default false.
   */
  sharesOnly?: boolean;
}

/**
 * The shape of the due claim a drain's request asks for.
 *
 * In a backlog, a claim that scans the due order from the start (every fourth, see
 * claim-position.ts) runs the text the claims at a cursor run, with a cursor past every row: its
 * scan after the cursor finds nothing, and the scan up to it reads from the start, as the text
 * without a cursor would. One text instead of two per way of taking keyed rows: PostgreSQL plans
 * each prepared text five times on every connection before it keeps a generic plan, and over
 * 1,000 keys the claims from the start were a second text planned on every run (13 plans in 13
 * runs in a drain of 5,000; docs/benchmarks.md, "Heads stay heads over many keys; one claim text
 * per backlog"). So do the claims after a backlog, once a claim of the same store ran a text with
 * a cursor (`cursorTextRun`): the short and empty claims that end a drain had each planned the
 * text without one, over 10 keys the walk's twice a drain (6 ms). Outside a backlog until then
 * (a tick's first claim, an idle outbox) the text without a cursor stays: it is planned in
 * 0.26 ms against 0.45 with one, and over Neon's HTTP driver every claim is planned.
 */
export function dueClaimShape(request: PositionedClaim, cursorTextRun = false): DueClaimShape {
  const { limit, keyShare = limit } = request;
  return {
    limit,
    share: Math.min(limit, Math.max(1, keyShare)),
    after: request.after !== undefined || request.backlog === true || cursorTextRun,
    probe: request.probe === true,
  };
}

/** A cursor no row lies after: its due time is PostgreSQL's `infinity`, its id the largest. */
const PAST_EVERY_ROW = { dueAt: 'infinity', id: String(MAX_MESSAGE_ID) } as const;

/** What a due claim passes after the five every claim shares, each read from the request. */
const DUE_PARAMETERS = {
  /** The ordering key the walk starts after (null: the first). */
  walkStart: (request: PositionedClaim) => request.walkAfter ?? null,
  /** The runs the drain holds (ClaimRequest.holding): their keys, first and last rows... */
  heldKeys: (request: PositionedClaim) => (request.holding ?? []).map((run) => run.orderingKey),
  heldFirst: (request: PositionedClaim) => (request.holding ?? []).map((run) => run.firstId),
  heldLast: (request: PositionedClaim) => (request.holding ?? []).map((run) => run.lastId),
  /** ...and the tokens their last rows are claimed under. */
  heldTokens: (request: PositionedClaim) => (request.holding ?? []).map((run) => run.lastToken),
  /**
   * The cursor: the due time and id of the last unkeyed row an earlier claim took; past every
   * row when there is none (see dueClaimShape).
   */
  cursorDue: (request: PositionedClaim) => request.after?.dueAt ?? PAST_EVERY_ROW.dueAt,
  cursorId: (request: PositionedClaim) => request.after?.id ?? PAST_EVERY_ROW.id,
  /** Unfinished rows after the cursor the scan steps past (PositionedClaim.skip; 0: none). */
  cursorSkip: (request: PositionedClaim) => request.skip ?? 0,
} as const;

type DueParameter = keyof typeof DUE_PARAMETERS;

/** The parameters a due claim's text reads after the shared five, in the order numbered. */
function dueParameterNames(shape: DueClaimShape): DueParameter[] {
  return [
    ...((shape.keyed ?? 'walk') === 'walk'
      ? (['walkStart', 'heldKeys', 'heldFirst', 'heldLast', 'heldTokens'] as const)
      : []),
    ...(shape.after ? (['cursorDue', 'cursorId'] as const) : []),
    ...(cursorSteps(shape) ? (['cursorSkip'] as const) : []),
  ];
}

/**
 * Whether a claim of this shape may start past the rows of claims on the wire
 * (PositionedClaim.skip, claim-cursor.ts): one after a cursor that does not walk the keys (walks
 * go one claim at a time).
 */
export function cursorSteps(shape: DueClaimShape): boolean {
  return shape.after && (shape.keyed ?? 'walk') !== 'walk';
}

/** A due claim's placeholder for one of its own parameters: `$6` onwards, by shape. */
export function dueParameter(shape: DueClaimShape, name: DueParameter): string {
  const index = dueParameterNames(shape).indexOf(name);
  if (index < 0) throw new Error(`a ${JSON.stringify(shape)} due claim passes no ${name}`);
  return `$${6 + index}`;
}

/**
 * The parameters every claim starts with, $1 to $5 (claimStatement, claim-statements.ts): now,
 * the claim token, the lease, whether dead heads block, the kinds.
 */
export function sharedClaimParameters(request: ClaimRequest): unknown[] {
  const { now, claimToken, leaseMs, deadHeadBlocks, kinds } = request;
  return [now, claimToken, leaseMs, deadHeadBlocks, [...kinds]];
}

/** The due claim's parameters: `shared` ($1 to $5), then those its shape reads. */
export function dueClaimParameters(
  request: PositionedClaim,
  shared: readonly unknown[],
  shape: DueClaimShape,
): unknown[] {
  return [...shared, ...dueParameterNames(shape).map((name) => DUE_PARAMETERS[name](request))];
}

/**
 * What every due claim's text ends with: a comment naming its shape, so pg_stat_statements, the
 * server's log and anything that watches the statements (the bench, the tests) can tell the ways
 * of claiming apart without reading the SQL. At the end, where pg_stat_statements keeps it (a
 * comment ahead of the first word is left out of the statement it records).
 */
const DUE_CLAIM_MARK = 'outbox-relay due claim:';

/** A due claim's shape as its text's last comment names it: `walk after shares 100/10`. */
export function dueClaimName(shape: DueClaimShape): string {
  const { limit, share, after, probe = false, keyed = 'walk' } = shape;
  const { answersWhenEmpty = false, sharesOnly = false } = shape;
  return `${keyed}${after ? ' after' : ''}${probe ? ' probe' : ''}${answersWhenEmpty ? ' answers' : ''}${sharesOnly ? ' shares' : ''} ${limit}/${share}`;
}

/**
 * The shape of the due claim whose text this is, as far as the comment it ends with names it
 * (see DUE_CLAIM_MARK): how it takes rows with an ordering key, whether it reads a cursor, and
 * whether it is a walk of first shares only. Undefined for any other statement.
 */
export function dueClaimNamed(
  text: string,
): { keyed: KeyedRows; after: boolean; sharesOnly: boolean } | undefined {
  const opening = `/* ${DUE_CLAIM_MARK} `;
  const at = text.lastIndexOf(opening);
  if (at < 0) return undefined;
  const words = text.slice(at + opening.length).split(' ');
  const keyed = words[0];
  if (keyed !== 'walk' && keyed !== 'heads' && keyed !== 'none') return undefined;
  return { keyed, after: words[1] === 'after', sharesOnly: words.includes('shares') };
}

/** The comment a due claim's text ends with (see DUE_CLAIM_MARK). */
export function dueClaimMark(shape: DueClaimShape): string {
  return `/* ${DUE_CLAIM_MARK} ${dueClaimName(shape)} */`;
}
