/**
 * The Lambda bundles as deployed: built by scripts/build-lambda.ts, imported from the built
 * `.mjs` files and invoked with API Gateway v2 and EventBridge events and a context whose
 * remaining time counts down, against real PostgreSQL (through the local Neon stand-in, as the
 * bundle's own Neon driver sees it), the local SES endpoint, a local SQS endpoint for the order
 * events, and a loopback webhook receiver.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import type {
  LambdaContextLike,
  ScheduledRunResult as ScheduledResult,
} from 'outbox-relay/aws-lambda';
import { Webhook } from 'standardwebhooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { migrations as appMigrations } from '../../examples/reference-service/migrations.generated.js';
import { buildLambda, type LambdaBundle } from '../../scripts/build-lambda.js';
import { type LocalSes, localSesEnv, startLocalSes } from '../../src/dev/local-ses.js';
import { type LocalSqs, localSqsEnv, startLocalSqs } from '../../src/dev/local-sqs.js';
import { type NeonProxy, startNeonProxy } from '../../src/dev/neon-proxy.js';
import { pgExecutor } from '../../src/drivers/node-pg.js';
import { createOutbox } from '../../src/outbox.js';
import { generateWebhookSecret } from '../../src/senders/webhook/webhook-signature.js';
import { migrate } from '../../src/store/migrate.js';
import { migrations as outboxMigrations } from '../../src/store/migrations.generated.js';
import { insertMessageIn } from '../cli/message-rows.js';
import { useTestDatabase } from '../support/database.js';
import { startWebhookReceiver, type WebhookReceiver } from '../support/webhook-receiver.js';

const database = useTestDatabase();
const outbox = createOutbox();
const ADMIN_TOKEN = 'lambda-admin-token-for-tests';
const WEBHOOK_SECRET = generateWebhookSecret();
/** What the test gives each scheduled invocation, as a function's timeout would. */
const INVOCATION_MS = 10_000;
const DAY_MS = 86_400_000;
/** Where OUTBOX_SQS_QUEUE_URL points: the reference service's order events. */
const ORDER_EVENTS_QUEUE = 'order-events';

type HttpHandler = (
  event: Record<string, unknown>,
  context: LambdaContextLike,
) => Promise<{ statusCode: number; body: string; headers?: Record<string, string> }>;
type ScheduledHandler = (
  event: Record<string, unknown>,
  context: LambdaContextLike,
) => Promise<ScheduledResult>;

let dir: string;
let bundles: Record<string, LambdaBundle>;
let proxy: NeonProxy;
let ses: LocalSes;
let sqs: LocalSqs;
let receiver: WebhookReceiver;
let httpHandler: HttpHandler;
let scheduledHandler: ScheduledHandler;
const savedEnv = { ...process.env };

beforeAll(async () => {
  await migrate(pgExecutor(database.pool), { schema: 'app', migrations: appMigrations });
  dir = await mkdtemp(join(tmpdir(), 'outbox-relay-lambda-'));
  bundles = Object.fromEntries((await buildLambda(dir)).map((bundle) => [bundle.name, bundle]));
  proxy = await startNeonProxy({ postgres: { host: database.host, port: database.port } });
  ses = await startLocalSes();
  sqs = await startLocalSqs();
  receiver = await startWebhookReceiver();
  // What serverless.yml would set; the bundles read process.env at their first invocation.
  Object.assign(process.env, {
    DATABASE_URL: database.url,
    NEON_LOCAL_PROXY: `127.0.0.1:${proxy.port}`,
    ADMIN_TOKEN,
    ...localSesEnv(ses),
    ...localSqsEnv(sqs, await sqs.createQueue(ORDER_EVENTS_QUEUE)),
    OUTBOX_EMAIL_FROM: 'outbox-relay <no-reply@outbox-relay.test>',
    OUTBOX_ENV: 'development',
    OUTBOX_WEBHOOK_ALLOW_HOSTS: `127.0.0.1:${receiver.port}`,
    OUTBOX_WEBHOOK_SECRET: WEBHOOK_SECRET,
  });
  ({ httpHandler } = await import(pathToFileURL(bundles.http!.path).href));
  ({ scheduledHandler } = await import(pathToFileURL(bundles.drain!.path).href));
});

afterAll(async () => {
  for (const name of Object.keys(process.env)) {
    if (!(name in savedEnv)) delete process.env[name];
  }
  Object.assign(process.env, savedEnv);
  await Promise.all([receiver?.close(), ses?.close(), sqs?.close(), proxy?.close()]);
  if (dir) await rm(dir, { recursive: true, force: true });
});

/**
 * A Lambda context whose remaining time runs down from `ms`, like the real one: on the monotonic
 * clock, so a step of this machine's wall clock (one of 16 s made a drain that took 4 s read 20
 * in a CI run) does not eat the invocation's time.
 */
