/**
 * The reference service on Cloudflare Workers (`main` in wrangler.toml): the app on `fetch`,
 * the outbox drain and purge on Cron Triggers through the library's Workers kit.
 * docs/deploy.md walks through deploying it.
 *
 * Everything is built per invocation from `env` over Neon's HTTP driver: a Worker cannot carry
 * a connection from one request to the next, and with HTTP there is none to close. Webhook
 * hosts are not resolved (`resolveHost: false`: there is no resolver, and Cloudflare's egress
 * cannot reach private ranges).
 */

import type { QueryResult, SqlExecutor } from 'outbox-relay';
import { cloudflareQueuesSender, type QueueProducerLike } from 'outbox-relay/cloudflare-queues';
import {
  DEFAULT_PURGE_CRON,
  DEFAULT_WORKERS_DRAIN_BUDGET_MS,
  WORKERS_FREE_SUBREQUESTS,
  type WorkerExecutionContext,
  workersScheduledHandler,
} from 'outbox-relay/cloudflare-workers';
import { type EnvLike, integerFromEnv, readEnv } from 'outbox-relay/env';
import {
  misconfiguredResponse,
  type ReferenceService,
  referenceApp,
  referenceServiceFromEnv,
  serviceRouter,
  warnSkippedKinds,
} from './service.js';

/**
 * Subrequests kept back for the request itself before its kick may spend the rest: an order is
 * an idempotency read, a user read, a subscriber read, the write, and the idempotency record.
 */
const REQUEST_SUBREQUEST_RESERVE = 10;

/**
 * `OUTBOX_SUBREQUEST_BUDGET`: the plan's per-invocation limit. Unset means the Free plan's 50,
 * the one limit every account has; wrangler.toml states the choice explicitly.
 */
function subrequestBudget(env: EnvLike): number {
  return integerFromEnv(
    env,
    'OUTBOX_SUBREQUEST_BUDGET',
    WORKERS_FREE_SUBREQUESTS,
    REQUEST_SUBREQUEST_RESERVE + 3,
  );
}

function buildService(env: EnvLike, entry: 'fetch' | 'scheduled'): ReferenceService {
  const orderEvents = orderEventsQueue(env);
  return referenceServiceFromEnv(env, {
    resolveHost: false,
    secretsDb: lookupsOncePerInvocation,
    logFields: { runtime: 'cloudflare-workers', entry },
    orderEvents: orderEvents && cloudflareQueuesSender(orderEvents),
  });
}

/**
 * The `ORDER_EVENTS` Queue producer binding (wrangler.toml `[[queues.producers]]`), where
 * orders' `order.placed` events go; without it, orders write no event.
 */
function orderEventsQueue(env: EnvLike): QueueProducerLike | undefined {
  const binding: unknown = Reflect.get(env, 'ORDER_EVENTS');
  const isProducer =
    typeof binding === 'object' &&
    binding !== null &&
    typeof (binding as Partial<QueueProducerLike>).sendBatch === 'function';
  return isProducer ? (binding as QueueProducerLike) : undefined;
}

async function fetch(
  request: Request,
  env: EnvLike,
  ctx: WorkerExecutionContext,
): Promise<Response> {
  let service: ReferenceService;
  let budget: number;
  try {
    service = buildService(env, 'fetch');
    budget = subrequestBudget(env);
  } catch (error) {
    return misconfiguredResponse(error, { runtime: 'cloudflare-workers' });
  }
  const app = referenceApp(service, {
    // Webhook secret reads are counted by the drain itself (the webhook sender reports them).
    kickSubrequestBudget: budget - REQUEST_SUBREQUEST_RESERVE,
  });
  // The kick runs after the response inside ctx.waitUntil (kickAfterCommit does that), within
  // the same invocation and so the same subrequest limit.
  const router = serviceRouter(service, (forwarded, c) =>
    Promise.resolve(app.fetch(forwarded, c.env, ctx)),
  );
  return router.fetch(request, env, ctx);
}

const scheduled = workersScheduledHandler(
  (env: EnvLike) => {
    const service = buildService(env, 'scheduled');
    warnSkippedKinds(service);
    return service.drainer;
  },
  (env) => ({
    subrequestBudget: subrequestBudget(env),
    drainBudgetMs: integerFromEnv(
      env,
      'OUTBOX_DRAIN_BUDGET_MS',
      DEFAULT_WORKERS_DRAIN_BUDGET_MS,
      1_000,
    ),
    purgeCron: readEnv(env, 'OUTBOX_PURGE_CRON') ?? DEFAULT_PURGE_CRON,
  }),
);

/**
 * An executor for the webhook endpoint-secret lookup that reads each endpoint once per
 * invocation: over Neon HTTP every read is a subrequest (the webhook sender counts each lookup
 * against the drain's budget, and asks once per endpoint per drain), so a kick and a drain in
 * one invocation share a read. Workers build the service per
 * invocation, so a disabled endpoint is seen by the next one.
 */
function lookupsOncePerInvocation(db: SqlExecutor): SqlExecutor {
  const results = new Map<string, Promise<QueryResult>>();
  return {
    query(text, params = []) {
      const key = JSON.stringify([text, params]);
      let result = results.get(key);
      if (result === undefined) {
        result = db.query(text, params);
        results.set(key, result);
        // A failed read is not remembered: the next message tries again.
        result.catch(() => results.delete(key));
      }
      return result;
    },
  };
}

// The only value export: workerd treats every named export of the entry module as an entrypoint.
export default { fetch, scheduled };
