/**
 * `database.prepare` in outbox.config and `OUTBOX_PREPARE` in the environment: whether the
 * command's executor names repeated statements. Seen through a real PgBouncer told to drop every
 * prepared statement after each transaction (`server_reset_query_always`), so a name the CLI
 * prepared is gone by its next use, as behind a pooler that moves clients between server
 * connections: with names on the drain recovers and warns once; with them off it never fails.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { pgExecutor } from '../../src/drivers/node-pg.js';
import { createOutbox } from '../../src/outbox.js';
import { useTestDatabase } from '../support/database.js';
import { type PgBouncer, startPgBouncerFor } from '../support/pgbouncer.js';
import { startWebhookReceiver, type WebhookReceiver } from '../support/webhook-receiver.js';
import { newWebhookSecret, runOutboxInProcess, webhookDrainEnv } from './outbox-cli.js';

const database = useTestDatabase();
let bouncer: PgBouncer;
let receiver: WebhookReceiver;
let dir: string;

/** Enough one-message batches that the claim and the settle each run more than twice. */
const MESSAGES = 4;
const WARNING = /warn: named prepared statements do not survive/g;

beforeAll(async () => {
  bouncer = await startPgBouncerFor(database, {
    poolSize: 1,
    settings: { server_reset_query: 'DEALLOCATE ALL', server_reset_query_always: '1' },
  });
  receiver = await startWebhookReceiver();
});
afterAll(async () => {
  await receiver?.close();
  await bouncer?.stop();
});
beforeEach(async () => {
  await database.pool.query('TRUNCATE outbox.messages, outbox.delivered_groups');
  dir = await mkdtemp(join(tmpdir(), 'outbox-prepare-'));
  await createOutbox().enqueue(
    pgExecutor(database.pool),
    Array.from({ length: MESSAGES }, (_, index) => ({
      kind: 'webhook',
      payload: { url: `${receiver.url}/hook`, body: { index } },
    })),
  );
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

/** `outbox drain --once --batch-size 1` through PgBouncer, with `env` and a config of `config`. */
async function drainThroughPooler(env: Record<string, string>, config?: string) {
  if (config !== undefined) {
    await writeFile(join(dir, 'outbox.config.mjs'), `export default ${config};\n`);
  }
  return runOutboxInProcess(
    ['drain', '--once', '--batch-size', '1'],
    {
      DATABASE_URL: bouncer.urlFor(database.url),
      ...webhookDrainEnv(receiver.port, newWebhookSecret()),
      ...env,
    },
    dir,
  );
}

async function delivered(): Promise<number> {
  const { rows } = await database.pool.query<{ n: number }>(
    "SELECT count(*)::int AS n FROM outbox.all_messages WHERE state = 'delivered'",
  );
  return rows[0]!.n;
}

describe('named prepared statements in the CLI', () => {
  it('are on by default: behind a pooler that drops them, the drain recovers, warning once', async () => {
    const result = await drainThroughPooler({});
    expect(result.code).toBe(0);
    expect(result.stderr.match(WARNING)).toHaveLength(1);
    expect(await delivered()).toBe(MESSAGES);
  });

  it.each([
    ['OUTBOX_PREPARE=off', { OUTBOX_PREPARE: 'off' }, undefined],
    ['OUTBOX_PREPARE=false', { OUTBOX_PREPARE: 'false' }, undefined],
    ['database: { prepare: false } in the config', {}, '{ database: { prepare: false } }'],
    [
      'the config’s prepare: false over OUTBOX_PREPARE=on',
      { OUTBOX_PREPARE: 'on' },
      '{ database: { prepare: false } }',
    ],
  ])('are off with %s: nothing to recover from, no warning', async (_, env, config) => {
    const result = await drainThroughPooler(env, config);
    expect(result).toMatchObject({ code: 0 });
    expect(result.stderr).not.toMatch(WARNING);
    expect(await delivered()).toBe(MESSAGES);
  });

  it('are on with the config’s prepare: true over OUTBOX_PREPARE=off', async () => {
    const result = await drainThroughPooler(
      { OUTBOX_PREPARE: 'off' },
      '{ database: { prepare: true } }',
    );
    expect(result.code).toBe(0);
    expect(result.stderr.match(WARNING)).toHaveLength(1);
  });
});

describe('a prepare setting that cannot be used', () => {
  it.each([
    [{ OUTBOX_PREPARE: 'sometimes' }, undefined, /OUTBOX_PREPARE must be on or off, got sometimes/],
    [{}, '{ database: { prepare: "no" } }', /config .*: database\.prepare must be a boolean/],
    [
      {},
      '{ database: { prepared: false } }',
      /unknown field "database\.prepared"; expected prepare/,
    ],
    [{}, '{ database: false }', /config .*: database must be an object/],
  ])('%j with config %s exits 3 naming it', async (env, config, reason) => {
    const result = await drainThroughPooler(env, config);
    expect(result.code).toBe(3);
    expect(result.stderr).toMatch(reason);
    expect(await delivered()).toBe(0);
  });
});
