/**
 * Slows down token guessing: after a few wrong tokens from one client address, that address must
 * wait before its next attempt, and the wait doubles with each further wrong token. Attempts
 * during the wait are refused (429 with `Retry-After`) without looking at the token, so guessing
 * gains nothing from trying faster; a right token after the wait clears the record.
 *
 * Refusing instead of sleeping keeps no request (and no Worker CPU) waiting. The record lives in
 * memory, per process on Node and per isolate on Workers and Lambda: a spread-out attacker meets
 * several counters, each still growing. That bounds guessing well enough for a long random token;
 * the token's length is the real defence.
 */
import type { Clock } from '../core/ports.js';

/** Wrong tokens allowed before any wait: a typo or two should not lock an operator out. */
export const FAILED_LOGIN_FREE_ATTEMPTS = 3;

/** The first wait, after the free attempts; each further wrong token doubles it. */
export const FAILED_LOGIN_BASE_DELAY_MS = 1_000;

/** The longest wait: 15 minutes still stops guessing while a real operator can wait it out. */
export const FAILED_LOGIN_MAX_DELAY_MS = 15 * 60 * 1000;

/**
 * Addresses remembered at once. Past it the oldest record is dropped: memory stays bounded when
 * someone sends from very many addresses, at the cost of forgetting the quietest of them.
 */
export const FAILED_LOGIN_MAX_TRACKED = 10_000;

/** The key for requests whose client address is unknown: they share one record. */
export const UNKNOWN_CLIENT = 'unknown';

interface FailureRecord {
  failures: number;
  /** Epoch ms before which attempts are refused. */
  blockedUntil: number;
  lastFailureAt: number;
}

export class FailedLoginThrottle {
  private readonly records = new Map<string, FailureRecord>();

  constructor(private readonly clock: Clock) {}

  /** Ms this address must still wait before its token is even checked; 0 when it may try. */
  waitMs(address: string): number {
    const record = this.records.get(address);
    if (!record) return 0;
    const now = this.clock.now().getTime();
    // Quiet for the longest wait since its last failure: start it afresh.
    if (now - record.lastFailureAt > FAILED_LOGIN_MAX_DELAY_MS * 2) {
      this.records.delete(address);
      return 0;
    }
    return Math.max(0, record.blockedUntil - now);
  }

  /** Counts a wrong token; returns the wait it imposes (0 while within the free attempts). */
  recordFailure(address: string): number {
    const now = this.clock.now().getTime();
    const record = this.records.get(address) ?? { failures: 0, blockedUntil: 0, lastFailureAt: 0 };
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
    return delay;
  }

  /** A right token: this address starts afresh. */
  recordSuccess(address: string): void {
    this.records.delete(address);
  }
}
