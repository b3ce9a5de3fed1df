/**
 * `outbox.config.ts`: a project's own settings for the command, found in the current directory
 * or named by `--config`. The acceptance case: webhook secrets looked up in the user's own
 * table through the CLI's database, in-process and as the real process.
 */
import { randomUUID } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { Webhook } from 'standardwebhooks';
import { afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { useTestDatabase } from '../support/database.js';
import { waitFor } from '../support/wait-for.js';
import { startWebhookReceiver, type WebhookReceiver } from '../support/webhook-receiver.js';
import {
  messageState,
  newWebhookSecret,
  REPO_ROOT,
  runOutbox,
  runOutboxInProcess,
  startOutboxInProcess,
  webhookDrainEnv,
} from './outbox-cli.js';

const database = useTestDatabase();
const CONFIG_MODULE = pathToFileURL(join(REPO_ROOT, 'src/cli/config.ts')).href;

/** Looks secrets up in the user's own table, through the db the CLI hands the config. */
const LOOKUP_CONFIG = `import { defineConfig } from ${JSON.stringify(CONFIG_MODULE)};

export default defineConfig({
  endpointSecret: async (endpointId: string, { db }) => {
    const { rows } = await db.query<{ secret: string }>(
      'SELECT secret FROM my_hooks WHERE id = $1',
      [endpointId],
    );
    return rows[0]?.secret;
  },
});
`;

let dir: string;
let receiver: WebhookReceiver;
const endpoints = [
  { id: randomUUID(), secret: newWebhookSecret() },
  { id: randomUUID(), secret: newWebhookSecret() },
];

beforeAll(async () => {
  await database.pool.query('CREATE TABLE my_hooks (id uuid PRIMARY KEY, secret text NOT NULL)');
  for (const { id, secret } of endpoints) {
    await database.pool.query('INSERT INTO my_hooks (id, secret) VALUES ($1, $2)', [id, secret]);
  }
});

beforeEach(async () => {
  await database.pool.query('TRUNCATE outbox.messages, outbox.delivered_groups');
  dir = await mkdtemp(join(tmpdir(), 'outbox-config-'));
  receiver = await startWebhookReceiver();
});

afterEach(async () => {
  await receiver.close();
  await rm(dir, { recursive: true, force: true });
});

/** The drain's environment: a loopback receiver, and a fallback secret no endpoint uses. */
function drainEnv(): Record<string, string> {
  return { DATABASE_URL: database.url, ...webhookDrainEnv(receiver.port, newWebhookSecret()) };
}

/** Enqueues one webhook per endpoint, naming it; returns the message ids. */
async function enqueueEndpointWebhooks(): Promise<string[]> {
  const ids: string[] = [];
  for (const endpoint of endpoints) {
    const payload = JSON.stringify({
      url: `${receiver.url}/hook`,
      body: { endpoint: endpoint.id },
      endpointId: endpoint.id,
    });
    const result = await runOutboxInProcess(
      ['enqueue', '--kind', 'webhook', '--payload', payload, '--json'],
      { DATABASE_URL: database.url },
    );
    expect(result.code).toBe(0);
    const { key } = JSON.parse(result.stdout) as { key: string };
    const { rows } = await database.pool.query('SELECT id FROM outbox.messages WHERE key = $1', [
      key,
    ]);
    ids.push(String(rows[0].id));
  }
  return ids;
}

/** Each request verifies with its own endpoint's secret, and not with the other one's. */
function expectSignedPerEndpoint(): void {
  expect(receiver.received).toHaveLength(endpoints.length);
  for (const request of receiver.received) {
    const { endpoint } = JSON.parse(request.body) as { endpoint: string };
    for (const candidate of endpoints) {
      const verifier = new Webhook(candidate.secret.slice('whsec_'.length));
      const verify = () => verifier.verify(request.body, request.headers);
      if (candidate.id === endpoint) expect(verify).not.toThrow();
      else expect(verify).toThrow();
    }
  }
}

describe('outbox drain with outbox.config.ts', () => {
  it('signs webhooks with secrets the config looks up in the user’s own table (in-process, found in cwd)', async () => {
    await writeFile(join(dir, 'outbox.config.ts'), LOOKUP_CONFIG);
    const ids = await enqueueEndpointWebhooks();
    const result = await runOutboxInProcess(['drain', '--once', '--json'], drainEnv(), dir);
    expect(result.stderr).not.toContain('no endpointSecret lookup');
    expect(result.code).toBe(0);
    expect(JSON.parse(result.stdout)).toMatchObject({ delivered: 2, dead: 0 });
    expectSignedPerEndpoint();
    for (const id of ids) expect(await messageState(database.pool, id)).toBe('delivered');
  });

  it('does the same as the real process, with --config PATH', async () => {
    const path = join(dir, 'hooks.config.ts');
    await writeFile(path, LOOKUP_CONFIG);
    const ids = await enqueueEndpointWebhooks();
    const result = await runOutbox(['--config', path, 'drain', '--once', '--json'], drainEnv());
    expect(result.code).toBe(0);
    expect(JSON.parse(result.stdout)).toMatchObject({ delivered: 2, dead: 0 });
    expectSignedPerEndpoint();
    for (const id of ids) expect(await messageState(database.pool, id)).toBe('delivered');
  });

  it('without a config, says at startup that endpoint webhooks cannot be signed, and they go dead', async () => {
    const ids = await enqueueEndpointWebhooks();
    const result = await runOutboxInProcess(['drain', '--once', '--json'], drainEnv(), dir);
    expect(result.code).toBe(0);
    expect(result.stderr).toContain(
      'outbox: no endpointSecret lookup: webhooks whose payload names an endpointId cannot be signed and will go to dead letter; add endpointSecret to outbox.config.ts',
    );
    expect(JSON.parse(result.stdout)).toMatchObject({ delivered: 0, dead: 2 });
    expect(receiver.received).toHaveLength(0);
    for (const id of ids) expect(await messageState(database.pool, id)).toBe('dead');
  });

  it('takes senders (replacing the env-built one of that kind), kinds and drain settings from an .mjs config', async () => {
    await writeFile(
      join(dir, 'outbox.config.mjs'),
      `export default {
        kinds: { 'audit.note': true },
        senders: ({ env }) => ({
          'audit.note': async (message) => {
            globalThis.__auditNotes = [...(globalThis.__auditNotes ?? []), [message.payload, env.NOTE_TAG]];
          },
        }),
        drain: { batchSize: 1, prefetch: false },
      };\n`,
    );
    for (const n of [1, 2]) {
      const enqueued = await runOutboxInProcess(
        ['enqueue', '--kind', 'audit.note', '--payload', JSON.stringify({ n })],
        { DATABASE_URL: database.url },
        dir,
      );
      expect(enqueued.code).toBe(0);
    }
    const result = await runOutboxInProcess(
      ['drain', '--once', '--json'],
      { ...drainEnv(), NOTE_TAG: 'from-env' },
      dir,
    );
    expect(result.code).toBe(0);
    // One row per claim, one claim at a time: two full claims, an empty one while the second
    // row is still unrecorded (it left keyed rows out, and says none waits, so it is not
    // partial), and the empty one that ends the drain once the row is recorded (the default
    // batch would take both rows in its first claim and end after one more).
    expect(JSON.parse(result.stdout)).toMatchObject({ delivered: 2, batches: 4 });
    expect((globalThis as { __auditNotes?: unknown }).__auditNotes).toEqual([
      [{ n: 1 }, 'from-env'],
      [{ n: 2 }, 'from-env'],
    ]);
  });

  it('keepDelivered: false in the config: its drain deletes delivered messages without history', async () => {
    await writeFile(
      join(dir, 'outbox.config.mjs'),
      `export default { kinds: { 'audit.note': true }, keepDelivered: false, senders: { 'audit.note': async () => {} } };\n`,
    );
    const enqueued = await runOutboxInProcess(
      ['enqueue', '--kind', 'audit.note', '--payload', '{"n":2}'],
      { DATABASE_URL: database.url },
      dir,
    );
    expect(enqueued.code).toBe(0);
    const result = await runOutboxInProcess(['drain', '--once', '--json'], drainEnv(), dir);
    expect(JSON.parse(result.stdout)).toMatchObject({ delivered: 1 });
    const { rows } = await database.pool.query(
      `SELECT count(*)::int AS n FROM outbox.all_messages WHERE kind = 'audit.note'`,
    );
    expect(rows[0].n).toBe(0);
  });
});

/**
 * The user's report: with these drain timeouts in outbox.config.ts, every budgeted or continuous
 * `outbox drain` exited 3 (the budget's default send timeout replaced the config's 3 s).
 */
const USER_TIMEOUTS_CONFIG = `import { defineConfig } from ${JSON.stringify(CONFIG_MODULE)};

export default defineConfig({
  kinds: { 'audit.note': true },
  senders: ({ db }) => ({
    // Notes what lease its row got, then never answers: only the send timeout ends it.
    'audit.note': async (message, signal) => {
      await db.query(
        'INSERT INTO drain_probe (lease_ms) SELECT (extract(epoch FROM lease_expires_at - claimed_at) * 1000)::int FROM outbox.messages WHERE id = $1',
        [message.id],
      );
      await new Promise((_, reject) => signal.addEventListener('abort', () => reject(signal.reason)));
    },
  }),
  drain: { leaseMs: 10000, sendTimeoutMs: 3000 },
});
`;

describe('drain timeouts from outbox.config.ts', () => {
  beforeEach(async () => {
    await database.pool.query('CREATE TABLE IF NOT EXISTS drain_probe (lease_ms int NOT NULL)');
    await database.pool.query('TRUNCATE drain_probe');
  });

  it('reach a budgeted `outbox drain --once` as the real process: a 10 s lease and a 3 s send timeout', async () => {
    const path = join(dir, 'outbox.config.ts');
    await writeFile(path, USER_TIMEOUTS_CONFIG);
    const enqueued = await runOutboxInProcess(
      ['enqueue', '--kind', 'audit.note', '--payload', '{}', '--json'],
      { DATABASE_URL: database.url },
      dir,
    );
    const { key } = JSON.parse(enqueued.stdout) as { key: string };
    const result = await runOutbox(
      ['--config', path, 'drain', '--once', '--budget-ms', '30000', '--json'],
      drainEnv(),
    );
    expect(result.stderr).not.toContain('must exceed');
    expect(result.code).toBe(0);
    expect(JSON.parse(result.stdout)).toMatchObject({ claimed: 1, retried: 1 });
    const probe = await database.pool.query('SELECT lease_ms FROM drain_probe');
    expect(probe.rows).toEqual([{ lease_ms: 10_000 }]);
    const { rows } = await database.pool.query(
      'SELECT last_error FROM outbox.messages WHERE key = $1',
      [key],
    );
    expect(rows[0].last_error).toContain('send timed out after 3000 ms');
  });

  it('reach every tick of a continuous `outbox drain`', async () => {
    await writeFile(join(dir, 'outbox.config.ts'), USER_TIMEOUTS_CONFIG);
    const stop = new AbortController();
    const run = startOutboxInProcess(['drain'], drainEnv(), stop.signal, dir);
    await waitFor(
      'the first tick',
      () => run.stdout().includes('tick 1:') || run.stderr().includes('must exceed'),
    );
    stop.abort();
    const { code, stderr } = await run.done;
    expect(stderr).not.toContain('must exceed');
    expect(code).toBe(0);
  });
});

describe('a config that cannot be used', () => {
  it.each([
    ['outbox.config.mjs', 'export default {', /config .*outbox\.config\.mjs: .+/],
    ['outbox.config.mjs', 'export const x = 1;\n', /the default export must be a config object/],
    ['outbox.config.mjs', 'export default { schemas: "x" };\n', /unknown field "schemas"/],
    [
      'outbox.config.ts',
      'export default { endpointSecret: "s" };\n',
      /endpointSecret must be a function/,
    ],
    [
      'outbox.config.mjs',
      'export default { drain: { batchSize: 0 } };\n',
      /drain\.batchSize must be a whole number from 1 to 1000, got 0/,
    ],
  ])('%s containing %j exits 3 naming the file and the reason', async (name, text, reason) => {
    await writeFile(join(dir, name), text);
    const result = await runOutboxInProcess(['drain', '--once'], drainEnv(), dir);
    expect(result.code).toBe(3);
    expect(result.stderr).toContain(`outbox: config ${join(dir, name)}: `);
    expect(result.stderr).toMatch(reason);
  });

  it('--config naming a missing file exits 3', async () => {
    const result = await runOutboxInProcess(
      ['stats', '--config', 'nope.config.ts'],
      drainEnv(),
      dir,
    );
    expect(result).toMatchObject({
      code: 3,
      stderr: `outbox: config ${join(dir, 'nope.config.ts')}: no such file\n`,
    });
  });
});
