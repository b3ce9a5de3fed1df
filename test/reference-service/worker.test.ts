/**
 * The Worker in workerd (`wrangler dev`, the repo's wrangler.toml): the reference service on
 * `fetch`, the drain and purge on Cron Triggers, against real PostgreSQL through the local Neon
 * stand-in, real SES requests to the local SES endpoint, and a loopback webhook receiver.
 * Two Workers run side by side, one with the after-commit kick and one without, so each path
 * is seen delivering on its own. The one with the kick runs beside a consumer of its order
 * events' Cloudflare Queue (test/fixtures/order-events-consumer, sharing wrangler's local
 * queue), which posts what it receives to a loopback ledger here.
 */
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Webhook } from 'standardwebhooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { migrations as appMigrations } from '../../examples/reference-service/migrations.generated.js';
import { type LocalSes, localSesEnv, startLocalSes } from '../../src/dev/local-ses.js';
import { pgExecutor } from '../../src/drivers/node-pg.js';
import { createOutbox } from '../../src/outbox.js';
import { migrate } from '../../src/store/migrate.js';
import { migrations as outboxMigrations } from '../../src/store/migrations.generated.js';
import type { WranglerDev } from '../runtime/wrangler-dev.js';
import { useTestDatabase } from '../support/database.js';
import { startWebhookReceiver, type WebhookReceiver } from '../support/webhook-receiver.js';
import { startWorkerStack, type WorkerStack } from '../support/worker-stack.js';

const database = useTestDatabase();
const ADMIN_TOKEN = 'worker-admin-token-for-tests';
const DRAIN_CRON = '* * * * *';
/** The Worker's default purge cron, as in wrangler.toml. */
const PURGE_CRON = '30 * * * *';
const DAY_MS = 86_400_000;

let stack: WorkerStack;
let ses: LocalSes;
let receiver: WebhookReceiver;
let withKick: WranglerDev;
let withoutKick: WranglerDev;
const temporaryDirs: string[] = [];
/** The queue messages' bodies the consumer received, in order. */
const consumed: { id: string; kind: string; payload: { order: { id: string } } }[] = [];

beforeAll(async () => {
  await migrate(pgExecutor(database.pool), { schema: 'app', migrations: appMigrations });
  // The ledger takes the order events the consumer received.
  stack = await startWorkerStack(database, (request, response) => {
    consumed.push(...JSON.parse(request.body));
    response.end('ok');
  });
  ses = await startLocalSes();
  receiver = await startWebhookReceiver();
  const consumer = await consumerConfig(`${stack.ledger.url}/consumed`);
  const vars = {
    ADMIN_TOKEN,
    ...localSesEnv(ses),
    OUTBOX_EMAIL_FROM: 'outbox-relay <no-reply@outbox-relay.test>',
    OUTBOX_ENV: 'development',
    OUTBOX_WEBHOOK_ALLOW_HOSTS: `127.0.0.1:${receiver.port}`,
    OUTBOX_SUBREQUEST_BUDGET: '50',
  };
  [withKick, withoutKick] = await Promise.all([
    stack.startWorker(vars, { alongside: [consumer.path] }),
    stack.startWorker({ ...vars, OUTBOX_KICK: 'off' }),
  ]);
}, 120_000);

afterAll(async () => {
  await stack?.stop();
  await Promise.all([receiver?.close(), ses?.close()]);
  await Promise.all(temporaryDirs.map((dir) => rm(dir, { recursive: true, force: true })));
});

/**
 * The consumer fixture's wrangler.toml with the ledger's URL among its vars, in a temp folder:
 * `wrangler dev` gives its env file to the first Worker only.
 */
