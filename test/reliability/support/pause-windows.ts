/**
 * A paused destination's windows, and what reached it in each: the one-destination-down
 * scenario's check that a paused receiver gets at most one probe per pause, beyond the sends
 * that were already out when the pause began.
 *
 * Every time here is one process's wall clock (Date.now()): the drains run in the test's
 * process with the system clock, so a claim's and a settle's `now` (a pause's paused_at and
 * paused_until) and the receivers' arrival times are all read from it.
 *
 * A change takes effect when its settle commits, somewhere between the `now` the settle was
 * given and its return, and a claim reads the destination as of its statement's start,
 * somewhere between its call and its return. So a claim is counted inside a window only when
 * it could not have seen the destination otherwise: called after the settle that opened the
 * pause returned, and, when the window ends with a resume, returned before that settle's `now`.
 * A claim that overlaps an edge is a race with the change, and is out when either side allows it.
 */
import type { DestinationChange } from '../../../src/core/destination-health.js';

/** A change a settle returned: the settle's `now`, and when it returned (after its commit). */
export interface SettledChange {
  change: DestinationChange;
  now: number;
  settledAt: number;
}

/** One claim of one of the destination's messages. */
export interface DestinationClaim {
  key: string;
  attempt: number;
  /** The claim's `now`, which its statement compares with `paused_until`. */
  now: number;
  /** When the store was called, and when it returned. */
  startedAt: number;
  returnedAt: number;
}

/**
 * One try to reach the receiver: a request it logged (its attempt unknown there), or a send
 * that never reached a request handler (refused or reset), with the attempt the drain gave it.
 */
export interface Contact {
  at: number;
  key: string;
  attempt?: number;
}

/** One pause, from its settle to the next pause's settle (its probe failed) or the resume. */
export interface PauseWindow {
  /** When the settle that opened it returned: every claim called later sees the pause. */
  openedAt: number;
  /** When the settle said it ends (a Retry-After from a send already out may lengthen it). */
  pausedUntil: number;
  pausedBy: string | null;
  /** The next pause's settle's return, the resume's settle's `now`, or the end of the run. */
  endedAt: number;
  endedBy: 'paused' | 'resumed' | 'end of run';
}

/** What one window saw. */
export interface WindowFigures extends PauseWindow {
  /** The destination's messages claimed in the window: its probe, at most one. */
  claims: DestinationClaim[];
  /** Tries on the receiver by those claims: at most one. */
  contactsBeyondInFlight: number;
  /** Tries on the receiver in the window by sends claimed before it opened (out when it began). */
  inFlight: number;
}

/** The windows of one destination, in order, from the changes its settles returned. */
export function pauseWindows(changes: readonly SettledChange[], endOfRun: number): PauseWindow[] {
  const ordered = [...changes].sort((a, b) => a.settledAt - b.settledAt);
  const windows: PauseWindow[] = [];
  for (const [index, { change, settledAt }] of ordered.entries()) {
    if (change.change !== 'paused') continue;
    const next = ordered[index + 1];
    windows.push({
      openedAt: settledAt,
      pausedUntil: change.pausedUntil?.getTime() ?? Number.POSITIVE_INFINITY,
      pausedBy: change.pausedBy,
      endedAt:
        next === undefined ? endOfRun : next.change.change === 'paused' ? next.settledAt : next.now,
      endedBy: next?.change.change ?? 'end of run',
    });
  }
  return windows;
}

/**
 * Whether a claim could only have read the destination as this window has it. Times are whole
 * milliseconds, so a claim in the same millisecond as an edge is counted as a race (out).
 */
function claimedInside(claim: DestinationClaim, window: PauseWindow): boolean {
  if (claim.startedAt <= window.openedAt) return false;
  return window.endedBy === 'resumed'
    ? claim.returnedAt < window.endedAt
    : claim.startedAt < window.endedAt;
}

/**
 * Each contact's claim: by attempt where the drain knew it, else the key's latest claim that
 * started before the request arrived (a key is claimed again only once its last send is
 * settled). Throws for a contact no claim explains: something reached the receiver that no
 * drain sent.
 */
export function claimsOfContacts(
  contacts: readonly Contact[],
  claims: readonly DestinationClaim[],
): { contact: Contact; claim: DestinationClaim }[] {
  const byKey = new Map<string, DestinationClaim[]>();
  for (const claim of [...claims].sort((a, b) => a.startedAt - b.startedAt)) {
    const list = byKey.get(claim.key) ?? [];
    list.push(claim);
    byKey.set(claim.key, list);
  }
  const seen = new Set<string>();
  const matched: { contact: Contact; claim: DestinationClaim }[] = [];
  for (const contact of contacts) {
    const list = byKey.get(contact.key) ?? [];
    const claim =
      contact.attempt === undefined
        ? list.findLast((each) => each.startedAt <= contact.at)
        : list.find((each) => each.attempt === contact.attempt);
    if (!claim) throw new Error(`a request for ${contact.key} that no claim explains`);
    // A send the receiver logged and whose answer it then lost (its connection cut as it stopped
    // listening) shows on both sides: one try.
    const id = `${claim.key}/${claim.attempt}`;
    if (seen.has(id)) continue;
    seen.add(id);
    matched.push({ contact, claim });
  }
  return matched;
}

/** Per window: the claims made in it, and the tries on the receiver, split by when claimed. */
export function windowFigures(
  windows: readonly PauseWindow[],
  claims: readonly DestinationClaim[],
  contacts: readonly { contact: Contact; claim: DestinationClaim }[],
): WindowFigures[] {
  return windows.map((window) => ({
    ...window,
    claims: claims.filter((claim) => claimedInside(claim, window)),
    contactsBeyondInFlight: contacts.filter(({ claim }) => claimedInside(claim, window)).length,
    inFlight: contacts.filter(
      ({ contact, claim }) =>
        claim.startedAt < window.openedAt &&
        contact.at >= window.openedAt &&
        contact.at < window.endedAt,
    ).length,
  }));
}
