/**
 * `npm start`: the whole system locally, on embedded defaults, with no other setup.
 *
 * PostgreSQL (embedded, data kept between runs; DATABASE_URL uses another server instead),
 * migrations, the local Neon proxy, a local SES endpoint with a web inbox, the reference service
 * on Node with the after-commit kick, and a drain schedule that behaves like the serverless one.
 * Ctrl-C lets the running drain settle, stops every server and PostgreSQL, and exits 0; a
 * second Ctrl-C forces.
 */
import { createHash, randomBytes } from 'node:crypto';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import type { Logger } from '../core/ports.js';
import { pgExecutor } from '../drivers/node-pg.js';
import { createApp } from '../http/app.js';
import { migrations as appMigrations } from '../http/migrations.generated.js';
import { createOutbox } from '../outbox.js';
import { createDrainer } from '../runtime/drainer.js';
import { endpointSecretLookup } from '../runtime/endpoint-secrets.js';
import { serveApp, startDrainSchedule } from '../runtime/node.js';
import { sendersFromEnv } from '../runtime/senders-from-env.js';
import { nodeHostResolver } from '../senders/webhook/node-host-resolver.js';
import { migrate } from '../store/migrate.js';
import { startEmbeddedPostgres } from './embedded-postgres.js';
import { localSesEnv, startLocalSes } from './local-ses.js';
import { startNeonProxy } from './neon-proxy.js';

/** Fixed default ports, so printed URLs stay the same from one run to the next. */
const DEFAULT_APP_PORT = 3000;
const DEFAULT_POSTGRES_PORT = 54329;
const DEFAULT_NEON_PROXY_PORT = 54330;
const DEFAULT_SES_PORT = 8005;

/** Drain every 3 s locally: a message sent by the schedule alone still arrives "at once". */
const DEFAULT_DRAIN_INTERVAL_MS = 3_000;

const env = process.env;
const portFrom = (name: string, fallback: number) => {
  const value = env[name];
  if (value === undefined || value === '') return fallback;
  const port = Number(value);
  if (!Number.isInteger(port) || port < 0 || port > 65_535) {
    throw new Error(`${name} must be a port number (0 picks a free one), got "${value}"`);
  }
  return port;
};

const consoleLogger: Logger = {
  debug() {},
  info() {},
  warn: (message, fields) => console.warn(`warn: ${message}`, fields ?? ''),
  error: (message, fields) => console.error(`error: ${message}`, fields ?? ''),
};