function countdownContext(ms: number): LambdaContextLike {
  const endsAt = performance.now() + ms;
  return {
    awsRequestId: crypto.randomUUID(),
    getRemainingTimeInMillis: () => Math.floor(endsAt - performance.now()),
  };
}

/** An EventBridge `rate(1 minute)` event, as Lambda receives it. */
function scheduledEvent(time: string): Record<string, unknown> {
  return {
    version: '0',
    id: crypto.randomUUID(),
    'detail-type': 'Scheduled Event',
    source: 'aws.events',
    account: '123456789012',
    time,
    region: 'us-east-1',
    resources: ['arn:aws:events:us-east-1:123456789012:rule/outbox-relay-drain'],
    detail: {},
  };
}

/** An API Gateway HTTP API (payload format 2.0) request event. */
function httpEvent(
  method: string,
  path: string,
  body?: unknown,
  headers: Record<string, string> = {},
): Record<string, unknown> {
  const domainName = 'abc123.execute-api.us-east-1.amazonaws.com';
  return {
    version: '2.0',
    routeKey: '$default',
    rawPath: path,
    rawQueryString: '',
    headers: { host: domainName, 'content-type': 'application/json', ...headers },
    requestContext: {
      accountId: '123456789012',
      apiId: 'abc123',
      domainName,
      domainPrefix: 'abc123',
      http: { method, path, protocol: 'HTTP/1.1', sourceIp: '203.0.113.7', userAgent: 'test' },
      requestId: crypto.randomUUID(),
      routeKey: '$default',
      stage: '$default',
      time: new Date().toUTCString(),
      timeEpoch: Date.now(),
    },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    isBase64Encoded: false,
  };
}

interface StoredEmail {
  subject: string;
  destination: { to: string[] };
}

async function emailsTo(address: string): Promise<StoredEmail[]> {
  const store = (await (await fetch(`${ses.url}/store`)).json()) as { emails: StoredEmail[] };
  return store.emails.filter((email) => email.destination.to.some((to) => to.includes(address)));
}

async function messageStates(keys: readonly string[]): Promise<Record<string, string>> {
  const { rows } = await database.pool.query<{ key: string; state: string }>(
    'SELECT key::text, state FROM outbox.all_messages WHERE key = ANY($1::uuid[])',
    [keys],
  );
  return Object.fromEntries(rows.map((row) => [row.key, row.state]));
}

let emailCounter = 0;
const uniqueEmail = () => `lambda${++emailCounter}-${Date.now()}@example.com`;

describe('the Lambda bundles', () => {
  it('build as one ES module and one zip per function', () => {
    expect(Object.keys(bundles).sort()).toEqual(['drain', 'http']);
    expect(bundles.http!.handler).toBe('http.httpHandler');
    expect(bundles.drain!.handler).toBe('drain.scheduledHandler');
    for (const bundle of Object.values(bundles)) expect(bundle.zipBytes).toBeGreaterThan(0);
  });
});

describe('httpHandler (API Gateway HTTP API)', () => {
  it('POST /signups answers 201, and the kick has delivered the email before it returns', async () => {
    const email = uniqueEmail();
    const result = await httpHandler(
      httpEvent('POST', '/signups', { email, name: 'Ada' }),
      countdownContext(INVOCATION_MS),
    );
    expect(result.statusCode).toBe(201);
    const body = JSON.parse(result.body) as { user: { id: string }; messageKeys: string[] };
    const { rows } = await database.pool.query('SELECT email FROM app.users WHERE id = $1', [
      body.user.id,
    ]);
    expect(rows).toEqual([{ email }]);
    // Lambda freezes the sandbox once the handler returns, so the kick must already be done.
    expect(await messageStates(body.messageKeys)).toEqual({
      [body.messageKeys[0]!]: 'delivered',
    });
    expect((await emailsTo(email)).map((sent) => sent.subject)).toEqual(['Welcome, Ada']);
  });

  it('POST /orders: the kick has sent the order.placed event to the SQS queue before it returns', async () => {
    const signup = await httpHandler(
      httpEvent('POST', '/signups', { email: uniqueEmail(), name: 'Oda' }),
      countdownContext(INVOCATION_MS),
    );
    const { user } = JSON.parse(signup.body) as { user: { id: string } };
    const result = await httpHandler(
      httpEvent('POST', '/orders', {
        userId: user.id,
        items: [{ sku: 'LAMP', qty: 1, unitPriceCents: 2_500 }],
      }),
      countdownContext(INVOCATION_MS),
    );
    expect(result.statusCode).toBe(201);
    const { order, messageKeys } = JSON.parse(result.body) as {
      order: { id: string };
      messageKeys: string[];
    };
    const queue = (await (await fetch(sqs.inspectUrl(ORDER_EVENTS_QUEUE))).json()) as {
      messages: {
        ready: { body: string; messageAttributes: Record<string, { StringValue: string }> }[];
      };
    };
    const event = queue.messages.ready.find(
      (message) => JSON.parse(message.body).order?.id === order.id,
    );
    expect(messageKeys).toContain(event?.messageAttributes['outbox-message-key']?.StringValue);
    expect(await messageStates(messageKeys)).toEqual(
      Object.fromEntries(messageKeys.map((key) => [key, 'delivered'])),
    );
  });

  it('POST /admin/migrate needs the admin token, then reports both schemas current', async () => {
    const refused = await httpHandler(
      httpEvent('POST', '/admin/migrate'),
      countdownContext(INVOCATION_MS),
    );
    expect(refused.statusCode).toBe(401);
    const result = await httpHandler(
      httpEvent('POST', '/admin/migrate', undefined, { authorization: `Bearer ${ADMIN_TOKEN}` }),
      countdownContext(INVOCATION_MS),
    );
    expect(result.statusCode).toBe(200);
    expect(JSON.parse(result.body)).toEqual({
      outbox: { schema: 'outbox', applied: [], version: outboxMigrations.at(-1)?.version },
      app: { schema: 'app', applied: [], version: 2 },
    });
  });
});

