/**
 * A Node service as a user writes one against the installed package: every subpath, with the
 * types it hands back used the way the docs show. Type-checked (strict, nodenext and bundler
 * resolution) in test/package/consumer.test.ts; never run.
 */
import {
  createDrainer,
  createOutbox,
  type DrainReport,
  drainOnce,
  isOutboxError,
  type Outbox,
  pgExecutor,
  type Sender,
} from 'outbox-relay';
import { outboxAdmin } from 'outbox-relay/admin';
import { awaitBackgroundWork, lambdaScheduledHandler } from 'outbox-relay/aws-lambda';
import { defineConfig } from 'outbox-relay/cli';
import { type EmbeddedPostgres, startEmbeddedPostgres, startNeonProxy } from 'outbox-relay/dev';
import { readEnv } from 'outbox-relay/env';
import { applyNeonLocalProxy } from 'outbox-relay/neon-local';
import { serveApp, startDrainSchedule } from 'outbox-relay/node';
import { sesSenderFromEnv } from 'outbox-relay/ses';
import { migrate, quoteSchema } from 'outbox-relay/sql';
import { webhookSender, webhookSenderFromEnv } from 'outbox-relay/webhook';
import pg from 'pg';

const pool = new pg.Pool({ connectionString: process.env.DATABASE_URL });
const outbox: Outbox = createOutbox();
await outbox.migrate(pgExecutor(pool));

const client = await pool.connect();
await client.query('BEGIN');
const [key] = await outbox.enqueue(pgExecutor(client), {
  kind: 'webhook',
  payload: { url: 'https://example.com/hook', body: { hello: 'world' } },
});
await client.query('COMMIT');
client.release();
const written: string | undefined = key;

const custom: Sender = async (message, signal) => {
  signal.throwIfAborted();
  console.log(message.key, message.kind);
};
const webhook: Sender = webhookSender({ secret: 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw' });
const report: DrainReport = await drainOnce({
  store: outbox.store(pgExecutor(pool)),
  senders: { webhook, custom },
});

const email = sesSenderFromEnv(process.env);
const fromEnv = {
  webhook: webhookSenderFromEnv(process.env, { resolveHost: false }),
  ...(email ? { email } : {}),
};
await drainOnce({ store: outbox.store(pgExecutor(pool)), senders: fromEnv });
await migrate(pgExecutor(pool), {
  schema: readEnv(process.env, 'APP_SCHEMA') ?? 'shop',
  migrations: [{ version: 1, name: 'orders', sql: 'CREATE TABLE {{schema}}.orders (id int)' }],
});
export const orders = `${quoteSchema('shop')}.orders`;
export const config = defineConfig({ drain: { batchSize: 50 } });

const admin = outboxAdmin({ store: outbox.store(pgExecutor(pool)), token: 'secret' });
const served = serveApp(admin, { port: 0 });
const drain = createDrainer({ store: outbox.store(pgExecutor(pool)), senders: { webhook } });
const schedule = startDrainSchedule(
  { store: outbox.store(pgExecutor(pool)), senders: { webhook }, purge: { deadOlderThanMs: null } },
  { intervalMs: 5_000, logFields: { service: 'consumer' } },
);
export const handler = lambdaScheduledHandler(() => ({
  store: outbox.store(pgExecutor(pool)),
  senders: { webhook },
}));
export const background = awaitBackgroundWork;

const postgres: EmbeddedPostgres = await startEmbeddedPostgres({
  dataDir: '/tmp/outbox',
  persistent: false,
});
const proxy = await startNeonProxy({
  postgres: { host: postgres.host, port: postgres.port },
});

export { applyNeonLocalProxy, drain, isOutboxError, proxy, report, schedule, served, written };
