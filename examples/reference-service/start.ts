/**
 * `npm start`: the whole system locally, on embedded defaults, with no other setup.
 *
 * PostgreSQL (embedded, data kept between runs; DATABASE_URL uses another server instead), the
 * local Neon stand-in, a local SES endpoint with a web inbox, a local SQS endpoint with a queue
 * for order events (unless OUTBOX_SQS_QUEUE_URL names another), the reference service on Node over
 * Neon's HTTP driver (the path every deployment takes) with the after-commit kick, and a drain
 * schedule that behaves like the serverless one. Ctrl-C lets the running drain settle, stops
 * every server and PostgreSQL, and exits 0; a second Ctrl-C forces.
 *
 *   npm start                  # everything
 *   npm start -- --no-drain    # no Node drain: let `wrangler dev --test-scheduled` cron deliver
 */
import { createHash, randomBytes } from 'node:crypto';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { describeError } from 'outbox-relay';
import {
  localSesEnv,
  localSqsEnv,
  startEmbeddedPostgres,
  startLocalSes,
  startLocalSqs,
  startNeonProxy,
} from 'outbox-relay/dev';
import { postgresUrlFromEnv } from 'outbox-relay/env';
import { nodeHostResolver, serveApp, startDrainSchedule } from 'outbox-relay/node';
import { sqsSenderFromEnv } from 'outbox-relay/sqs';
import { migrateReferenceService, referenceApp, referenceServiceFromEnv } from './service.js';

/** Fixed default ports, so printed URLs stay the same from one run to the next. */
const DEFAULT_APP_PORT = 3000;
const DEFAULT_POSTGRES_PORT = 54329;
const DEFAULT_NEON_PROXY_PORT = 54330;
const DEFAULT_SES_PORT = 8005;
const DEFAULT_SQS_PORT = 8006;
/** The local queue orders' `order.placed` events go to. */
const ORDER_EVENTS_QUEUE = 'order-events';

/** Drain every 3 s locally: a message sent by the schedule alone still arrives "at once". */
const DEFAULT_DRAIN_INTERVAL_MS = 3_000;

const USAGE = 'usage: npm start [-- --no-drain]';

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

function parseFlags(): { drain: boolean } {
  try {
    const { values } = parseArgs({
      args: process.argv.slice(2),
      options: { 'no-drain': { type: 'boolean' }, help: { type: 'boolean', short: 'h' } },
      strict: true,
    });
    if (values.help) {
      console.log(USAGE);
      process.exit(0);
    }
    return { drain: !values['no-drain'] };
  } catch (error) {
    console.error(`${error instanceof Error ? error.message : error}\n${USAGE}`);
    process.exit(2);
  }
}

