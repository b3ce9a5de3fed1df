/**
 * The documentation examples that can run, run as written: every example that states its
 * results (`parseDuration('7d', '--older-than'); // 604800000`) gives them, and the database
 * examples that need only a database and a receiver write and deliver what they say, on this
 * file's own PostgreSQL (the Neon HTTP one through the local Neon stand-in).
 */
import { fileURLToPath } from 'node:url';
import * as neonDriver from '@neondatabase/serverless';
import * as outboxRelay from 'outbox-relay';
import { applyNeonLocalConfig, type NeonProxy, startNeonProxy } from 'outbox-relay/dev';
import * as ownTables from 'outbox-relay/sql';
import type pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { useTestDatabase } from '../support/database.js';
import { recordingSender } from '../support/drain-fixtures.js';
import { type CodeExample, repositoryExamples } from './code-examples.js';
import { evaluate, runExample, type Scope, statedResults, where } from './example-runner.js';

const root = fileURLToPath(new URL('../..', import.meta.url));
const examples = repositoryExamples(root);

/** The example of `file` holding `text`: the test fails if the example is gone or reworded. */
function exampleOf(file: string, text: string): CodeExample {
  const found = examples.find((example) => example.file === file && example.code.includes(text));
  if (!found) throw new Error(`no example in ${file} holds ${JSON.stringify(text)}`);
  return found;
}

const stating = examples.flatMap((example) => {
  const results = statedResults(example);
  return results ? [{ example, results, at: where(example) }] : [];
});

describe('examples that state their results', () => {
  it('are there to run', () => {
    expect(stating.length).toBeGreaterThanOrEqual(8);
  });

  it.each(stating)('$at gives what it states', async ({ example, results }) => {
    const documented = (await import(`${root}${example.file}`)) as Scope;
    const scope = { ...outboxRelay, ...documented };
    for (const result of results) {
      const actual = evaluate(result.expression, scope);
      const expected = evaluate(result.expected, scope);
      const stated = `line ${result.line}: ${result.expression}`;
      if (result.partial && typeof expected === 'string') {
        expect(String(actual).slice(0, expected.length), stated).toBe(expected);
      } else if (result.partial) expect(actual, stated).toMatchObject(expected as object);
      else expect(actual, stated).toEqual(expected);
    }
  });
});

describe('database examples', () => {
  const database = useTestDatabase({ migrated: false });
  const migrateOutbox = () =>
    outboxRelay.createOutbox().migrate(outboxRelay.pgExecutor(database.pool));

  it("createOutbox's example in src/outbox.ts migrates an empty database; migrate's in src/store/own-tables.ts adds your own schema beside it", async () => {
    const given = { ...outboxRelay, ...ownTables, pool: database.pool };
    await runExample(exampleOf('src/outbox.ts', 'createOutbox({ kinds'), given);
    await runExample(exampleOf('src/store/own-tables.ts', 'await migrate('), given);
    const { rows } = await database.pool.query('SELECT version FROM outbox.schema_migrations');
    expect(rows.length).toBeGreaterThan(0);
    expect((await migrateOutbox()).applied).toEqual([]);
    const own = await database.pool.query('SELECT version FROM shop.schema_migrations');
    expect(own.rows).toEqual([{ version: 1 }]);
    await database.pool.query('SELECT id FROM shop.orders');
  });

  it("outbox.enqueue's example in src/outbox.ts commits an email that a drain delivers", async () => {
    await migrateOutbox();
    await database.pool.query('CREATE TABLE users (id serial PRIMARY KEY, email text NOT NULL)');
    const outbox = outboxRelay.createOutbox();
    const client: pg.PoolClient = await database.pool.connect();
    try {
      await runExample(exampleOf('src/outbox.ts', 'outbox.enqueue(pgExecutor(client)'), {
        ...outboxRelay,
        client,
        address: 'ada@example.com',
        outbox,
      });
    } finally {
      client.release();
    }
    const email = recordingSender();
    const store = outbox.store(outboxRelay.pgExecutor(database.pool));
    const report = await outboxRelay.drainOnce({ store, senders: { email: email.send } });
    expect(report.delivered).toBe(1);
    expect(email.calls[0]?.payload).toMatchObject({ to: ['ada@example.com'] });
    const users = await database.pool.query('SELECT email FROM users');
    expect(users.rows).toEqual([{ email: 'ada@example.com' }]);
  });

  describe('over Neon HTTP', () => {
    let proxy: NeonProxy;
    const url = process.env.DATABASE_URL;
    beforeAll(async () => {
      proxy = await startNeonProxy({ postgres: { host: database.host, port: database.port } });
      applyNeonLocalConfig(neonDriver.neonConfig, proxy);
      process.env.DATABASE_URL = database.url;
    });
    afterAll(async () => {
      if (url === undefined) delete process.env.DATABASE_URL;
      else process.env.DATABASE_URL = url;
      await proxy?.close();
    });

    it("README's Neon HTTP example writes the order and its webhook in one transaction, and drains it", async () => {
      await migrateOutbox();
      await database.pool.query('CREATE TABLE orders (id text PRIMARY KEY, total integer)');
      const webhook = recordingSender();
      await runExample(
        exampleOf('README.md', 'sql.transaction(['),
        { senders: { webhook: webhook.send } },
        { '@neondatabase/serverless': neonDriver, 'outbox-relay': outboxRelay },
      );
      const orders = await database.pool.query('SELECT id, total FROM orders');
      expect(orders.rows).toEqual([{ id: 'order-7', total: 1200 }]);
      expect(webhook.calls.map((message) => message.payload)).toEqual([
        {
          url: 'https://hooks.example.com/orders',
          event: 'order.created',
          body: { id: 'order-7', total: 1200 },
        },
      ]);
    });
  });
});
