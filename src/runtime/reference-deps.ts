/**
 * The reference service as the serverless entry points deploy it (`cloudflare-workers.ts`,
 * `aws-lambda.ts`): database, outbox, senders, the app with its after-commit kick, the
 * scheduled drain and purge, all built from one environment object (a Worker's `env` bindings
 * or Lambda's `process.env`). This module runs on Workers: no Node built-ins, no `pg`, no
 * `src/dev/` imports.
 *
 * Both runtimes talk to the database through Neon's HTTP driver (`neon()`) only:
 * - it holds no connection, so nothing needs closing when a Worker invocation ends and nothing
 *   goes stale while a Lambda sandbox is frozen between invocations;
 * - nothing here needs a session: a domain write is one `sql.transaction`, and claim, settle
 *   and release are single statements, so one HTTPS round trip per statement is all it costs;
 * - on Workers one statement is one subrequest, which is exactly what `drainOnce` counts
 *   against its `subrequestBudget`.
 */
import { neon, neonConfig } from '@neondatabase/serverless';
import { type Context, Hono } from 'hono';
import { adminBearerAuth } from '../admin/index.js';
import { type DrainReport, drainOnce } from '../core/drain.js';
import { ConfigurationError, describeError } from '../core/errors.js';
import type { BatchSqlExecutor, Logger, SqlExecutor } from '../core/ports.js';
import type { PurgeReport } from '../core/purge.js';
import type { SenderRegistry } from '../core/sender.js';
import { neonHttpExecutor } from '../drivers/neon-http.js';
import { createApp } from '../http/app.js';
import type { AppEnv } from '../http/app-deps.js';
import { errorResponse } from '../http/errors.js';
import { migrations as appMigrations } from '../http/migrations.generated.js';
import { createOutbox, type Outbox } from '../outbox.js';
import type { HostResolver } from '../senders/webhook/destination-policy.js';
import { type MigrateResult, migrate } from '../store/migrate.js';
import type { PostgresOutboxStore } from '../store/postgres-store.js';
import { budgetedTimeouts, createDrainer } from './drainer.js';
import { DEFAULT_APP_SCHEMA, endpointSecretLookup } from './endpoint-secrets.js';
import { type OutboxEnv, type SendersFromEnv, sendersFromEnv } from './senders-from-env.js';

/** A Worker's `env` or Lambda's `process.env`: strings, read by name. */
export type ServiceEnv = OutboxEnv;

/** Where `POST` applies both schemas' bundled migrations (see {@link migrateReferenceService}). */
export const MIGRATE_PATH = '/admin/migrate';

/**
 * The local Neon stand-in must be on loopback: it speaks plain HTTP and WebSocket with no TLS,
 * so pointing a deployment at anything else would send the database password in the clear.
 */
const LOOPBACK_AUTHORITY = /^(?:127(?:\.\d{1,3}){3}|localhost|\[::1\]):\d{1,5}$/;

export function readEnv(env: ServiceEnv, name: string): string | undefined {
  const value = env[name];
  return typeof value === 'string' && value.trim() !== '' ? value.trim() : undefined;
}

/** A whole number of at least `min` from `name`, or `fallback` when unset. */
export function integerFromEnv(env: ServiceEnv, name: string, fallback: number, min = 1): number {
  const text = readEnv(env, name);
  if (text === undefined) return fallback;
  const value = Number(text);
  if (!Number.isInteger(value) || value < min) {
    throw new ConfigurationError(`${name} must be a whole number of at least ${min}, got ${text}`);
  }
  return value;
}

/**
 * Development only: `NEON_LOCAL_PROXY=127.0.0.1:PORT` points the driver at the local Neon
 * stand-in (`startNeonProxy` in src/dev/neon-proxy.ts, which `npm start` and the tests run)
 * over plain HTTP and WebSocket. Set field by field here because src/dev/neon-proxy.ts imports
 * Node built-ins a Worker cannot load. Unset in production, where Neon's defaults apply.
 */
export function applyNeonLocalProxy(env: ServiceEnv): void {
  const proxy = readEnv(env, 'NEON_LOCAL_PROXY');
  if (proxy === undefined) return;
  if (!LOOPBACK_AUTHORITY.test(proxy)) {
    throw new ConfigurationError(
      `NEON_LOCAL_PROXY must be a loopback host:port such as 127.0.0.1:54330, got ${proxy}`,
    );
  }
  neonConfig.fetchEndpoint = () => `http://${proxy}/sql`;
  neonConfig.wsProxy = (host, port) =>
    `${proxy}/v2?address=${encodeURIComponent(`${host}:${port}`)}`;
  neonConfig.useSecureWebSocket = false;
  neonConfig.forceDisablePgSSL = true;
  // Pipelining sends the password before Postgres asks; a local Postgres does not accept that.
  neonConfig.pipelineConnect = false;
  neonConfig.pipelineTLS = false;
}

/** `DATABASE_URL` over Neon's HTTP driver. Nothing to close: every query is one request. */
export function databaseFromEnv(env: ServiceEnv): BatchSqlExecutor {
  const url = readEnv(env, 'DATABASE_URL');
  if (url === undefined || !/^postgres(?:ql)?:\/\//.test(url)) {
    throw new ConfigurationError(
      'DATABASE_URL must be set to the postgres:// URL of the Neon database (wrangler secret put DATABASE_URL, or the Lambda environment)',
    );
  }
  applyNeonLocalProxy(env);
  return neonHttpExecutor(neon(url));
}

