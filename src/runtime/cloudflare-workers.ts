/**
 * Cloudflare Workers entry point (`main` in wrangler.toml): the reference service on `fetch`,
 * the outbox drain and purge on Cron Triggers. docs/deploy.md walks through deploying it.
 *
 * Everything is built per invocation from `env` over Neon's HTTP driver (see
 * `reference-deps.ts` for why HTTP): a Worker cannot carry a connection from one request to
 * the next, and with HTTP there is none to close, before or after the response and its kick.
 * Workers-only rules: webhook hosts are not resolved (`resolveHost: false`: there is no
 * resolver, and Cloudflare's egress cannot reach private ranges), and every drain is bounded
 * by the invocation's subrequest limit.
 */
import type { ExecutionContext } from 'hono';
import type { QueryResult, SqlExecutor } from '../core/ports.js';
import { purgeOnce } from '../core/purge.js';
import {
  integerFromEnv,
  logFailure,
  logReport,
  misconfiguredResponse,
  type ReferenceService,
  readEnv,
  referenceApp,
  referenceServiceFromEnv,
  type ServiceEnv,
  scheduledDrain,
  serviceRouter,
  warnSkippedKinds,
} from './reference-deps.js';

/**
 * What the Workers runtime passes as `ctx`: Hono's structural copy of it, since
 * `@cloudflare/workers-types` is not a dependency.
 */
export type WorkerExecutionContext = ExecutionContext;

/** What a Cron Trigger invocation receives as `controller`. */
export interface WorkerScheduledController {
  /** The cron expression that fired, exactly as written in wrangler.toml. */
  readonly cron: string;
  readonly scheduledTime: number;
}

/**
 * Subrequests (fetches, including each Neon HTTP query and each send) one invocation may make
 * when `OUTBOX_SUBREQUEST_BUDGET` is unset: 1000, the Workers Paid limit per invocation. On the
 * Free plan the limit is 50: set `OUTBOX_SUBREQUEST_BUDGET = "50"`.
 */
const DEFAULT_SUBREQUEST_BUDGET = 1000;

/**
 * Subrequests kept back for the request itself before its kick may spend the rest: an order is
 * an idempotency read, a user read, a subscriber read, the write, and the idempotency record.
 */
const REQUEST_SUBREQUEST_RESERVE = 10;

/**
 * Subrequests kept back for reading webhook endpoint secrets, which `drainOnce` does not count:
 * one per distinct endpoint per invocation (see `lookupsOncePerInvocation`).
 */
const SECRET_LOOKUP_RESERVE = 10;

/** A smaller budget leaves a drain nothing to spend: one claim, one send, one settle. */
const MIN_SUBREQUEST_BUDGET = REQUEST_SUBREQUEST_RESERVE + SECRET_LOOKUP_RESERVE + 3;

/**
 * 45 s per scheduled drain: three quarters of the one-minute cron interval, so invocations
 * rarely overlap (harmless when they do: the claim sees to that), and far inside the 15-minute
 * wall-clock limit of a Cron Trigger invocation. `OUTBOX_DRAIN_BUDGET_MS` overrides it.
 */
const DEFAULT_DRAIN_BUDGET_MS = 45_000;

/**
 * The cron that purges instead of draining, in its own invocation with its own subrequests:
 * minute 30 of every hour. Must match a cron in wrangler.toml character for character;
 * `OUTBOX_PURGE_CRON` overrides it.
 */
const DEFAULT_PURGE_CRON = '30 * * * *';

function buildService(env: ServiceEnv, invocation: string): ReferenceService {
  return referenceServiceFromEnv(env, {
    resolveHost: false,
    secretsDb: lookupsOncePerInvocation,
    logFields: { runtime: 'cloudflare-workers', invocation },
  });
}

function subrequestBudget(env: ServiceEnv): number {
  return integerFromEnv(
    env,
    'OUTBOX_SUBREQUEST_BUDGET',
    DEFAULT_SUBREQUEST_BUDGET,
    MIN_SUBREQUEST_BUDGET,
  );
}

async function fetch(
  request: Request,
  env: ServiceEnv,
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
    subrequestBudget: budget - REQUEST_SUBREQUEST_RESERVE - SECRET_LOOKUP_RESERVE,
  });
  // The kick runs after the response inside ctx.waitUntil (the app does that), within the same
  // invocation and so the same subrequest limit; there is no connection to close afterwards.
  const router = serviceRouter(service, (forwarded, c) =>
    Promise.resolve(app.fetch(forwarded, c.env, ctx)),
  );
  return router.fetch(request, env, ctx);
}

async function scheduled(
  controller: WorkerScheduledController,
  env: ServiceEnv,
  _ctx: WorkerExecutionContext,
): Promise<void> {
  const fields = { runtime: 'cloudflare-workers', cron: controller.cron };
  try {
    const service = buildService(env, 'scheduled');
    const purgeCron = readEnv(env, 'OUTBOX_PURGE_CRON') ?? DEFAULT_PURGE_CRON;
    if (controller.cron === purgeCron) {
      logReport('outbox purge', await purgeOnce({ store: service.store }), fields);
      return;
    }
    warnSkippedKinds(service);
    // Awaited rather than handed to waitUntil: the invocation lasts as long as this promise.
    const report = await scheduledDrain(service, {
      budgetMs: integerFromEnv(env, 'OUTBOX_DRAIN_BUDGET_MS', DEFAULT_DRAIN_BUDGET_MS, 1_000),
      subrequestBudget: subrequestBudget(env) - SECRET_LOOKUP_RESERVE,
    });
    logReport('outbox drain', report, fields);
  } catch (error) {
    // Failing the invocation shows it in the Cron Events log; unsettled rows keep their lease
    // and the next invocation takes them.
    logFailure('scheduled run failed', error, fields);
    throw error;
  }
}

/**
 * An executor for the webhook endpoint-secret lookup that reads each endpoint once per
 * invocation: over Neon HTTP every read is a subrequest `drainOnce` does not count, so a batch
 * of webhooks to one endpoint costs one read, not one per message. Workers build the service per
 * invocation, so a disabled endpoint is seen by the next one.
 */
function lookupsOncePerInvocation(db: SqlExecutor): SqlExecutor {
  const results = new Map<string, Promise<QueryResult<unknown>>>();
  return {
    query<Row>(text: string, params: unknown[] = []): Promise<QueryResult<Row>> {
      const key = JSON.stringify([text, params]);
      let result = results.get(key);
      if (result === undefined) {
        result = db.query<unknown>(text, params);
        results.set(key, result);
        // A failed read is not remembered: the next message tries again.
        result.catch(() => results.delete(key));
      }
      return result as Promise<QueryResult<Row>>;
    },
  };
}

// The only value export: workerd treats every named export of the entry module as an entrypoint,
// so the settings above stay module-private.
export default { fetch, scheduled };
