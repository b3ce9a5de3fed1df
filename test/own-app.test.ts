/**
 * A user's own app (examples/own-app, shipped in the package as an example: its own table,
 * routes and sender; NOT the reference service) built on the library's public exports, run as
 * its README says: its migrate.ts, the Workers kit's cron in real workerd (`wrangler dev`), the
 * Lambda kit's scheduled handler from an esbuild bundle invoked with an EventBridge event, and
 * node.ts in its own process. Each delivers through real PostgreSQL (Workers and Lambda via the
 * local Neon stand-in, over Neon's HTTP driver) to a loopback webhook receiver.
 */
import { execFile, spawn } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { build } from 'esbuild';
import type { LambdaContextLike } from 'outbox-relay/aws-lambda';
import { type NeonProxy, startNeonProxy } from 'outbox-relay/dev';
import { generateWebhookSecret } from 'outbox-relay/webhook';
import { Webhook } from 'standardwebhooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort, startWranglerDev, type WranglerDev } from './runtime/wrangler-dev.js';
import { useTestDatabase } from './support/database.js';
import { waitFor } from './support/wait-for.js';
import { startWebhookReceiver, type WebhookReceiver } from './support/webhook-receiver.js';

const example = fileURLToPath(new URL('../examples/own-app/', import.meta.url));
const database = useTestDatabase();
const WEBHOOK_SECRET = generateWebhookSecret();

let proxy: NeonProxy;
let receiver: WebhookReceiver;

beforeAll(async () => {
  proxy = await startNeonProxy({ postgres: { host: database.host, port: database.port } });
  receiver = await startWebhookReceiver();
  // As its README says: migrate.ts once, over Neon HTTP, before the Worker or the Lambda runs.
  const { stdout } = await promisify(execFile)(
    process.execPath,
    ['--import', 'tsx', join(example, 'migrate.ts')],
    {
      env: {
        ...process.env,
        DATABASE_URL: database.url,
        NEON_LOCAL_PROXY: `127.0.0.1:${proxy.port}`,
      },
    },
  );
  expect(stdout).toContain('migrated');
});

afterAll(async () => {
  await Promise.all([receiver?.close(), proxy?.close()]);
});

/** The webhooks received for this ticket title, each checked against the app's secret. */
function verifiedFor(title: string): Record<string, unknown>[] {
  const webhook = new Webhook(WEBHOOK_SECRET);
  return receiver.received.flatMap((request) => {
    const body = request.body;
    const event = webhook.verify(body, {
      'webhook-id': String(request.headers['webhook-id']),
      'webhook-timestamp': String(request.headers['webhook-timestamp']),
      'webhook-signature': String(request.headers['webhook-signature']),
    }) as { data: { title: string } };
    return event.data.title === title ? [event as unknown as Record<string, unknown>] : [];
  });
}

async function states(keys: readonly string[]): Promise<string[]> {
  const { rows } = await database.pool.query<{ state: string }>(
    'SELECT state FROM outbox.all_messages WHERE key = ANY($1::uuid[]) ORDER BY key',
    [keys],
  );
  return rows.map((row) => row.state);
}

describe('an app of its own on Workers', () => {
  let worker: WranglerDev;

  beforeAll(async () => {
    worker = await startWranglerDev(
      {
        DATABASE_URL: database.url,
        NEON_LOCAL_PROXY: `127.0.0.1:${proxy.port}`,
        WEBHOOK_SECRET,
        ALLOW_HOSTS: `127.0.0.1:${receiver.port}`,
        KICK: 'off',
        ADMIN_TOKEN: 'own-app-admin',
      },
      { config: join(example, 'wrangler.toml') },
    );
  }, 120_000);

  afterAll(async () => {
    await worker?.stop();
  });

  it('enqueues in its own transaction, and its cron delivers through the kit', async () => {
    const response = await fetch(`${worker.url}/tickets`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ title: 'worker ticket', notifyUrl: `${receiver.url}/hooks` }),
    });
    expect(response.status).toBe(201);
    const { messageKeys } = (await response.json()) as { messageKeys: string[] };
    const { rows } = await database.pool.query(
      "SELECT title FROM shop.tickets WHERE title = 'worker ticket'",
    );
    expect(rows).toHaveLength(1);
    expect(await states(messageKeys)).toEqual(['pending']);

    expect((await worker.scheduled('* * * * *')).status).toBe(200);

    expect(await states(messageKeys)).toEqual(['delivered']);
    expect(verifiedFor('worker ticket')).toHaveLength(1);
    // wrangler relays the Worker's console a moment after the response.
    const drainLine = () => worker.jsonLines().find((line) => line.message === 'outbox drain');
    await waitFor('the run log line', () => drainLine() !== undefined);
    expect(drainLine()).toMatchObject({
      runtime: 'cloudflare-workers',
      cron: '* * * * *',
      delivered: 1,
    });
  });

  it('serves the mounted outbox admin behind its token', async () => {
    const anonymous = await fetch(`${worker.url}/admin/stats`);
    expect(anonymous.status).toBe(401);
    const stats = await fetch(`${worker.url}/admin/stats`, {
      headers: { authorization: 'Bearer own-app-admin' },
    });
    expect(stats.status).toBe(200);
    expect(await stats.json()).toMatchObject({ stats: { delivered: expect.any(Number) } });
  });

  it('refuses a bad webhook URL with a 400 naming the field, writing nothing', async () => {
    const response = await fetch(`${worker.url}/tickets`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ title: 'bad url ticket', notifyUrl: 'ftp://example.com/' }),
    });
    expect(response.status).toBe(400);
    expect(await response.json()).toMatchObject({ issues: [{ path: ['message.payload.url'] }] });
    const { rows } = await database.pool.query(
      "SELECT 1 FROM shop.tickets WHERE title = 'bad url ticket'",
    );
    expect(rows).toHaveLength(0);
  });
});