async function consumerConfig(ledgerUrl: string): Promise<{ path: string }> {
  const fixture = fileURLToPath(
    new URL('../fixtures/order-events-consumer/wrangler.toml', import.meta.url),
  );
  const dir = await mkdtemp(join(tmpdir(), 'outbox-order-events-consumer-'));
  temporaryDirs.push(dir);
  const toml = (await readFile(fixture, 'utf8')).replace(
    'main = "worker.ts"',
    `main = ${JSON.stringify(join(dirname(fixture), 'worker.ts'))}`,
  );
  const path = join(dir, 'wrangler.toml');
  await writeFile(path, `${toml}\n[vars]\nLEDGER_URL = ${JSON.stringify(ledgerUrl)}\n`);
  return { path };
}

function postJson(url: string, body: unknown, headers: Record<string, string> = {}) {
  return fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: JSON.stringify(body),
  });
}

interface StoredEmail {
  subject: string;
  destination: { to: string[] };
}

async function emailsTo(address: string): Promise<StoredEmail[]> {
  const store = (await (await fetch(`${ses.url}/store`)).json()) as { emails: StoredEmail[] };
  return store.emails.filter((email) => email.destination.to.some((to) => to.includes(address)));
}

/** Polls until `check` returns a value, or fails after `timeoutMs`. */
async function eventually<T>(check: () => Promise<T | undefined>, timeoutMs = 10_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`not true within ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

async function messageStates(keys: readonly string[]): Promise<Record<string, string>> {
  const { rows } = await database.pool.query<{ key: string; state: string }>(
    'SELECT key::text, state FROM outbox.all_messages WHERE key = ANY($1::uuid[])',
    [keys],
  );
  return Object.fromEntries(rows.map((row) => [row.key, row.state]));
}

let emailCounter = 0;
const uniqueEmail = () => `worker${++emailCounter}-${Date.now()}@example.com`;

describe('the Worker on fetch', () => {
  it('POST /signups answers 201 and commits the user with its welcome email', async () => {
    const email = uniqueEmail();
    const response = await postJson(`${withoutKick.url}/signups`, { email, name: 'Ada' });
    expect(response.status).toBe(201);
    const body = (await response.json()) as { user: { id: string }; messageKeys: string[] };
    const { rows } = await database.pool.query('SELECT email FROM app.users WHERE id = $1', [
      body.user.id,
    ]);
    expect(rows).toEqual([{ email }]);
    // No kick on this Worker: the email waits for the cron.
    expect(await messageStates(body.messageKeys)).toEqual({ [body.messageKeys[0]!]: 'pending' });
  });

  it('the kick delivers a signup email after the response, with no cron', async () => {
    const email = uniqueEmail();
    const response = await postJson(`${withKick.url}/signups`, { email, name: 'Grace' });
    expect(response.status).toBe(201);
    const { messageKeys } = (await response.json()) as { messageKeys: string[] };
    const [received] = await eventually(async () => {
      const emails = await emailsTo(email);
      return emails.length > 0 ? emails : undefined;
    });
    expect(received!.subject).toBe('Welcome, Grace');
    await eventually(async () =>
      (await messageStates(messageKeys))[messageKeys[0]!] === 'delivered' ? true : undefined,
    );
  });

  it('an order sends its order.placed event to the Cloudflare Queue, under its message key as the id', async () => {
    const signup = await postJson(`${withKick.url}/signups`, { email: uniqueEmail(), name: 'Ida' });
    const { user } = (await signup.json()) as { user: { id: string } };
    const response = await postJson(`${withKick.url}/orders`, {
      userId: user.id,
      items: [{ sku: 'kettle', qty: 1, unitPriceCents: 3_900 }],
    });
    expect(response.status).toBe(201);
    const placed = (await response.json()) as { order: { id: string }; messageKeys: string[] };
    const event = await eventually(async () =>
      consumed.find((body) => body.payload?.order?.id === placed.order.id),
    );
    expect(event).toMatchObject({
      kind: 'order.placed',
      payload: { order: { totalCents: 3_900 } },
    });
    expect(placed.messageKeys).toContain(event.id);
    const { rows } = await database.pool.query(
      'SELECT ordering_key FROM outbox.all_messages WHERE key = $1::uuid',
      [event.id],
    );
    // One customer's events in order.
    expect(rows).toEqual([{ ordering_key: `user:${user.id}` }]);
    await eventually(async () =>
      (await messageStates([event.id]))[event.id] === 'delivered' ? true : undefined,
    );
  });

  it('POST /admin/migrate applies nothing new to a migrated database, and needs the token', async () => {
    const refused = await fetch(`${withKick.url}/admin/migrate`, { method: 'POST' });
    expect(refused.status).toBe(401);
    const response = await fetch(`${withKick.url}/admin/migrate`, {
      method: 'POST',
      headers: { authorization: `Bearer ${ADMIN_TOKEN}` },
    });
    expect(response.status).toBe(200);
    expect(await response.json()).toEqual({
      outbox: { schema: 'outbox', applied: [], version: outboxMigrations.at(-1)?.version },
      app: { schema: 'app', applied: [], version: 2 },
    });
  });
});

describe('the Worker on its Cron Triggers', () => {
  it('the drain cron delivers pending signups: the email to SES, the webhook signed to its endpoint', async () => {
    const endpoint = await postJson(
      `${withoutKick.url}/webhook-endpoints`,
      { url: `${receiver.url}/hooks`, events: ['user.created'] },
      { authorization: `Bearer ${ADMIN_TOKEN}` },
    );
    expect(endpoint.status).toBe(201);
    const { secret } = (await endpoint.json()) as { secret: string };
    const email = uniqueEmail();
    const signup = await postJson(`${withoutKick.url}/signups`, { email, name: 'Edsger' });
    expect(signup.status).toBe(201);
    const { messageKeys } = (await signup.json()) as { messageKeys: string[] };
    expect(messageKeys).toHaveLength(2);
    expect(Object.values(await messageStates(messageKeys))).toEqual(['pending', 'pending']);

    const ran = await withoutKick.scheduled(DRAIN_CRON);
    expect(ran.status).toBe(200);

    // The handler awaited its drain, so both outcomes are recorded once the cron returns.
    expect(Object.values(await messageStates(messageKeys))).toEqual(['delivered', 'delivered']);
    expect((await emailsTo(email)).map((sent) => sent.subject)).toEqual(['Welcome, Edsger']);
    const hook = receiver.received.find((request) =>
      messageKeys.includes(request.headers['webhook-id'] ?? ''),
    );
    expect(hook).toBeDefined();
    const verifier = new Webhook(secret.slice('whsec_'.length));
    expect(verifier.verify(hook!.body, hook!.headers)).toMatchObject({
      type: 'user.created',
    });
    // The Worker's console reaches us through wrangler's stdout, a moment after the response.
    const report = await eventually(async () =>
      withoutKick
        .jsonLines()
        .find((line) => line.message === 'outbox drain' && Number(line.delivered) >= 2),
    );
    expect(report).toMatchObject({ cron: DRAIN_CRON, stopReason: 'empty', stale: 0 });
  });

  it('the purge cron deletes old delivered messages and leaves pending ones alone', async () => {
    const outbox = createOutbox();
    const db = pgExecutor(database.pool);
    const [oldKey, pendingKey] = await outbox.enqueue(db, [
      { kind: 'webhook', payload: { url: `${receiver.url}/old`, body: {} } },
      { kind: 'webhook', payload: { url: `${receiver.url}/later`, body: {} }, delayMs: DAY_MS },
    ]);
    await database.pool.query(
      `UPDATE outbox.messages SET state = 'delivered', attempts = 1,
         delivered_at = now() - interval '8 days' WHERE key = $1`,
      [oldKey],
    );

    const ran = await withoutKick.scheduled(PURGE_CRON);
    expect(ran.status).toBe(200);

    expect(await messageStates([oldKey!, pendingKey!])).toEqual({ [pendingKey!]: 'pending' });
    const report = await eventually(async () =>
      withoutKick.jsonLines().find((line) => line.message === 'outbox purge'),
    );
    expect(report).toMatchObject({ cron: PURGE_CRON });
    expect(Number(report.deliveredDeleted)).toBeGreaterThanOrEqual(1);
  });
});
