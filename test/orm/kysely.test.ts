/**
 * `outbox-relay/kysely` with the real kysely: the enqueue in `db.transaction().execute(...)`
 * over `PostgresDialect` with a node-postgres `Pool`, and with Neon's WebSocket `Pool` through
 * the local Neon stand-in.
 */
import { Pool as NeonPool } from '@neondatabase/serverless';
import { Kysely, PostgresDialect, sql } from 'kysely';
import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { isValidationError } from '../../src/core/errors.js';
import { kyselyExecutor } from '../../src/orm/kysely.js';
import { createOutbox } from '../../src/outbox.js';
import { endIgnoringClosingErrors, watchClosingErrors } from '../support/closing-pool.js';
import { useTestDatabase } from '../support/database.js';
import {
  AbandonedWrite,
  describeOrmTransactions,
  FAILING_STATEMENT,
  type OrmWay,
  type OrmWrites,
} from '../support/orm-transactions.js';

const database = useTestDatabase();

interface Shop {
  'shop.orders': { id: string };
}

/** The user's code: the order, the enqueue, then the ending, in one Kysely transaction. */
function inTransaction({ db, close }: KyselyOnPool): OrmWrites {
  return {
    write: (outbox, orderId, messages, ending) =>
      db.transaction().execute(async (trx) => {
        await trx.insertInto('shop.orders').values({ id: orderId }).execute();
        const keys = await outbox.enqueue(kyselyExecutor(trx), messages);
        if (ending === 'failing-statement') await sql.raw(FAILING_STATEMENT).execute(trx);
        if (ending === 'abandon') throw new AbandonedWrite('the app gave up');
        return keys;
      }),
    close,
  };
}

interface KyselyOnPool {
  db: Kysely<Shop>;
  /** Ends the pool (what `db.destroy()` does), ignoring its closing clients' errors. */
  close(): Promise<void>;
}

function kyselyOn(pool: pg.Pool | NeonPool): KyselyOnPool {
  watchClosingErrors(pool);
  const db = new Kysely<Shop>({ dialect: new PostgresDialect({ pool: pool as pg.Pool }) });
  return { db, close: () => endIgnoringClosingErrors(pool) };
}

const ways: OrmWay[] = [
  {
    name: 'kysely over node-postgres',
    open: () => inTransaction(kyselyOn(new pg.Pool({ connectionString: database.url, max: 4 }))),
  },
  {
    name: "kysely over Neon's WebSocket Pool",
    open: () => inTransaction(kyselyOn(new NeonPool({ connectionString: database.url, max: 4 }))),
  },
];

describeOrmTransactions(database, ways);

describe('kyselyExecutor', () => {
  it('gives a taken message key as a ValidationError, and the row count Kysely reports', async () => {
    const outbox = createOutbox();
    const { db, close } = kyselyOn(new pg.Pool({ connectionString: database.url, max: 2 }));
    try {
      const key = crypto.randomUUID();
      const message = { kind: 'webhook', key, payload: { url: 'https://example.com/h', body: {} } };
      await outbox.enqueue(kyselyExecutor(db), message);
      const taken = await outbox.enqueue(kyselyExecutor(db), message).catch((error) => error);
      expect(isValidationError(taken)).toBe(true);
      expect(taken).toMatchObject({ field: 'key' });
      const updated = await kyselyExecutor(db).query(
        `UPDATE outbox.messages SET max_attempts = 3 WHERE key = $1`,
        [key],
      );
      expect(updated).toEqual({ rows: [], rowCount: 1 });
    } finally {
      await close();
    }
  });
});