describe('an app of its own on Lambda', () => {
  let dir: string;
  const savedEnv = { ...process.env };

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'outbox-relay-own-lambda-'));
    Object.assign(process.env, {
      DATABASE_URL: database.url,
      NEON_LOCAL_PROXY: `127.0.0.1:${proxy.port}`,
      WEBHOOK_SECRET,
      ALLOW_HOSTS: `127.0.0.1:${receiver.port}`,
    });
  }, 120_000);

  afterAll(async () => {
    process.env = savedEnv;
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('its EventBridge drain, bundled by the plain esbuild command its README gives, delivers what a request wrote', async () => {
    // The build its README gives: `esbuild lambda.ts --bundle --platform=node --format=esm
    // --target=node20 --outfile=dist/lambda.mjs`, with no banner or other flag.
    const outfile = join(dir, 'lambda.mjs');
    await build({
      entryPoints: [join(example, 'lambda.ts')],
      bundle: true,
      platform: 'node',
      format: 'esm',
      target: 'node20',
      outfile,
      logLevel: 'warning',
    });
    const handlers = (await import(outfile)) as {
      drain: (
        event: Record<string, unknown>,
        context: LambdaContextLike,
      ) => Promise<{
        drain?: { delivered: number };
      }>;
    };
    // The request's write, committed by the app's own route (no kick: the schedule delivers).
    const { ownApp } = await import('../examples/own-app/app.js');
    const { neon, neonConfig } = await import('@neondatabase/serverless');
    const { neonHttpExecutor } = await import('outbox-relay');
    neonConfig.fetchEndpoint = () => `http://127.0.0.1:${proxy.port}/sql`;
    const response = await ownApp(neonHttpExecutor(neon(database.url))).request('/tickets', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ title: 'lambda ticket', notifyUrl: `${receiver.url}/hooks` }),
    });
    expect(response.status).toBe(201);
    const { messageKeys } = (await response.json()) as { messageKeys: string[] };

    const event = {
      version: '0',
      id: 'c0ffee00-0000-4000-8000-000000000001',
      'detail-type': 'Scheduled Event',
      source: 'aws.events',
      time: '2026-11-30T10:07:00Z',
      detail: {},
    };
    const deadline = Date.now() + 10_000;
    const context = {
      getRemainingTimeInMillis: () => deadline - Date.now(),
      awsRequestId: 'own-1',
    };
    const result = await handlers.drain(event, context);

    expect(result.drain?.delivered).toBe(1);
    expect(await states(messageKeys)).toEqual(['delivered']);
    await waitFor('the webhook', () => verifiedFor('lambda ticket').length === 1);
  });
});

describe('an app of its own on Node', () => {
  it('serves, kicks each write to delivery, logs a JSON line per scheduled run, and stops cleanly on SIGTERM', async () => {
    const port = await freePort();
    const child = spawn(process.execPath, ['--import', 'tsx', join(example, 'node.ts')], {
      env: {
        ...process.env,
        DATABASE_URL: database.url,
        WEBHOOK_SECRET,
        ALLOW_HOSTS: `127.0.0.1:${receiver.port}`,
        PORT: String(port),
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => {
      output += chunk.toString('utf8');
    });
    child.stderr.on('data', (chunk: Buffer) => {
      output += chunk.toString('utf8');
    });
    const exited = new Promise<number | null>((resolve) => child.once('exit', resolve));
    try {
      await waitFor('the app to listen', () => output.includes('listening on'));
      const response = await fetch(`http://127.0.0.1:${port}/tickets`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ title: 'node ticket', notifyUrl: `${receiver.url}/hooks` }),
      });
      expect(response.status).toBe(201);
      await waitFor('the kicked webhook', () => verifiedFor('node ticket').length === 1);
      // The schedule's own record of its runs: a JSON line per tick, and the first tick's purge.
      const jsonLines = () =>
        output
          .split('\n')
          .filter((line) => line.startsWith('{'))
          .map((line) => JSON.parse(line) as Record<string, unknown>);
      await waitFor('the first tick and its purge logged', () =>
        ['outbox drain', 'outbox purge'].every((message) =>
          jsonLines().some((line) => line.message === message),
        ),
      );
      expect(jsonLines().find((line) => line.message === 'outbox drain')).toMatchObject({
        level: 'info',
        runtime: 'node',
        tick: 1,
        stopReason: 'empty',
      });
      child.kill('SIGTERM');
      expect(await exited).toBe(0);
    } finally {
      child.kill('SIGKILL');
    }
  });
});
