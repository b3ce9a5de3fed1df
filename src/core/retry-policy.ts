import { ConfigurationError } from './errors.js';

export interface BackoffOptions {
  /** The first retry waits this long; each later ceiling doubles. Default {@link DEFAULT_BACKOFF_BASE_MS}. */
  baseMs?: number;
  /** No retry waits longer. Default {@link DEFAULT_BACKOFF_CAP_MS}. */
  capMs?: number;
}

/** One second: a blip (a dropped connection, a 503 during a deploy) is usually over by then. */
export const DEFAULT_BACKOFF_BASE_MS = 1000;

/**
 * Fifteen minutes: long enough to stop hammering a provider that is down, short enough that
 * recovery is noticed within one typical cron period or two.
 */
export const DEFAULT_BACKOFF_CAP_MS = 15 * 60 * 1000;

/** The most a `Retry-After` hint may push a message back: a day, then it is the provider's bug. */
export const MAX_RETRY_AFTER_MS = 24 * 60 * 60 * 1000;

/**
 * How long to wait before attempt `attempt + 1`: exponential with full jitter, drawn uniformly
 * between the base and a ceiling of base * 2^(attempt - 1), capped. Jitter spreads retries of a
 * batch that failed together (one provider outage) so they do not return together. The floor
 * of one base keeps a retry from landing back in the same drain loop at once. A provider's
 * retry-after hint wins when it is later.
 */
export function backoffDelayMs(
  attempt: number,
  options: BackoffOptions,
  random: () => number,
  retryAfterMs?: number,
): number {
  const base = options.baseMs ?? DEFAULT_BACKOFF_BASE_MS;
  const cap = options.capMs ?? DEFAULT_BACKOFF_CAP_MS;
  const ceiling = Math.min(cap, base * 2 ** Math.min(Math.max(attempt - 1, 0), 40));
  const jittered = base >= ceiling ? ceiling : base + random() * (ceiling - base);
  const hinted =
    retryAfterMs !== undefined && Number.isFinite(retryAfterMs) && retryAfterMs > 0
      ? Math.min(retryAfterMs, MAX_RETRY_AFTER_MS)
      : 0;
  return Math.round(Math.max(jittered, hinted));
}

export function validateBackoff(options: BackoffOptions): void {
  const base = options.baseMs ?? DEFAULT_BACKOFF_BASE_MS;
  const cap = options.capMs ?? DEFAULT_BACKOFF_CAP_MS;
  if (!Number.isFinite(base) || base <= 0) {
    throw new ConfigurationError(`backoff.baseMs must be a positive number, got ${base}`);
  }
  if (!Number.isFinite(cap) || cap < base) {
    throw new ConfigurationError(`backoff.capMs must be at least baseMs (${base}), got ${cap}`);
  }
}
