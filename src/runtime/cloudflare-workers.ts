/**
 * Cloudflare Workers kit: the `scheduled` handler a Worker exports to drain (and purge) its
 * outbox on Cron Triggers. Import from `outbox-relay/cloudflare-workers`.
 *
 * Build the store over Neon's HTTP driver (`neonHttpExecutor(neon(env.DATABASE_URL))`): it
 * holds no connection, so nothing needs closing when the invocation ends, and one statement is
 * one subrequest, which is what the drain counts against its subrequest budget.
 *
 * @example
 * import { neon } from '@neondatabase/serverless';
 * import { createOutbox, neonHttpExecutor } from 'outbox-relay';
 * import { sesConfigFromEnv, sesSender } from 'outbox-relay/ses';
 * import { WORKERS_FREE_SUBREQUESTS, workersScheduledHandler } from 'outbox-relay/cloudflare-workers';
 *
 * const outbox = createOutbox();
 * export default {
 *   fetch: app.fetch,
 *   scheduled: workersScheduledHandler((env: Env) => ({
 *     store: outbox.store(neonHttpExecutor(neon(env.DATABASE_URL))),
 *     senders: { email: sesSender(sesConfigFromEnv(env)) },
 *   }), { subrequestBudget: WORKERS_FREE_SUBREQUESTS }),
 * };
 */
import type { ExecutionContext } from 'hono';
import type { DrainResume } from '../core/drain-settings.js';
import { ConfigurationError } from '../core/errors.js';
import type { DrainerOptions } from './drainer.js';
import { runScheduledDrain } from './drainer.js';
import { logFailure, logReport } from './json-log.js';

/** What the Workers runtime passes as `ctx`: Hono's structural copy of it. */
export type WorkerExecutionContext = ExecutionContext;

/** What a Cron Trigger invocation receives as `controller`. */
export interface WorkerScheduledController {
  /** The cron expression that fired, exactly as written in wrangler.toml. */
  readonly cron: string;
  readonly scheduledTime: number;
}

/**
 * Subrequests (fetches, including each Neon HTTP query and each send) per invocation on the
 * Workers Free plan. A drain over this fails at the 51st, possibly its settle.
 */
export const WORKERS_FREE_SUBREQUESTS = 50;

/**
 * Subrequests per invocation on Workers Paid, by default (`limits.subrequests` in
 * wrangler.toml can lower or raise it).
 */
export const WORKERS_PAID_SUBREQUESTS = 10_000;

/**
 * 45 s per scheduled drain: three quarters of a one-minute cron interval, so invocations rarely
 * overlap (harmless when they do: the claim sees to that), and far inside the 15-minute
 * wall-clock limit of a Cron Trigger invocation.
 */
export const DEFAULT_WORKERS_DRAIN_BUDGET_MS = 45_000;

/**
 * The cron that purges instead of draining, in its own invocation with its own subrequests:
 * minute 30 of every hour. It must match a cron in wrangler.toml character for character.
 */
export const DEFAULT_PURGE_CRON = '30 * * * *';

export interface WorkersScheduledOptions {
  /**
   * Subrequests this invocation may spend: your plan's limit. Required, because the plans
   * differ 200-fold and guessing high fails mid-drain: {@link WORKERS_FREE_SUBREQUESTS} or
   * {@link WORKERS_PAID_SUBREQUESTS} (or your `limits.subrequests`).
   */
  subrequestBudget: number;
  /** Time each scheduled drain may take. Default {@link DEFAULT_WORKERS_DRAIN_BUDGET_MS}. */
  drainBudgetMs?: number;
  /** The cron that purges; `false` for none. Default {@link DEFAULT_PURGE_CRON}. */
  purgeCron?: string | false;
  /** Fields on the run's JSON log line. */
  logFields?: Record<string, unknown>;
}

/**
 * A Worker's `scheduled` handler: on the purge cron one `purgeOnce`, on any other cron one
 * bounded drain, logged as one JSON line. `setup` is called per invocation with the Worker's
 * `env` (cheap: build executors, not connections). A failed run throws, which marks the
 * invocation failed in the Cron Events log; rows it held keep their lease and the next
 * invocation takes them.
 */
export function workersScheduledHandler<Env>(
  setup: (env: Env, ctx: WorkerExecutionContext) => DrainerOptions | Promise<DrainerOptions>,
  options: WorkersScheduledOptions | ((env: Env) => WorkersScheduledOptions),
): (controller: WorkerScheduledController, env: Env, ctx: WorkerExecutionContext) => Promise<void> {
  // Where the last invocation's claims left off, while the isolate lives.
  const resume: DrainResume = {};
  return async (controller, env, ctx) => {
    const fields: Record<string, unknown> = {
      runtime: 'cloudflare-workers',
      cron: controller.cron,
    };
    try {
      const settings = typeof options === 'function' ? options(env) : options;
      Object.assign(fields, settings.logFields);
      checkSubrequestBudget(settings.subrequestBudget);
      const purgeCron = settings.purgeCron ?? DEFAULT_PURGE_CRON;
      // Awaited rather than handed to waitUntil: the invocation lasts as long as this promise.
      const result = await runScheduledDrain(
        { resume, ...(await setup(env, ctx)) },
        {
          budgetMs: settings.drainBudgetMs ?? DEFAULT_WORKERS_DRAIN_BUDGET_MS,
          subrequestBudget: settings.subrequestBudget,
          purge: purgeCron !== false && controller.cron === purgeCron ? 'instead' : undefined,
        },
      );
      if (result.drain) logReport('outbox drain', result.drain, fields);
      if (result.purge)
        logReport('outbox purge', result.purge, { ...fields, ...result.purgedWith });
    } catch (error) {
      logFailure('scheduled run failed', error, fields);
      throw error;
    }
  };
}

/** Three: a claim, a send and a settle. Anything less cannot deliver one message. */
const MIN_SUBREQUEST_BUDGET = 3;

function checkSubrequestBudget(budget: number): void {
  if (!Number.isInteger(budget) || budget < MIN_SUBREQUEST_BUDGET) {
    throw new ConfigurationError(
      `subrequestBudget must be a whole number of at least ${MIN_SUBREQUEST_BUDGET} (Workers Free: 50, Paid: 10000), got ${budget}`,
    );
  }
}
