/**
 * The reference service as its serverless entry points deploy it (worker.ts, lambda.ts):
 * database, outbox, senders and the app, all built from one environment object (a Worker's
 * `env` bindings or Lambda's `process.env`), using only the library's public exports, as any
 * user's app would. Runs on Workers: no Node built-ins, no `pg`.
 *
 * Both runtimes talk to the database through Neon's HTTP driver (`neon()`) only:
 * - it holds no connection, so nothing needs closing when a Worker invocation ends and nothing
 *   goes stale while a Lambda sandbox is frozen between invocations;
 * - nothing here needs a session: a domain write is one `sql.transaction`, and claim, settle
 *   and release are single statements, so one HTTPS round trip per statement is all it costs;
 * - on Workers one statement is one subrequest, which is exactly what the drain counts
 *   against its subrequest budget.
 */
import { neon, neonConfig } from '@neondatabase/serverless';
import { type Context, Hono } from 'hono';
import {
  type BatchSender,
  type BatchSqlExecutor,
  createDrainer,
  createOutbox,
  type DrainerOptions,
  describeError,
  jsonLogger,
  type Logger,
  type MigrateResult,
  neonHttpExecutor,
  type Outbox,
  type PostgresOutboxStore,
  type Sender,
  type SenderRegistry,
  type SqlExecutor,
} from 'outbox-relay';
import { adminBearerAuth, errorResponse, FailedLoginThrottle } from 'outbox-relay/admin';
import { type EnvLike, postgresUrlFromEnv, readEnv, switchFromEnv } from 'outbox-relay/env';
import { applyNeonLocalProxy } from 'outbox-relay/neon-local';
import { sesSenderFromEnv } from 'outbox-relay/ses';
import { migrate } from 'outbox-relay/sql';
import { type HostResolver, webhookSenderFromEnv } from 'outbox-relay/webhook';
import { createApp } from './app.js';
import { type AppEnv, ORDER_PLACED_KIND } from './app-deps.js';
import { DEFAULT_APP_SCHEMA, endpointSecretLookup } from './endpoint-secrets.js';
import { idempotencyPurge } from './idempotency.js';
import { migrations as appMigrations } from './migrations.generated.js';

/** Where `POST` applies both schemas' bundled migrations (see {@link migrateReferenceService}). */
export const MIGRATE_PATH = '/admin/migrate';

/**
 * Development only: `NEON_LOCAL_PROXY=127.0.0.1:PORT` points the driver at the local Neon
 * stand-in (`startNeonProxy` from outbox-relay/dev, which `npm start` and the tests run) over
 * plain HTTP and WebSocket; loopback only, since the stand-in has no TLS. Unset in production.
 */
export function applyNeonLocalProxyFromEnv(env: EnvLike): void {
  const proxy = readEnv(env, 'NEON_LOCAL_PROXY');
  if (proxy !== undefined) applyNeonLocalProxy(neonConfig, proxy);
}

/**
 * `DATABASE_URL` over Neon's HTTP driver. Nothing to close: every query is one request. Neon
 * needs the password in the URL, so one without it is refused here, by name.
 */
export function databaseFromEnv(env: EnvLike): BatchSqlExecutor {
  const url = postgresUrlFromEnv(env, 'DATABASE_URL', { requirePassword: true });
  applyNeonLocalProxyFromEnv(env);
  return neonHttpExecutor(neon(url));
}

export interface ReferenceService {
  db: BatchSqlExecutor;
  outbox: Outbox;
  store: PostgresOutboxStore;
  /** What the drain, the kick and the schedules run with. */
  drainer: DrainerOptions;
  /** Kinds left without a sender, and why (emails without SES credentials). */
  skipped: { kind: string; reason: string }[];
  adminToken: string | undefined;
  /** Whether each order also writes an `order.placed` event (a queue is configured for it). */
  orderEvents: boolean;
  /**
   * Where wrong admin tokens are counted, for `/admin`, `POST /webhook-endpoints` and
   * `POST /admin/migrate` alike. In memory: per process on Node, per build of the service
   * elsewhere.
   */
  loginThrottle: FailedLoginThrottle;
  /** The after-commit kick; off with `OUTBOX_KICK=off`, leaving delivery to the schedule. */
  kick: boolean;
  logger: Logger;
}

export interface ReferenceServiceOptions {
  /** `false` on Workers (no resolver; the platform blocks private egress), `nodeHostResolver` on Lambda. */
  resolveHost: HostResolver | false;
  /** Wraps the executor webhook endpoint secrets are read through (Workers: once per endpoint). */
  secretsDb?: (db: SqlExecutor) => SqlExecutor;
  /** Fields on every log line (runtime, invocation). */
  logFields?: Record<string, unknown>;
  /**
   * Where `order.placed` events go: a queue sender the runtime builds from its environment
   * (Workers: `cloudflareQueuesSender(env.ORDER_EVENTS)`; Node and Lambda: `sqsSenderFromEnv`).
   * Without one, orders write no event: nothing would ever send it.
   */
  orderEvents?: Sender | BatchSender;
}