describe('scheduledHandler (EventBridge)', () => {
  it('delivers pending emails and webhooks and returns well before its deadline', async () => {
    const email = uniqueEmail();
    const db = pgExecutor(database.pool);
    const keys = await outbox.enqueue(db, [
      { kind: 'email', payload: { to: [email], subject: 'First', text: 'one' } },
      { kind: 'email', payload: { to: [email], subject: 'Second', text: 'two' } },
      { kind: 'webhook', payload: { url: `${receiver.url}/orders`, body: { order: 7 } } },
    ]);
    const context = countdownContext(INVOCATION_MS);

    const result = await scheduledHandler(scheduledEvent('2026-01-15T10:07:00Z'), context);

    expect(context.getRemainingTimeInMillis()).toBeGreaterThan(INVOCATION_MS / 2);
    expect(result.drain).toMatchObject({ stopReason: 'empty', dead: 0, stale: 0 });
    expect(result.drain?.delivered).toBeGreaterThanOrEqual(3);
    expect(result.purge).toBeUndefined();
    expect(Object.values(await messageStates(keys))).toEqual([
      'delivered',
      'delivered',
      'delivered',
    ]);
    expect((await emailsTo(email)).map((sent) => sent.subject).sort()).toEqual(['First', 'Second']);
    const hook = receiver.received.find((request) => request.headers['webhook-id'] === keys[2]);
    const verifier = new Webhook(WEBHOOK_SECRET.slice('whsec_'.length));
    expect(verifier.verify(hook!.body, hook!.headers)).toEqual({ order: 7 });
  });

  it('returns before its deadline when a receiver hangs, with the send retried later', async () => {
    const [key] = await outbox.enqueue(pgExecutor(database.pool), {
      kind: 'webhook',
      payload: { url: `${receiver.url}/hangs`, body: {} },
    });
    receiver.hold();
    try {
      const context = countdownContext(INVOCATION_MS);
      const result = await scheduledHandler(scheduledEvent('2026-01-15T10:08:00Z'), context);

      // Sends get at most half the budget (about 4 s of the 8 s left after the safety margin),
      // so the hung send timed out, was settled as a retry, and the drain stopped in time.
      expect(context.getRemainingTimeInMillis()).toBeGreaterThan(0);
      expect(result.drain).toMatchObject({ retried: 1, delivered: 0, released: 0 });
      const { rows } = await database.pool.query(
        'SELECT state, attempts, last_error FROM outbox.all_messages WHERE key = $1',
        [key],
      );
      expect(rows[0]).toMatchObject({ state: 'pending', attempts: 1 });
      expect(rows[0].last_error).toMatch(/timed out/);
    } finally {
      receiver.release();
    }
  });

  it('at minute 30 purges old delivered messages after draining', async () => {
    const oldId = await insertMessageIn(database.pool, 'delivered', { ageMs: 8 * DAY_MS });
    const result = await scheduledHandler(
      scheduledEvent('2026-01-15T10:30:00Z'),
      countdownContext(INVOCATION_MS),
    );
    expect(result.purge?.deliveredDeleted).toBeGreaterThanOrEqual(1);
    const { rowCount } = await database.pool.query(
      'SELECT 1 FROM outbox.all_messages WHERE id = $1',
      [oldId],
    );
    expect(rowCount).toBe(0);
  });
});