async function main(): Promise<void> {
  const flags = parseFlags();
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
  // One Ctrl-C under `npm start` arrives twice (the terminal signals the whole process group and
  // npm forwards it to its child again): a SIGINT this soon after the first is the same press.
  const samePressMs = 500;
  let firstSigintAt = 0;
  process.on('SIGINT', () => {
    if (stopping) {
      if (Date.now() - firstSigintAt < samePressMs) return;
      console.error('\nforced exit');
      process.exit(130);
    }
    firstSigintAt = Date.now();
    console.log('\nstopping: letting the running drain settle (Ctrl-C again to force)...');
    void stop(0);
  });
  process.on('SIGTERM', () => void stop(0));

  try {
    // Everything goes through the Neon stand-in, which (like Neon) needs the password in the URL.
    let databaseUrl = env.DATABASE_URL
      ? postgresUrlFromEnv(env, 'DATABASE_URL', { requirePassword: true })
      : undefined;
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

    const { hostname, port } = new URL(databaseUrl);
    const proxy = await startNeonProxy({
      postgres: { host: hostname, port: Number(port || 5432) },
      port: portFrom('OUTBOX_NEON_PROXY_PORT', DEFAULT_NEON_PROXY_PORT),
    });
    stack.push({ name: 'Neon proxy', stop: () => proxy.close() });

    const ses = await startLocalSes({ port: portFrom('OUTBOX_SES_PORT', DEFAULT_SES_PORT) });
    stack.push({ name: 'local SES', stop: () => ses.close() });

    // A local queue for order events, unless the environment names a queue of its own.
    let queueLine = `  Queue        ${env.OUTBOX_SQS_QUEUE_URL}  (order.placed events)`;
    let sqsEnv: Record<string, string> = {};
    if (!env.OUTBOX_SQS_QUEUE_URL) {
      const sqs = await startLocalSqs({ port: portFrom('OUTBOX_SQS_PORT', DEFAULT_SQS_PORT) });
      stack.push({ name: 'local SQS', stop: () => sqs.close() });
      sqsEnv = localSqsEnv(sqs, await sqs.createQueue(ORDER_EVENTS_QUEUE));
      queueLine = `  Queue        ${sqs.inspectUrl(ORDER_EVENTS_QUEUE)}  (order.placed events on the local SQS queue, JSON)`;
    }

    const adminToken = env.ADMIN_TOKEN || randomBytes(18).toString('base64url');
    // The deployed service's settings, pointed at the local stack: Neon's HTTP driver through
    // the stand-in, SES at the local endpoint, webhooks allowed to loopback receivers over http.
    const serviceEnv = {
      ...localSesEnv(ses),
      ...sqsEnv,
      OUTBOX_EMAIL_FROM: 'outbox-relay <no-reply@outbox-relay.localhost>',
      OUTBOX_ENV: 'development',
      OUTBOX_WEBHOOK_ALLOW_HOSTS: '127.0.0.1,localhost,[::1]',
      // Set and empty reads as unset (readEnv), so it must not hide a local default either.
      ...Object.fromEntries(Object.entries(env).filter(([, value]) => value !== '')),
      DATABASE_URL: databaseUrl,
      NEON_LOCAL_PROXY: `127.0.0.1:${proxy.port}`,
      ADMIN_TOKEN: adminToken,
    };
    const service = referenceServiceFromEnv(serviceEnv, {
      resolveHost: nodeHostResolver,
      logFields: { runtime: 'node' },
      orderEvents: sqsSenderFromEnv(serviceEnv),
    });
    await migrateReferenceService(service);
    console.log('migrations applied (over Neon HTTP through the local stand-in)');
    for (const { kind, reason } of service.skipped)
      console.warn(`warn: no ${kind} sender: ${reason}`);

    const served = await serveApp(referenceApp(service), {
      port: portFrom('PORT', DEFAULT_APP_PORT),
    });
    stack.push({ name: 'HTTP server', stop: () => served.close() });

    const intervalMs = Number(env.OUTBOX_DRAIN_INTERVAL_MS || DEFAULT_DRAIN_INTERVAL_MS);
    if (flags.drain) {
      const schedule = startDrainSchedule(service.drainer, {
        intervalMs,
        // A terminal, not a log shipper: a line for each tick that did something, in words.
        logRuns: false,
        onTick: (report) => {
          if (report.claimed + report.dead > 0) {
            console.log(
              `drain: ${report.delivered} delivered, ${report.retried} retried, ${report.dead} dead, ${report.released} released (${report.durationMs} ms)`,
            );
          }
        },
      });
      // Stop order (reversed): schedule first, so its drain settles while the database is up.
      stack.push({ name: 'drain schedule', stop: () => schedule.stop() });
    }

    const delivery = flags.drain
      ? `The drain runs every ${intervalMs / 1000} s, and right after each write (the kick).`
      : 'No Node drain (--no-drain): delivery is the kick after each write (OUTBOX_KICK=off for none)\nand whatever drain you run yourself, e.g. `wrangler dev --test-scheduled` with the .dev.vars in docs/deploy.md.';
    console.log(`
outbox-relay is running locally.

  App          ${served.url}
               curl -X POST ${served.url}/signups -H 'content-type: application/json' \\
                 -d '{"email":"ada@example.com","name":"Ada"}'
  Inbox        ${ses.url}/            (emails the SES endpoint received; JSON at ${ses.url}/store)
${queueLine}
  Dashboard    ${served.url}/admin    (admin token: ${adminToken})
  Metrics      curl -H 'authorization: Bearer ${adminToken}' ${served.url}/admin/metrics
  DATABASE_URL ${databaseUrl}
  Neon proxy   ${proxy.url}  (NEON_LOCAL_PROXY=127.0.0.1:${proxy.port} for a Worker or the CLI's neon driver)

${delivery}
Press Ctrl-C to stop.`);
  } catch (error) {
    console.error(`npm start failed: ${describeError(error)}`);
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