/**
 * Builds everything from the environment; throws `ConfigurationError` naming the variable when
 * a setting is missing or malformed. Cheap (no I/O), so Workers build it per invocation.
 */
export function referenceServiceFromEnv(
  env: EnvLike,
  options: ReferenceServiceOptions,
): ReferenceService {
  const db = databaseFromEnv(env);
  const outbox = createOutbox({ kinds: { [ORDER_PLACED_KIND]: true } });
  const store = outbox.store(db);
  const logger = jsonLogger({
    verbose: readEnv(env, 'OUTBOX_DEBUG') === '1',
    fields: options.logFields,
  });
  const webhook = webhookSenderFromEnv(env, {
    endpointSecret: endpointSecretLookup(options.secretsDb ? options.secretsDb(db) : db),
    resolveHost: options.resolveHost,
  });
  const email = sesSenderFromEnv(env);
  const senders: SenderRegistry = {
    webhook,
    ...(email ? { email } : {}),
    ...(options.orderEvents ? { [ORDER_PLACED_KIND]: options.orderEvents } : {}),
  };
  const skipped = email
    ? []
    : [
        {
          kind: 'email',
          reason:
            'no AWS_ACCESS_KEY_ID: emails stay pending until a drain with SES credentials runs',
        },
      ];
  return {
    db,
    outbox,
    store,
    // Expired Idempotency-Key records go with each scheduled outbox purge.
    drainer: { store, senders, logger, purgeWith: idempotencyPurge(db, DEFAULT_APP_SCHEMA) },
    skipped,
    adminToken: readEnv(env, 'ADMIN_TOKEN'),
    orderEvents: options.orderEvents !== undefined,
    loginThrottle: new FailedLoginThrottle(),
    kick: switchFromEnv(env, 'OUTBOX_KICK', true),
    logger,
  };
}

/**
 * The reference service's app, its kick and `POST /admin/drain` draining through this
 * service's senders. `kickSubrequestBudget` bounds each kick (Workers).
 */
export function referenceApp(
  service: ReferenceService,
  options: { kickSubrequestBudget?: number } = {},
): Hono<AppEnv> {
  return createApp({
    db: service.db,
    outbox: service.outbox,
    adminToken: service.adminToken,
    orderEvents: service.orderEvents,
    loginThrottle: service.loginThrottle,
    drain: createDrainer(service.drainer),
    kick: service.kick,
    kickSubrequestBudget: options.kickSubrequestBudget,
    logger: service.logger,
  });
}

/**
 * Applies the bundled migrations of both schemas, `outbox` and the reference service's `app`,
 * each as one transaction behind an advisory lock: idempotent and safe to run concurrently.
 * Over Neon HTTP that is two requests.
 */
export async function migrateReferenceService(
  service: Pick<ReferenceService, 'db' | 'outbox'>,
): Promise<{ outbox: MigrateResult; app: MigrateResult }> {
  const outbox = await service.outbox.migrate(service.db);
  const app = await migrate(service.db, { schema: DEFAULT_APP_SCHEMA, migrations: appMigrations });
  return { outbox, app };
}

/**
 * The deployed router: `POST /admin/migrate` (behind the admin token, like all of `/admin`),
 * and every other request handed to `forward`, which runs the app the way the runtime needs.
 */
export function serviceRouter(
  service: ReferenceService,
  forward: (request: Request, c: Context) => Promise<Response>,
): Hono {
  const router = new Hono();
  router.post(
    MIGRATE_PATH,
    adminBearerAuth(service.adminToken, {
      throttle: service.loginThrottle,
      logger: service.logger,
    }),
  );
  router.post(MIGRATE_PATH, async (c) => c.json(await migrateReferenceService(service)));
  router.all('*', (c) => forward(c.req.raw, c));
  router.onError((error, c) => {
    service.logger.error('request failed', { path: c.req.path, error: describeError(error) });
    return errorResponse(c, 500, 'internal error');
  });
  return router;
}

/**
 * The answer when the environment is wrong: 500 with no detail (a setting's name is nobody's
 * business outside), and the detail in the log.
 */
export function misconfiguredResponse(error: unknown, fields: Record<string, unknown>): Response {
  jsonLogger({ fields }).error('the service is misconfigured', { error: describeError(error) });
  return Response.json(
    { error: 'internal error: the service is misconfigured (details in its log)' },
    { status: 500 },
  );
}

/** Logs, once per scheduled invocation, each kind this deployment cannot send and why. */
export function warnSkippedKinds(service: ReferenceService): void {
  for (const { kind, reason } of service.skipped) {
    service.logger.warn(`not draining ${kind}`, { kind, reason });
  }
}
