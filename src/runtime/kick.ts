/**
 * The after-commit kick: deliver what a request just wrote, right after its transaction
 * commits, instead of waiting for the next scheduled drain. It goes through the same claim as
 * the schedule, so a kick and a scheduled drain never both send one message, and a kick that
 * fails or runs out of time loses nothing: its rows stay due for the schedule.
 */
import type { Context } from 'hono';
import { describeError } from '../core/errors.js';
import type { Logger } from '../core/ports.js';
import type { Drainer } from './drainer.js';

/**
 * 5 s for a kick: enough to send a handful of messages to a healthy provider, well inside a
 * Worker's post-response `waitUntil` window. Whatever it leaves, the schedule picks up.
 */
export const DEFAULT_KICK_BUDGET_MS = 5_000;

export interface KickOptions {
  /** Time the kick may take. Default {@link DEFAULT_KICK_BUDGET_MS}. */
  budgetMs?: number;
  /** Subrequests the kick may spend (Workers: what the request has left of its limit). */
  subrequestBudget?: number;
  /** Told when a kick fails (the schedule will deliver); default: nothing. */
  logger?: Logger;
}

/**
 * Starts a drain of `keys` without delaying the response. Call it after your transaction
 * committed, with the keys `enqueue` returned. On Workers the drain runs in
 * `c.executionCtx.waitUntil`, which keeps the invocation alive after the response; on Node it
 * simply runs on; on Lambda wrap the app with `awaitBackgroundWork` (outbox-relay/aws-lambda)
 * so the handler waits for it before the sandbox is frozen.
 *
 * @example
 * app.post('/signups', async (c) => {
 *   const keys = await signUp(c);           // domain write + outbox.enqueue, committed
 *   kickAfterCommit(c, drain, keys);
 *   return c.json({ ok: true }, 201);
 * });
 */
export function kickAfterCommit(
  c: Pick<Context, 'executionCtx'>,
  drain: Drainer,
  keys: readonly string[],
  options: KickOptions = {},
): void {
  if (keys.length === 0) return;
  const kick = drain({
    keys,
    maxMessages: keys.length,
    budgetMs: options.budgetMs ?? DEFAULT_KICK_BUDGET_MS,
    subrequestBudget: options.subrequestBudget,
  }).catch((error: unknown) => {
    options.logger?.warn('kick failed; the schedule will deliver', { error: describeError(error) });
  });
  try {
    c.executionCtx.waitUntil(kick);
  } catch {
    // No execution context (Node, tests): nothing to extend; the promise runs on.
  }
}
