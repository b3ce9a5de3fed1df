/**
 * The ways users reach Postgres, as fixtures for one conformance suite: node-postgres, Neon over
 * WebSocket and Neon over HTTP, the Neon ones through the local Neon proxy to the same real
 * PostgreSQL, and postgres.js. A store test written once runs through all of them.
 */
import { Pool as NeonPool, neon, neonConfig } from '@neondatabase/serverless';
import pg from 'pg';
import postgres from 'postgres';
import { afterAll, beforeAll } from 'vitest';
import type { BatchSqlExecutor, QueryResult, Statement } from '../../src/core/ports.js';
import { applyNeonLocalConfig, type NeonProxy, startNeonProxy } from '../../src/dev/neon-proxy.js';
import { neonHttpExecutor, neonHttpQuery } from '../../src/drivers/neon-http.js';
import { neonWsExecutor } from '../../src/drivers/neon-ws.js';
import { type PgPoolLike, pgExecutor } from '../../src/drivers/node-pg.js';
import { postgresJsExecutor } from '../../src/drivers/postgres-js.js';
import type { NewMessage } from '../../src/index.js';
import type { Outbox } from '../../src/outbox.js';
import { type ClosingPool, endIgnoringClosingErrors, watchClosingErrors } from './closing-pool.js';
import type { TestDatabase } from './database.js';

export const DRIVER_NAMES = ['node-pg', 'neon-ws', 'neon-http', 'postgres-js'] as const;
export type DriverName = (typeof DRIVER_NAMES)[number];

export interface Driver {
  name: DriverName;
  /** The file's Neon proxy, for child processes that must reach the database the same way. */
  proxyPort: number;
  /** Pool-level executor: drains, migrations, admin reads. */
  db: BatchSqlExecutor;
  /**
   * A domain write and an enqueue in ONE transaction, the way a user of this driver writes it:
   * an interactive BEGIN/COMMIT for pg and Neon WebSocket, `sql.transaction([...])` for HTTP.
   * With `fail`, a statement after both fails, so the transaction must roll back.
   */
  writeWithMessages(
    outbox: Outbox,
    domain: Omit<Statement, 'name'>,
    messages: NewMessage | NewMessage[],
    options?: { fail?: boolean },
  ): Promise<string[]>;
  close(): Promise<void>;
}

const FAILING_STATEMENT = 'SELECT 1 / 0';

/** Opens a driver against a test database. The Neon ones need the proxy to be running. */
export async function openDriver(
  name: DriverName,
  database: TestDatabase,
  proxy: NeonProxy,
): Promise<Driver> {
  if (name === 'neon-http') {
    applyNeonLocalConfig(neonConfig, proxy);
    const sql = neon(database.url);
    return {
      name,
      proxyPort: proxy.port,
      db: neonHttpExecutor(sql),
      async writeWithMessages(outbox, domain, messages, options = {}) {
        const write = outbox.enqueueStatement(messages);
        const queries = [
          sql.query(domain.text, domain.params),
          neonHttpQuery(sql, write.statement),
          ...(options.fail ? [sql.query(FAILING_STATEMENT)] : []),
        ];
        const results = (await sql.transaction(queries as never, {
          fullResults: true,
        })) as unknown as QueryResult[];
        return write.keysFromRows(results[1]!.rows);
      },
      close: async () => {},
    };
  }

  if (name === 'postgres-js') {
    const sql = postgres(database.url, { max: 20, onnotice: () => {} });
    return {
      name,
      proxyPort: proxy.port,
      db: postgresJsExecutor(sql),
      writeWithMessages: (outbox, domain, messages, options = {}) =>
        sql.begin(async (tx) => {
          await tx.unsafe(domain.text, domain.params as never[]);
          const keys = await outbox.enqueue(postgresJsExecutor(tx), messages);
          if (options.fail) await tx.unsafe(FAILING_STATEMENT);
          return keys;
        }),
      close: () => sql.end({ timeout: 5 }),
    };
  }

  // Both pools are node-postgres pools on the outside: use them through that shape.
  let pool: PgPoolLike & ClosingPool;
  let executor: BatchSqlExecutor;
  if (name === 'neon-ws') {
    applyNeonLocalConfig(neonConfig, proxy);
    pool = new NeonPool({ connectionString: database.url, max: 20 });
    executor = neonWsExecutor(pool);
  } else {
    pool = new pg.Pool({ connectionString: database.url, max: 20 });
    executor = pgExecutor(pool);
  }
  const poolForTransactions = pool;
  watchClosingErrors(pool);
  return {
    name,
    proxyPort: proxy.port,
    db: executor,
    async writeWithMessages(outbox, domain, messages, options = {}) {
      const client = await poolForTransactions.connect();
      try {
        await client.query('BEGIN');
        await client.query(domain.text, domain.params);
        const keys = await outbox.enqueue(
          name === 'neon-ws' ? neonWsExecutor(client) : pgExecutor(client),
          messages,
        );
        if (options.fail) await client.query(FAILING_STATEMENT);
        await client.query('COMMIT');
        return keys;
      } catch (error) {
        await client.query('ROLLBACK').catch(() => {});
        throw error;
      } finally {
        client.release();
      }
    },
    close: () => endIgnoringClosingErrors(poolForTransactions),
  };
}

/**
 * For `describe.each(DRIVER_NAMES)`: opens the named driver on this file's database before the
 * tests and closes it after. Also starts the file's Neon proxy.
 */
export function useDriver(name: DriverName, database: TestDatabase): Driver {
  const handle = {} as Driver;
  let proxy: NeonProxy | undefined;
  beforeAll(async () => {
    proxy = await startNeonProxy({ postgres: { host: database.host, port: database.port } });
    Object.assign(handle, await openDriver(name, database, proxy));
  });
  afterAll(async () => {
    await handle.close?.();
    await proxy?.close();
  });
  return handle;
}

/** Wraps an executor to count statements: proves "one round trip" claims. */
export function countingExecutor(inner: BatchSqlExecutor): BatchSqlExecutor & {
  statements: number;
} {
  const counter = {
    statements: 0,
    query(text: string, params?: unknown[]) {
      counter.statements += 1;
      return inner.query(text, params);
    },
    batch(statements: readonly Statement[]) {
      counter.statements += 1;
      return inner.batch(statements);
    },
  };
  return counter;
}
