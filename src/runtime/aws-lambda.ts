/**
 * AWS Lambda entry points (Node.js 20), bundled by scripts/build-lambda.ts and deployed by
 * serverless.yml; docs/deploy.md walks through it.
 *
 * - `httpHandler`: API Gateway HTTP API (payload 2.0) or a function URL, to the reference
 *   service's Hono app.
 * - `scheduledHandler`: EventBridge every minute, one bounded drain that ends before the
 *   invocation's own timeout, and at minute 30 of each hour a purge after it.
 *
 * The service is built once per sandbox, at the first invocation, and reused while the sandbox
 * stays warm. That is safe because nothing in it holds a connection: the database is Neon's
 * HTTP driver (each query is one HTTPS request; Node's fetch keeps the TLS connection alive
 * between them, and a connection that died while the sandbox was frozen is simply reopened),
 * the SES client sends one request per email, and the app keeps no per-request state. A pooled
 * TCP or WebSocket connection, by contrast, can be cut by Neon while Lambda has the sandbox
 * frozen, and the first query after the thaw would fail.
 */
import { type ExecutionContext, Hono } from 'hono';
import {
  type APIGatewayProxyResult,
  handle,
  type LambdaContext,
  type LambdaEvent,
} from 'hono/aws-lambda';
import type { DrainReport } from '../core/drain.js';
import { type PurgeReport, purgeOnce } from '../core/purge.js';
import { nodeHostResolver } from '../senders/webhook/node-host-resolver.js';
import { MIN_DRAIN_BUDGET_MS } from './drainer.js';
import {
  logFailure,
  logReport,
  misconfiguredResponse,
  type ReferenceService,
  referenceApp,
  referenceServiceFromEnv,
  scheduledDrain,
  serviceRouter,
  warnSkippedKinds,
} from './reference-deps.js';

/** The part of Lambda's context object this module reads. */
export interface LambdaContextLike {
  getRemainingTimeInMillis(): number;
  awsRequestId?: string;
}

/** An EventBridge scheduled event (`rate(1 minute)`), or any event with the time it fired. */
export interface ScheduledEventLike {
  /** ISO time the schedule fired, e.g. `2025-11-30T07:30:00Z`. */
  time?: string;
  'detail-type'?: string;
  source?: string;
}

export interface ScheduledResult {
  drain: DrainReport;
  purge?: PurgeReport;
}

/**
 * Time kept back from the invocation's remaining time: the drain stops claiming and sending
 * early enough to settle, log and return before Lambda's timeout kills it mid-write.
 */
export const SAFETY_MARGIN_MS = 2_000;

/** Time set aside after the drain for the hourly purge: a few bounded DELETEs. */
export const PURGE_RESERVE_MS = 5_000;

/**
 * The purge runs in the invocation scheduled at this minute of every hour (UTC), after its
 * drain: hourly keeps up with any realistic volume (each run deletes up to 10,000 rows).
 */
export const PURGE_MINUTE = 30;

let service: ReferenceService | undefined;
let http: ReturnType<typeof handle> | undefined;

/** Built at the first invocation, from `process.env`; a failed build is tried again next time. */
function warmService(): ReferenceService {
  service ??= referenceServiceFromEnv(process.env, {
    resolveHost: nodeHostResolver,
    logFields: { runtime: 'aws-lambda' },
  });
  return service;
}

/**
 * The app behind API Gateway. The after-commit kick finishes before the handler returns: a
 * Lambda sandbox is frozen as soon as the handler returns, so a kick left running would stop
 * mid-send and hold its rows until their lease ran out. The response waits for it (bounded by
 * the kick's 5 s budget, usually one provider round trip); `OUTBOX_KICK=off` leaves delivery
 * to the schedule instead.
 */
function httpApp(): Hono {
  const built = warmService();
  const app = referenceApp(built);
  return serviceRouter(built, async (request, c) => {
    const kicks: Promise<unknown>[] = [];
    const executionCtx: ExecutionContext = {
      waitUntil: (promise) => {
        kicks.push(promise);
      },
      passThroughOnException: () => {},
      props: {},
    };
    const response = await app.fetch(request, c.env, executionCtx);
    await Promise.allSettled(kicks);
    return response;
  });
}

export async function httpHandler(
  event: LambdaEvent,
  context?: LambdaContext,
): Promise<APIGatewayProxyResult> {
  if (http === undefined) {
    let app: Hono;
    try {
      app = httpApp();
    } catch (error) {
      // Answer in API Gateway's shape, like any other response.
      const misconfigured = new Hono();
      misconfigured.all('*', () => misconfiguredResponse(error, { runtime: 'aws-lambda' }));
      return handle(misconfigured)(event);
    }
    http = handle(app);
  }
  return http(event, context);
}

/**
 * One bounded drain, then (at minute {@link PURGE_MINUTE}) a purge. The deadline is read from
 * the invocation itself, so the function's timeout in serverless.yml is the only knob: the
 * drain stops starting sends once one more would not finish and settle before
 * `remaining - SAFETY_MARGIN_MS`. Overlapping invocations are safe: each claims different rows.
 */
export async function scheduledHandler(
  event: ScheduledEventLike,
  context: LambdaContextLike,
): Promise<ScheduledResult> {
  const fields = {
    runtime: 'aws-lambda',
    scheduledAt: event.time,
    requestId: context.awsRequestId,
  };
  try {
    const built = warmService();
    warnSkippedKinds(built);
    const purgeDue = isPurgeMinute(event.time);
    const reserveMs = SAFETY_MARGIN_MS + (purgeDue ? PURGE_RESERVE_MS : 0);
    const timeLeftMs = () => context.getRemainingTimeInMillis() - reserveMs;
    const drain = await scheduledDrain(built, {
      // Sizes the send timeout and round-trip reserve; the deadline itself is `timeLeftMs`.
      budgetMs: Math.max(timeLeftMs(), MIN_DRAIN_BUDGET_MS),
      timeLeftMs,
    });
    logReport('outbox drain', drain, fields);
    if (!purgeDue) return { drain };
    const purge = await purgeOnce({ store: built.store });
    logReport('outbox purge', purge, fields);
    return { drain, purge };
  } catch (error) {
    // A failed invocation shows in the function's error metric; unsettled rows keep their lease
    // and the next invocation takes them.
    logFailure('scheduled run failed', error, fields);
    throw error;
  }
}

function isPurgeMinute(time: string | undefined): boolean {
  if (time === undefined) return false;
  const at = new Date(time);
  return !Number.isNaN(at.getTime()) && at.getUTCMinutes() === PURGE_MINUTE;
}
