/**
 * `outbox-relay/drizzle` with the real drizzle-orm: the enqueue in `db.transaction` over
 * node-postgres, Neon's WebSocket `Pool` and postgres.js, and in `db.batch([...])` over Neon's
 * HTTP driver, each through the local Neon stand-in where it is Neon's.
 */
import { Pool as NeonPool, neon } from '@neondatabase/serverless';
import { sql } from 'drizzle-orm';
import { drizzle as drizzleNeonHttp } from 'drizzle-orm/neon-http';
import { drizzle as drizzleNeonWs } from 'drizzle-orm/neon-serverless';
import { drizzle as drizzleNodePg } from 'drizzle-orm/node-postgres';
import { pgSchema, text } from 'drizzle-orm/pg-core';
import { drizzle as drizzlePostgresJs } from 'drizzle-orm/postgres-js';
import pg from 'pg';
import postgres from 'postgres';
import { describe, expect, it } from 'vitest';
import { isValidationError } from '../../src/core/errors.js';
import { drizzleExecutor, drizzleQuery, drizzleSql } from '../../src/orm/drizzle.js';
import { createOutbox } from '../../src/outbox.js';
import { endIgnoringClosingErrors, watchClosingErrors } from '../support/closing-pool.js';
import { useTestDatabase } from '../support/database.js';
import {
  AbandonedWrite,
  describeOrmTransactions,
  type Ending,
  FAILING_STATEMENT,
  type OrmWay,
  type OrmWrites,
} from '../support/orm-transactions.js';

const database = useTestDatabase();
const orders = pgSchema('shop').table('orders', { id: text('id').primaryKey() });

/** A Drizzle database with interactive transactions: node-postgres, Neon WebSocket, postgres.js. */
type TransactionalDb =
  | ReturnType<typeof drizzleNodePg>
  | ReturnType<typeof drizzleNeonWs>
  | ReturnType<typeof drizzlePostgresJs>;

/** The user's code: the order, the enqueue, then the ending, in one `db.transaction`. */
function inTransaction(db: TransactionalDb, close: () => Promise<void>): OrmWrites {
  return {
    async write(outbox, orderId, messages, ending: Ending) {
      // The three databases' `transaction` differ only in their driver's result types.
      return (db as ReturnType<typeof drizzleNodePg>).transaction(async (tx) => {
        await tx.insert(orders).values({ id: orderId });
        const keys = await outbox.enqueue(drizzleExecutor(tx), messages);
        if (ending === 'failing-statement') await tx.execute(sql.raw(FAILING_STATEMENT));
        if (ending === 'abandon') throw new AbandonedWrite('the app gave up');
        return keys;
      });
    },
    close,
  };
}

const ways: OrmWay[] = [
  {
    name: 'drizzle over node-postgres',
    open: () => {
      const pool = new pg.Pool({ connectionString: database.url, max: 4 });
      watchClosingErrors(pool);
      return inTransaction(drizzleNodePg({ client: pool }), () => endIgnoringClosingErrors(pool));
    },
  },
  {
    name: "drizzle over Neon's WebSocket Pool",
    open: () => {
      const pool = new NeonPool({ connectionString: database.url, max: 4 });
      watchClosingErrors(pool);
      return inTransaction(drizzleNeonWs({ client: pool }), () => endIgnoringClosingErrors(pool));
    },
  },
  {
    name: 'drizzle over postgres.js',
    open: () => {
      const client = postgres(database.url, { max: 4, onnotice: () => {} });
      return inTransaction(drizzlePostgresJs({ client }), () => client.end({ timeout: 5 }));
    },
  },
  {
    name: "drizzle over Neon's HTTP driver, in db.batch",
    canAbandon: false,
    open: () => {
      const db = drizzleNeonHttp({ client: neon(database.url) });
      return {
        async write(outbox, orderId, messages, ending) {
          const write = outbox.enqueueStatement(messages);
          await db.batch([
            db.insert(orders).values({ id: orderId }),
            drizzleQuery(db, write.statement),
            ...(ending === 'failing-statement' ? [db.execute(sql.raw(FAILING_STATEMENT))] : []),
          ]);
          return write.keys;
        },
        close: async () => {},
      };
    },
  },
];

describeOrmTransactions(database, ways);

describe('drizzleExecutor', () => {
  it("throws the driver's error, not Drizzle's wrapper, so a taken message key is a ValidationError", async () => {
    const outbox = createOutbox();
    const pool = new pg.Pool({ connectionString: database.url, max: 2 });
    watchClosingErrors(pool);
    try {
      const db = drizzleNodePg({ client: pool });
      const key = crypto.randomUUID();
      const message = {
        kind: 'webhook',
        key,
        payload: { url: 'https://example.com/hook', body: {} },
      };
      await outbox.enqueue(drizzleExecutor(db), message);
      const taken = await outbox.enqueue(drizzleExecutor(db), message).catch((error) => error);
      expect(isValidationError(taken)).toBe(true);
      expect(taken).toMatchObject({ field: 'key', cause: { code: '23505' } });
    } finally {
      await endIgnoringClosingErrors(pool);
    }
  });
});

describe('drizzleSql', () => {
  it('binds each parameter as one value, arrays included, whatever order the text names them in', async () => {
    const pool = new pg.Pool({ connectionString: database.url, max: 2 });
    watchClosingErrors(pool);
    try {
      const db = drizzleNodePg({ client: pool });
      const result = await db.execute(
        drizzleSql({
          name: 'probe',
          text: 'SELECT $2::int AS second, $1::text[] AS first, $2::int + 1 AS again',
          params: [['a', 'b,c'], 7],
        }),
      );
      expect(result.rows).toEqual([{ second: 7, first: ['a', 'b,c'], again: 8 }]);
    } finally {
      await endIgnoringClosingErrors(pool);
    }
  });

  it('refuses a placeholder with no parameter, before anything runs', () => {
    expect(() => drizzleSql({ name: 'probe', text: 'SELECT $2', params: [1] })).toThrow(
      'probe: $2 has no parameter',
    );
  });
});
