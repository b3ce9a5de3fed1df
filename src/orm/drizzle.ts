/**
 * Drizzle ORM (`drizzle-orm`): the enqueue inside your `db.transaction(async (tx) => ...)`, or as
 * one item of `db.batch([...])` where the driver has no interactive transaction (Neon HTTP).
 */
import { type SQL, sql } from 'drizzle-orm';
import type { SqlExecutor, Statement } from '../core/ports.js';
import { postgresArrayLiteral } from '../drivers/array-literal.js';
import { mapDatabaseError } from '../drivers/postgres-errors.js';

/** What Drizzle's `execute` resolves to: `{ rows, rowCount }`, or over postgres.js the rows. */
export type DrizzleExecuteResultLike =
  | { rows: unknown[]; rowCount?: number | null }
  | (readonly unknown[] & { count?: number | null });

/**
 * A Drizzle database or transaction on PostgreSQL: the `db` of `drizzle(...)` or the `tx` of
 * `db.transaction(async (tx) => ...)`, over node-postgres, Neon (WebSocket or HTTP) or
 * postgres.js.
 */
export interface DrizzleDatabaseLike {
  execute(query: SQL): PromiseLike<DrizzleExecuteResultLike>;
}

/**
 * The enqueue's executor inside a Drizzle transaction: the message is written if, and only if,
 * `tx` commits. Run drains and migrations on the driver's own executor (`pgExecutor(pool)`,
 * `neonHttpExecutor(sql)`, `postgresJsExecutor(sql)`): Drizzle returns timestamps as text.
 *
 * A failed statement throws the driver's error (SQLSTATE `code` and all), not Drizzle's
 * `DrizzleQueryError`, whose message carries every parameter, payloads included.
 *
 * @example
 * import { drizzle } from 'drizzle-orm/node-postgres';
 * import { pgTable, text } from 'drizzle-orm/pg-core';
 *
 * const users = pgTable('users', { email: text().notNull() });
 * const db = drizzle({ client: pool });
 * await db.transaction(async (tx) => {
 *   await tx.insert(users).values({ email: address });
 *   const email = { to: [address], subject: 'Welcome', text: 'Hello!' };
 *   await outbox.enqueue(drizzleExecutor(tx), { kind: 'email', payload: email });
 * });
 */
export function drizzleExecutor(db: DrizzleDatabaseLike): SqlExecutor {
  return {
    async query<Row>(text: string, params: unknown[] = []) {
      try {
        const result = await db.execute(drizzleSql({ name: 'query', text, params }));
        const rows = (
          Array.isArray(result) ? result : (result as { rows: unknown[] }).rows
        ) as Row[];
        const count = Array.isArray(result)
          ? (result as { count?: number | null }).count
          : (result as { rowCount?: number | null }).rowCount;
        return { rows: [...rows], rowCount: count ?? rows.length };
      } catch (error) {
        throw mapDatabaseError(driverError(error));
      }
    },
  };
}

/**
 * The statement as a query of `db`, for `db.batch([...])` beside your own writes: Drizzle over
 * Neon HTTP runs the batch as one transaction, so the message exists only if your rows do.
 *
 * @example
 * import { drizzle } from 'drizzle-orm/neon-http';
 * import { pgTable, text } from 'drizzle-orm/pg-core';
 *
 * const orders = pgTable('orders', { id: text().primaryKey() });
 * const db = drizzle({ client: sql }); // sql = neon(env.DATABASE_URL)
 * const write = outbox.enqueueStatement({ kind: 'webhook', payload });
 * await db.batch([db.insert(orders).values({ id: 'order-7' }), drizzleQuery(db, write.statement)]);
 * // write.keys: the message keys
 */
export function drizzleQuery<Db extends { execute(query: SQL): unknown }>(
  db: Db,
  statement: Statement,
): ReturnType<Db['execute']> {
  return db.execute(drizzleSql(statement)) as ReturnType<Db['execute']>;
}

/** `$1`, `$2`, ...: a placeholder of the statement text, with its parameter's position. */
const PLACEHOLDER = /\$(\d+)/;

/**
 * The statement as Drizzle SQL: the text around each `$n` kept as is, and each `$n` bound to
 * its parameter as one value. Drizzle's `sql` template would spread an array into a list, and
 * the enqueue's parameters are arrays (one per column, for `unnest`), so an array goes as its
 * literal text, as Drizzle sends its own array columns: over postgres.js, Drizzle makes the
 * client's timestamp serializers pass values through, and an array of dates then fails to
 * send. Drizzle numbers the placeholders again in the order they appear; the values follow.
 */
export function drizzleSql(statement: Statement): SQL {
  const parts = statement.text.split(PLACEHOLDER);
  return sql.join(
    parts.map((part, index) =>
      index % 2 === 0 ? sql.raw(part) : sql.param(bound(parameter(statement, Number(part)))),
    ),
  );
}

function bound(value: unknown): unknown {
  return Array.isArray(value) ? postgresArrayLiteral(value) : value;
}

function parameter(statement: Statement, position: number): unknown {
  if (position < 1 || position > statement.params.length) {
    throw new RangeError(`${statement.name}: $${position} has no parameter`);
  }
  return statement.params[position - 1];
}

/**
 * Drizzle wraps a failed query's error as the `cause` of a `DrizzleQueryError`, which has the
 * failed `query` and its `params` beside it (and no `name` of its own to check by).
 */
function driverError(error: unknown): unknown {
  return error instanceof Error &&
    'query' in error &&
    'params' in error &&
    error.cause !== undefined
    ? error.cause
    : error;
}