/**
 * One JSON object per line on the console, which both Workers Logs and CloudWatch index.
 * Warnings and errors always; debug and info only with `OUTBOX_DEBUG=1`, because the entry
 * points log each drain's report themselves and a drain's own info line would repeat it.
 */
export function jsonLogger(env: ServiceEnv, base: Record<string, unknown> = {}): Logger {
  const verbose = readEnv(env, 'OUTBOX_DEBUG') === '1';
  const line =
    (level: 'debug' | 'info' | 'warn' | 'error') =>
    (message: string, fields: Record<string, unknown> = {}) => {
      if (!verbose && (level === 'debug' || level === 'info')) return;
      const write =
        level === 'error' ? console.error : level === 'warn' ? console.warn : console.log;
      write(JSON.stringify({ level, message, ...base, ...fields }));
    };
  return { debug: line('debug'), info: line('info'), warn: line('warn'), error: line('error') };
}

/** Logs a drain or purge report as one JSON line, the record operators and alerts read. */
export function logReport(
  message: 'outbox drain' | 'outbox purge',
  report: DrainReport | PurgeReport,
  fields: Record<string, unknown> = {},
): void {
  console.log(JSON.stringify({ level: 'info', message, ...fields, ...report }));
}

/** One JSON line for a failed invocation, as the platform's log search expects. */
export function logFailure(
  message: string,
  error: unknown,
  fields: Record<string, unknown> = {},
): void {
  console.error(
    JSON.stringify({ level: 'error', message, ...fields, error: describeError(error) }),
  );
}

export interface ReferenceService {
  db: BatchSqlExecutor;
  outbox: Outbox;
  store: PostgresOutboxStore;
  senders: SenderRegistry;
  /** Kinds left without a sender, and why (emails without SES credentials). */
  skipped: SendersFromEnv['skipped'];
  adminToken: string | undefined;
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
}

/**
 * Builds everything from the environment; throws `ConfigurationError` naming the variable when
 * a setting is missing or malformed. Cheap (no I/O), so Workers build it per invocation.
 */
export function referenceServiceFromEnv(
  env: ServiceEnv,
  options: ReferenceServiceOptions,
): ReferenceService {
  const db = databaseFromEnv(env);
  const outbox = createOutbox();
  const logger = jsonLogger(env, options.logFields);
  const { senders, skipped } = sendersFromEnv(env, {
    endpointSecret: endpointSecretLookup(options.secretsDb ? options.secretsDb(db) : db),
    resolveHost: options.resolveHost,
  });
  const kickSetting = readEnv(env, 'OUTBOX_KICK')?.toLowerCase();
  return {
    db,
    outbox,
    store: outbox.store(db),
    senders,
    skipped,
    adminToken: readEnv(env, 'ADMIN_TOKEN'),
    kick: kickSetting !== 'off' && kickSetting !== 'false' && kickSetting !== '0',
    logger,
  };
}

/**
 * The reference service's app, its kick and `POST /admin/drain` draining through this
 * service's senders. `subrequestBudget` bounds each of those drains (Workers).
 */
export function referenceApp(
  service: ReferenceService,
  options: { subrequestBudget?: number } = {},
): Hono<AppEnv> {
  const drain = createDrainer({
    store: service.store,
    senders: service.senders,
    defaults: { logger: service.logger, subrequestBudget: options.subrequestBudget },
  });
  return createApp({
    db: service.db,
    outbox: service.outbox,
    adminToken: service.adminToken,
    drain,
    kick: service.kick,
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
  router.post(MIGRATE_PATH, adminBearerAuth(service.adminToken), async (c) =>
    c.json(await migrateReferenceService(service)),
  );
  router.all('*', (c) => forward(c.req.raw, c));
  router.onError((error, c) => {
    service.logger.error('request failed', { path: c.req.path, error: describeError(error) });
    return errorResponse(c, 500, 'internal error');
  });
  return router;
}

export interface ScheduledDrainOptions {
  /** Time the drain may take; send timeouts and round-trip reserves shrink to fit it. */
  budgetMs: number;
  /** Ms left, read before every step (Lambda's remaining time); default `budgetMs` from now. */
  timeLeftMs?: () => number;
  /** Most SQL round trips plus sends (Workers' per-invocation subrequest limit). */
  subrequestBudget?: number;
}

/** One bounded drain of every kind this service can send, as a schedule runs it. */
export function scheduledDrain(
  service: ReferenceService,
  options: ScheduledDrainOptions,
): Promise<DrainReport> {
  return drainOnce({
    store: service.store,
    senders: service.senders,
    logger: service.logger,
    subrequestBudget: options.subrequestBudget,
    ...budgetedTimeouts(options.budgetMs),
    ...(options.timeLeftMs ? { deadline: options.timeLeftMs } : {}),
  });
}

/**
 * The answer when the environment is wrong: 500 with no detail (a setting's name is nobody's
 * business outside), and the detail in the log.
 */
export function misconfiguredResponse(error: unknown, fields: Record<string, unknown>): Response {
  logFailure('the service is misconfigured', error, fields);
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
