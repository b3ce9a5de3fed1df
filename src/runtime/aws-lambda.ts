/**
 * AWS Lambda kit: a handler for an EventBridge schedule that drains (and hourly purges) the
 * outbox and returns before the invocation's timeout, and a wrapper that makes a Hono app's
 * after-commit kicks finish before Lambda freezes the sandbox. Import from
 * `outbox-relay/aws-lambda`.
 *
 * Prefer Neon's HTTP driver here too: a pooled TCP or WebSocket connection can be cut by Neon
 * while Lambda has the sandbox frozen, and the first query after the thaw would fail; an HTTP
 * query has no connection to lose.
 *
 * @example
 * import { neon } from '@neondatabase/serverless';
 * import { handle } from 'hono/aws-lambda';
 * import { neonHttpExecutor } from 'outbox-relay';
 * import { sesConfigFromEnv, sesSender } from 'outbox-relay/ses';
 * import { awaitBackgroundWork, lambdaScheduledHandler } from 'outbox-relay/aws-lambda';
 *
 * export const http = handle(awaitBackgroundWork(app));     // kicks finish before returning
 * export const drain = lambdaScheduledHandler(() => ({
 *   store: outbox.store(neonHttpExecutor(neon(process.env.DATABASE_URL!))),
 *   senders: { email: sesSender(sesConfigFromEnv(process.env)) },
 * }));
 */
import { type ExecutionContext, Hono } from 'hono';
import type { DrainResume } from '../core/drain-settings.js';
import {
  type DrainerOptions,
  MIN_DRAIN_BUDGET_MS,
  runScheduledDrain,
  type ScheduledRunResult,
} from './drainer.js';
import { logFailure, logReport } from './json-log.js';

/** The part of Lambda's context object the kit reads. */
export interface LambdaContextLike {
  getRemainingTimeInMillis(): number;
  awsRequestId?: string;
}

/** An EventBridge scheduled event (`rate(1 minute)`), or any event with the time it fired. */
export interface ScheduledEventLike {
  /** ISO time the schedule fired, e.g. `2025-11-30T07:30:00Z`. */
  time?: string;
  id?: string;
  'detail-type'?: string;
  source?: string;
}

/**
 * Time kept back from the invocation's remaining time: the drain stops claiming and sending
 * early enough to settle, log and return before Lambda's timeout kills it mid-write.
 */
export const DEFAULT_SAFETY_MARGIN_MS = 2_000;

/** Time set aside after the drain for the hourly purge: a few bounded DELETEs. */
export const DEFAULT_PURGE_RESERVE_MS = 5_000;

/**
 * The purge runs in the invocation scheduled at this minute of every hour (UTC), after its
 * drain: hourly keeps up with any realistic volume (each run deletes up to 10,000 rows).
 */
export const DEFAULT_PURGE_MINUTE = 30;

export interface LambdaScheduledOptions {
  /** Default {@link DEFAULT_SAFETY_MARGIN_MS}. */
  safetyMarginMs?: number;
  /** Minute of the hour whose invocation also purges; `false` for never. Default 30. */
  purgeMinute?: number | false;
  /** Default {@link DEFAULT_PURGE_RESERVE_MS}. */
  purgeReserveMs?: number;
  /** Fields on the run's JSON log line. */
  logFields?: Record<string, unknown>;
}

/**
 * A handler for an EventBridge schedule: one bounded drain whose deadline is the invocation's
 * own remaining time less a safety margin (so the function's timeout is the only knob), then,
 * at {@link DEFAULT_PURGE_MINUTE}, a purge. Logs one JSON line per run and returns the reports.
 *
 * `setup` runs at the first invocation and its result is reused while the sandbox stays warm
 * (build executors and SDK clients there, not connections); a failed setup is tried again at
 * the next invocation. Overlapping or repeated invocations (EventBridge delivers at least
 * once) are safe: each claims different rows.
 */
