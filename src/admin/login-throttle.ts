/**
 * Throttles wrong admin tokens, never the operator. A token is compared first (in constant
 * time); the right token is let in whatever the throttle holds. Only a wrong one meets it: a few
 * per client address are answered 401, then the address waits, the wait doubling with each
 * further wrong token; wrong tokens during the wait are answered 429 with `Retry-After` and do
 * not lengthen it.
 *
 * Why the right token is never refused: behind a proxy every client shares the proxy's address,
 * and a page in the operator's browser can send tokens too. A wait that refused every token
 * would let anyone who can reach the login lock the operator (or a Prometheus scraper) out with
 * a few wrong guesses. The cost of that choice: the throttle cannot slow a guesser who ignores
 * 429s, since every token is compared. What makes guessing hopeless is the token's length (32
 * or more random characters); the throttle makes guessing loud (every wrong token is logged with
 * its address) and tells clients that honour 429 to back off.
 *
 * The check and the record are one synchronous step after the comparison, so concurrent wrong
 * tokens cannot all be judged before any is counted: of any number arriving at once, at most
 * {@link FAILED_LOGIN_FREE_ATTEMPTS} + 1 are answered 401.
 *
 * The record lives in memory, per process on Node and per isolate on Workers and Lambda. Share
 * one {@link FailedLoginThrottle} between `outboxAdmin` and `adminBearerAuth` so every route
 * that takes the admin token counts against the same record.
 */
import { type Clock, systemClock } from '../core/ports.js';

/** Wrong tokens answered 401 before any wait: a typo or two should read as a typo. */
export const FAILED_LOGIN_FREE_ATTEMPTS = 3;

/** The first wait, after the free attempts; each further wrong token doubles it. */
export const FAILED_LOGIN_BASE_DELAY_MS = 1_000;

/** The longest wait: 15 minutes, long enough to mark a sustained guesser in every log line. */
export const FAILED_LOGIN_MAX_DELAY_MS = 15 * 60 * 1000;

/**
 * Addresses remembered at once. Past it the oldest record is dropped: memory stays bounded when
 * someone sends from very many addresses, at the cost of forgetting the quietest of them.
 */
export const FAILED_LOGIN_MAX_TRACKED = 10_000;

/** The key for requests whose client address is unknown: they share one record. */
export const UNKNOWN_CLIENT = 'unknown';

/** What the throttle says about one wrong token. */
export interface FailedLoginVerdict {
  /**
   * True when the address was already waiting: answer 429. False for a wrong token within the
   * allowance: answer 401 (it may have started a wait; `waitMs` says how long).
   */
  throttled: boolean;
  /** Ms the address must still wait before its next wrong token is answered 401. */
  waitMs: number;
}

interface FailureRecord {
  failures: number;
  /** Epoch ms before which wrong tokens are answered 429. */
  blockedUntil: number;
  lastFailureAt: number;
}

/**
 * The wrong-token record per client address. Pass one to `outboxAdmin({ throttle })` and to
 * `adminBearerAuth(token, { throttle })` to count both against the same record.
 *
 * @example
 * import { adminBearerAuth, FailedLoginThrottle, outboxAdmin } from 'outbox-relay/admin';
 *
 * const throttle = new FailedLoginThrottle();
 * app.route('/admin', outboxAdmin({ store, token: env.ADMIN_TOKEN, throttle }));
 * app.post('/internal/reindex', adminBearerAuth(env.ADMIN_TOKEN, { throttle }), (c) =>
 *   c.text('reindexing'),
 * );
 */
export class FailedLoginThrottle {
  private readonly records = new Map<string, FailureRecord>();

  constructor(private readonly clock: Clock = systemClock) {}

  /**
   * Judges a wrong token from `address` and counts it unless the address is already waiting.
   * Call it after the comparison, with no await between this and the decision it returns.
   */
  recordFailure(address: string): FailedLoginVerdict {
    const now = this.clock.now().getTime();
    let record = this.records.get(address);
    // Quiet for twice the longest wait since its last failure: start it afresh.
    if (record && now - record.lastFailureAt > FAILED_LOGIN_MAX_DELAY_MS * 2) {
      this.records.delete(address);
      record = undefined;
    }
    if (record && record.blockedUntil > now) {
      return { throttled: true, waitMs: record.blockedUntil - now };
    }
    record ??= { failures: 0, blockedUntil: 0, lastFailureAt: 0 };
    record.failures += 1;
    record.lastFailureAt = now;
    const over = record.failures - FAILED_LOGIN_FREE_ATTEMPTS;
    const delay =
      over <= 0
        ? 0
        : Math.min(
            FAILED_LOGIN_MAX_DELAY_MS,
            FAILED_LOGIN_BASE_DELAY_MS * 2 ** Math.min(over - 1, 30),
          );
    record.blockedUntil = now + delay;
    // Re-insert so the Map's order is least recently failed first.
    this.records.delete(address);
    this.records.set(address, record);
    if (this.records.size > FAILED_LOGIN_MAX_TRACKED) {
      const oldest = this.records.keys().next().value;
      if (oldest !== undefined) this.records.delete(oldest);
    }
    return { throttled: false, waitMs: delay };
  }
}
