/**
 * Destination health (docs/destinations.md): the rules by which drains pause a receiver that is
 * down, and what a settle reports when one pauses or recovers. The state itself lives in the
 * database, where every drain (each a short cron invocation with no memory of the last) reads
 * it: the claim passes over a paused destination's messages, and the settle counts failures.
 */
import { ConfigurationError } from './errors.js';
import { MAX_RETRY_AFTER_MS } from './retry-policy.js';

/** When drains pause a destination, and for how long. */
export interface DestinationHealthPolicy {
  /**
   * Retryable failures in a row (no delivery between, across all drains) that pause the
   * destination. Default {@link DEFAULT_FAILURES_TO_PAUSE}.
   */
  failuresToPause: number;
  /** The first pause, ms; each pause in a row without a delivery between lasts twice the last. */
  pauseMs: number;
  /** No breaker pause lasts longer, ms. A receiver's Retry-After may ask for more, up to a day. */
  maxPauseMs: number;
}

/**
 * Five: one or two failures are the blips retries are for; five in a row with no delivery
 * between, from every drain together, is a receiver that is down, and each send after them would
 * take a lane, a subrequest and the receiver's recovery time for nothing.
 */
export const DEFAULT_FAILURES_TO_PAUSE = 5;

/**
 * Thirty seconds: about a deploy's restart or a load balancer's health-check window, so a
 * receiver that was only restarting is probed soon after it is back.
 */
export const DEFAULT_PAUSE_MS = 30_000;

/**
 * Ten minutes: a receiver down for hours is probed six times an hour, and its recovery is seen
 * within one pause of it.
 */
export const DEFAULT_MAX_PAUSE_MS = 10 * 60_000;

export const DEFAULT_DESTINATION_HEALTH: DestinationHealthPolicy = Object.freeze({
  failuresToPause: DEFAULT_FAILURES_TO_PAUSE,
  pauseMs: DEFAULT_PAUSE_MS,
  maxPauseMs: DEFAULT_MAX_PAUSE_MS,
});

/**
 * The policy from a drain's options: defaults for what is not given, `false` for none (failures
 * are then not counted, and only an operator pauses a destination).
 */
export function destinationHealthPolicy(
  options: Partial<DestinationHealthPolicy> | false | undefined,
): DestinationHealthPolicy | false {
  if (options === false) return false;
  const policy = { ...DEFAULT_DESTINATION_HEALTH, ...options };
  if (!Number.isInteger(policy.failuresToPause) || policy.failuresToPause < 1) {
    throw new ConfigurationError(
      `destinationHealth.failuresToPause must be a whole number of at least 1, got ${policy.failuresToPause}`,
    );
  }
  if (
    !Number.isFinite(policy.pauseMs) ||
    policy.pauseMs < 1 ||
    policy.pauseMs > MAX_RETRY_AFTER_MS
  ) {
    throw new ConfigurationError(
      `destinationHealth.pauseMs must be from 1 to ${MAX_RETRY_AFTER_MS} ms, got ${policy.pauseMs}`,
    );
  }
  if (
    !Number.isFinite(policy.maxPauseMs) ||
    policy.maxPauseMs < policy.pauseMs ||
    policy.maxPauseMs > MAX_RETRY_AFTER_MS
  ) {
    throw new ConfigurationError(
      `destinationHealth.maxPauseMs must be from pauseMs (${policy.pauseMs}) to ${MAX_RETRY_AFTER_MS} ms, got ${policy.maxPauseMs}`,
    );
  }
  return policy;
}

/** Why a destination is paused. */
export type PauseCause = 'breaker' | 'retry-after' | 'operator';

/** One destination's health, as operators see it. */
export interface DestinationRecord {
  destination: string;
  /** closed: sent as usual; open: paused; half-open: the pause is over and one probe may go. */
  state: 'closed' | 'open' | 'half-open';
  /** Retryable failures since its last delivery. */
  failures: number;
  /** Pauses in a row without a delivery between. */
  pauses: number;
  pausedBy: PauseCause | null;
  pausedAt: Date | null;
  /** When the pause ends (a probe may go then); null when not paused; far future: until resumed. */
  pausedUntil: Date | null;
  /** A probe is out until then. */
  probeUntil: Date | null;
  lastError: string | null;
  lastFailureAt: Date | null;
  recoveredAt: Date | null;
  /** Messages waiting for it: pending or claimed. */
  waiting: number;
}

/** A destination that paused or recovered in one settle: logged, counted and passed to the hook. */
export interface DestinationChange {
  destination: string;
  change: 'paused' | 'resumed';
  /** Paused: why, and until when. */
  pausedBy: PauseCause | null;
  pausedUntil: Date | null;
  failures: number;
  lastError: string | null;
}