async function main(): Promise<void> {
  const stack: { name: string; stop: () => Promise<void> }[] = [];
  let stopping = false;
  const stop = async (code: number) => {
    if (stopping) return;
    stopping = true;
    for (const part of stack.reverse()) {
      await part.stop().catch((error: unknown) => console.error(`stopping ${part.name}:`, error));
    }
    console.log('stopped');
    process.exit(code);
  };
  process.on('SIGINT', () => {
    if (stopping) {
      console.error('\nforced exit');
      process.exit(130);
    }
    console.log('\nstopping: letting the running drain settle (Ctrl-C again to force)...');
    void stop(0);
  });
  process.on('SIGTERM', () => void stop(0));

  try {
    let databaseUrl = env.DATABASE_URL;
    if (!databaseUrl) {
      const dataDir = devDataDir();
      console.log(`starting PostgreSQL (data in ${dataDir})...`);
      const server = await startEmbeddedPostgres({
        dataDir,
        port: portFrom('OUTBOX_PG_PORT', DEFAULT_POSTGRES_PORT),
        persistent: true,
      });
      stack.push({ name: 'PostgreSQL', stop: server.stop });
      databaseUrl = server.url;
      console.log(`PostgreSQL ${server.version} is up`);
    }
    const pool = new pg.Pool({ connectionString: databaseUrl, max: 10 });
    // An idle connection dropped by the server is discarded by the pool; it is no reason to crash.
    pool.on('error', (error) =>
      consoleLogger.warn('idle database connection lost', { error: error.message }),
    );
    stack.push({ name: 'database pool', stop: () => pool.end() });
    const db = pgExecutor(pool);
    const outbox = createOutbox();
    await outbox.migrate(db);
    await migrate(db, { schema: 'app', migrations: appMigrations });
    console.log('migrations applied');

    const { hostname, port } = new URL(databaseUrl);
    const proxy = await startNeonProxy({
      postgres: { host: hostname, port: Number(port || 5432) },
      port: portFrom('OUTBOX_NEON_PROXY_PORT', DEFAULT_NEON_PROXY_PORT),
    });
    stack.push({ name: 'Neon proxy', stop: () => proxy.close() });

    const ses = await startLocalSes({ port: portFrom('OUTBOX_SES_PORT', DEFAULT_SES_PORT) });
    stack.push({ name: 'local SES', stop: () => ses.close() });

    // Local mode only: webhooks may go to loopback receivers, over plain http.
    const senderEnv = {
      ...localSesEnv(ses),
      OUTBOX_EMAIL_FROM: 'outbox-relay <no-reply@outbox-relay.localhost>',
      OUTBOX_ENV: 'development',
      OUTBOX_WEBHOOK_ALLOW_HOSTS: '127.0.0.1,localhost,[::1]',
      ...env,
    };
    const { senders, skipped } = sendersFromEnv(senderEnv, {
      endpointSecret: endpointSecretLookup(db),
      resolveHost: nodeHostResolver,
    });
    for (const { kind, reason } of skipped) console.warn(`warn: no ${kind} sender: ${reason}`);
    const store = outbox.store(db);
    const drain = createDrainer({ store, senders, defaults: { logger: consoleLogger } });

    const adminToken = env.ADMIN_TOKEN || randomBytes(18).toString('base64url');
    const app = createApp({ db, outbox, adminToken, drain, logger: consoleLogger });
    const served = await serveApp(app, { port: portFrom('PORT', DEFAULT_APP_PORT) });

    const intervalMs = Number(env.OUTBOX_DRAIN_INTERVAL_MS || DEFAULT_DRAIN_INTERVAL_MS);
    const schedule = startDrainSchedule({
      drain,
      purgeStore: store,
      intervalMs,
      logger: consoleLogger,
      onTick: (report) => {
        if (report.claimed + report.dead > 0) {
          console.log(
            `drain: ${report.delivered} delivered, ${report.retried} retried, ${report.dead} dead, ${report.released} released (${report.durationMs} ms)`,
          );
        }
      },
    });
    // Stop order (reversed): schedule first, so its drain settles while the database is up.
    stack.push({ name: 'HTTP server', stop: () => served.close() });
    stack.push({ name: 'drain schedule', stop: () => schedule.stop() });

    console.log(`
outbox-relay is running locally.

  App          ${served.url}
               curl -X POST ${served.url}/signups -H 'content-type: application/json' \\
                 -d '{"email":"ada@example.com","name":"Ada"}'
  Inbox        ${ses.url}/            (emails the SES endpoint received; JSON at ${ses.url}/store)
  Dashboard    ${served.url}/admin    (admin token: ${adminToken})
  Metrics      curl -H 'authorization: Bearer ${adminToken}' ${served.url}/admin/metrics
  DATABASE_URL ${databaseUrl}
  Neon proxy   ${proxy.url}  (applyNeonLocalConfig(neonConfig, { port: ${proxy.port} }) from 'outbox-relay/dev')

The drain runs every ${intervalMs / 1000} s, and right after each write (the kick).
Press Ctrl-C to stop.`);
  } catch (error) {
    console.error('npm start failed:', error instanceof Error ? error.message : error);
    await stop(1);
  }
}

/**
 * One data directory per checkout, so two clones do not share a database by accident;
 * OUTBOX_DATA_DIR overrides it.
 */
function devDataDir(): string {
  if (env.OUTBOX_DATA_DIR) return env.OUTBOX_DATA_DIR;
  const checkout = createHash('sha256').update(process.cwd()).digest('hex').slice(0, 12);
  return join(tmpdir(), `outbox-relay-dev-${checkout}`);
}

await main();