export function lambdaScheduledHandler(
  setup: () => DrainerOptions | Promise<DrainerOptions>,
  options: LambdaScheduledOptions = {},
): (event: ScheduledEventLike, context: LambdaContextLike) => Promise<ScheduledRunResult> {
  const safetyMarginMs = options.safetyMarginMs ?? DEFAULT_SAFETY_MARGIN_MS;
  const purgeMinute = options.purgeMinute ?? DEFAULT_PURGE_MINUTE;
  const purgeReserveMs = options.purgeReserveMs ?? DEFAULT_PURGE_RESERVE_MS;
  let warm: Promise<DrainerOptions> | undefined;
  // Where the last invocation's claims left off, while the container stays warm.
  const resume: DrainResume = {};
  return async (event, context) => {
    const fields = {
      runtime: 'aws-lambda',
      ...options.logFields,
      scheduledAt: event.time,
      requestId: context.awsRequestId,
    };
    try {
      warm ??= Promise.resolve(setup());
      const built = await warm.catch((error: unknown) => {
        warm = undefined;
        throw error;
      });
      const purgeDue = purgeMinute !== false && minuteOf(event.time) === purgeMinute;
      const reserveMs = safetyMarginMs + (purgeDue ? purgeReserveMs : 0);
      const timeLeftMs = () => context.getRemainingTimeInMillis() - reserveMs;
      const result = await runScheduledDrain(
        { resume, ...built },
        {
          // Sizes the send timeout and round-trip reserve; the deadline itself is `timeLeftMs`.
          budgetMs: Math.max(timeLeftMs(), MIN_DRAIN_BUDGET_MS),
          timeLeftMs,
          purge: purgeDue ? 'after' : undefined,
        },
      );
      if (result.drain) logReport('outbox drain', result.drain, fields);
      if (result.purge)
        logReport('outbox purge', result.purge, { ...fields, ...result.purgedWith });
      return result;
    } catch (error) {
      // A failed invocation shows in the function's error metric; unsettled rows keep their
      // lease and the next invocation takes them.
      logFailure('scheduled run failed', error, fields);
      throw error;
    }
  };
}

function minuteOf(time: string | undefined): number | undefined {
  if (time === undefined) return undefined;
  const at = new Date(time);
  return Number.isNaN(at.getTime()) ? undefined : at.getUTCMinutes();
}

/**
 * Wraps an app so that work it hands to `c.executionCtx.waitUntil` (the after-commit kick)
 * finishes before the response is returned. Lambda freezes the sandbox as soon as the handler
 * returns, so a kick left running would stop mid-send and hold its rows until their lease ran
 * out. The response waits for it (bounded by the kick's budget, usually one provider round trip).
 *
 * @example
 * import { handle } from 'hono/aws-lambda';
 *
 * export const handler = handle(awaitBackgroundWork(app));
 */
export function awaitBackgroundWork(app: {
  fetch: (request: Request, env?: unknown, ctx?: ExecutionContext) => Response | Promise<Response>;
}): Hono {
  const wrapper = new Hono();
  wrapper.all('*', async (c) => {
    const pending: Promise<unknown>[] = [];
    const executionCtx: ExecutionContext = {
      waitUntil: (promise) => {
        pending.push(promise);
      },
      passThroughOnException: () => {},
      props: {},
    };
    try {
      return await app.fetch(c.req.raw, c.env, executionCtx);
    } finally {
      // A kick may start more work; wait until none is left.
      for (let done = 0; done < pending.length; done = pending.length) {
        await Promise.allSettled(pending.slice(done));
      }
    }
  });
  return wrapper;
}

/** The webhook sender's DNS check on Lambda (Node): pass as `resolveHost`. */
export { nodeHostResolver } from '../senders/webhook/node-host-resolver.js';
/** What a scheduled invocation resolves to: the drain's and the purge's reports. */
export type { ScheduledRunResult } from './drainer.js';
