/**
 * `outbox-relay/postgres-js` with the real postgres.js, both majors the peer range takes (4, and
 * 3 as `postgres-3`): the enqueue in `sql.begin`, a batch that never ends the transaction it
 * runs in, and its errors mapped as pg's are. The store's conformance suite runs through
 * postgres.js 4 as well (test/support/drivers.ts).
 */
import { drizzle } from 'drizzle-orm/postgres-js';
import postgres from 'postgres';
import postgres3 from 'postgres-3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ConfigurationError, isValidationError } from '../../src/core/errors.js';
import { isRetryableDatabaseError } from '../../src/drivers/postgres-errors.js';
import { postgresJsExecutor } from '../../src/drivers/postgres-js.js';
import { createOutbox } from '../../src/outbox.js';
import { useTestDatabase } from '../support/database.js';
import {
  AbandonedWrite,
  describeOrmTransactions,
  FAILING_STATEMENT,
} from '../support/orm-transactions.js';
import { waitFor } from '../support/wait-for.js';

const database = useTestDatabase();

/** Each major of postgres.js the peer range takes, by name. */
const MAJORS = [
  ['postgres.js 4', postgres],
  ['postgres.js 3', postgres3 as unknown as typeof postgres],
] as const;

describeOrmTransactions(
  database,
  MAJORS.map(([major, postgres]) => ({
    name: `${major} sql.begin`,
    open: () => {
      const sql = postgres(database.url, { max: 4, onnotice: () => {} });
      return {
        write: (outbox, orderId, messages, ending) =>
          sql.begin(async (tx) => {
            await tx`INSERT INTO shop.orders (id) VALUES (${orderId})`;
            const keys = await outbox.enqueue(postgresJsExecutor(tx), messages);
            if (ending === 'failing-statement') await tx.unsafe(FAILING_STATEMENT);
            if (ending === 'abandon') throw new AbandonedWrite('the app gave up');
            return keys;
          }),
        close: () => sql.end({ timeout: 5 }),
      };
    },
  })),
);

describe.each(MAJORS)('postgresJsExecutor on %s', (_major, postgres) => {
  let sql: postgres.Sql;
  beforeAll(async () => {
    sql = postgres(database.url, { max: 2, onnotice: () => {} });
    await sql`CREATE TABLE IF NOT EXISTS notes (note text NOT NULL)`;
  });
  afterAll(async () => {
    await sql?.end({ timeout: 5 });
  });
  const notes = async () => (await sql`SELECT note FROM notes ORDER BY note`).map((r) => r.note);
  const insert = (note: string) => ({
    name: 'insertNote',
    text: 'INSERT INTO notes (note) VALUES ($1)',
    params: [note],
  });

  it("runs a batch inside the caller's transaction as a savepoint, which never commits it", async () => {
    await sql`TRUNCATE notes`;
    await expect(
      sql.begin(async (tx) => {
        await postgresJsExecutor(tx).batch([insert('a'), insert('b')]);
        throw new AbandonedWrite('the app gave up');
      }),
    ).rejects.toThrow(AbandonedWrite);
    expect(await notes()).toEqual([]);

    await sql.begin(async (tx) => {
      await postgresJsExecutor(tx).batch([insert('c')]);
      // A failed batch rolls back to its savepoint; the transaction goes on and commits.
      await expect(
        postgresJsExecutor(tx).batch([
          insert('d'),
          { name: 'fail', text: FAILING_STATEMENT, params: [] },
        ]),
      ).rejects.toMatchObject({ code: '22012' });
      await tx`INSERT INTO notes (note) VALUES ('e')`;
    });
    expect(await notes()).toEqual(['c', 'e']);
  });

  it('runs a batch on the sql itself as one transaction, all or nothing', async () => {
    await sql`TRUNCATE notes`;
    const results = await postgresJsExecutor(sql).batch([insert('f'), insert('g')]);
    expect(results.map((result) => result.rowCount)).toEqual([1, 1]);
    await expect(
      postgresJsExecutor(sql).batch([
        insert('h'),
        { name: 'fail', text: FAILING_STATEMENT, params: [] },
      ]),
    ).rejects.toMatchObject({ code: '22012' });
    expect(await notes()).toEqual(['f', 'g']);
  });

  it('gives a taken message key as a ValidationError on the key, as pg and Neon do', async () => {
    const outbox = createOutbox();
    const key = crypto.randomUUID();
    const message = { kind: 'webhook', key, payload: { url: 'https://example.com/h', body: {} } };
    await outbox.enqueue(postgresJsExecutor(sql), message);
    const taken = await outbox.enqueue(postgresJsExecutor(sql), message).catch((error) => error);
    expect(isValidationError(taken)).toBe(true);
    expect(taken).toMatchObject({ field: 'key', cause: { code: '23505' } });
  });

  it('marks a query whose backend was terminated under it retryable, and the next one too', async () => {
    const own = postgres(database.url, { max: 1, onnotice: () => {} });
    try {
      const db = postgresJsExecutor(own);
      const [backend] = (await db.query('SELECT pg_backend_pid() AS pid')).rows as {
        pid: number;
      }[];
      const running = db.query('SELECT pg_sleep(30)').catch((error: unknown) => error);
      // The terminate must land under the query: wait until the backend runs it.
      await waitFor('the backend to run its pg_sleep', async () => {
        const { rowCount } = await database.pool.query(
          "SELECT 1 FROM pg_stat_activity WHERE pid = $1 AND query LIKE '%pg_sleep(30)%'",
          [backend!.pid],
        );
        return rowCount === 1;
      });
      await database.pool.query('SELECT pg_terminate_backend($1)', [backend!.pid]);
      const lost = await running;
      // postgres.js 4 hands the query the server's goodbye (57P01, admin_shutdown); 3 gave its
      // own CONNECTION_CLOSED. Both are retryable.
      expect(lost).toMatchObject({ code: expect.stringMatching(/^(57P01|CONNECTION_CLOSED)$/) });
      expect(isRetryableDatabaseError(lost)).toBe(true);
      // postgres.js hands the server's goodbye (57P01) to whichever query comes next.
      const next = await db.query('SELECT 1').then(
        () => undefined,
        (error: unknown) => error,
      );
      if (next !== undefined) expect(isRetryableDatabaseError(next)).toBe(true);
    } finally {
      await own.end({ timeout: 5 });
    }
  });
});

describe('postgresJsExecutor on a client Drizzle wraps', () => {
  it('refuses it, since Drizzle makes it return timestamps as text, which the store reads as Dates', async () => {
    const shared = postgres(database.url, { max: 1, onnotice: () => {} });
    try {
      const db = postgresJsExecutor(shared);
      await expect(db.query('SELECT now() AS at')).resolves.toMatchObject({
        rows: [{ at: expect.any(Date) }],
      });
      drizzle({ client: shared });
      await expect(db.query('SELECT now() AS at')).rejects.toThrow(ConfigurationError);
      await expect(db.batch([])).rejects.toThrow(/a postgres\(\) client of its own/);
    } finally {
      await shared.end({ timeout: 5 });
    }
  });
});
