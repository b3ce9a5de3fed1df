/**
 * Kysely (`kysely`): the enqueue inside your `db.transaction().execute(async (trx) => ...)`.
 */
import { CompiledQuery } from 'kysely';
import type { QueryResult, SqlExecutor } from '../core/ports.js';
import { mapDatabaseError } from '../drivers/postgres-errors.js';

/** What Kysely's `executeQuery` resolves to, reduced to what we read. */
export interface KyselyQueryResultLike {
  rows: readonly unknown[];
  numAffectedRows?: bigint;
}

/**
 * A Kysely instance or transaction on PostgreSQL: the `db` of `new Kysely(...)` or the `trx` of
 * `db.transaction().execute(async (trx) => ...)`, over any dialect whose SQL is PostgreSQL's
 * (`PostgresDialect` with a pg or Neon `Pool`, or one for postgres.js).
 */
export interface KyselyLike {
  executeQuery(query: CompiledQuery): Promise<KyselyQueryResultLike>;
}

/**
 * The enqueue's executor inside a Kysely transaction: the message is written if, and only if,
 * `trx` commits. Run drains and migrations on the driver's own executor (`pgExecutor(pool)` on
 * the pool you gave `PostgresDialect`, `postgresJsExecutor(sql)`).
 *
 * @example
 * import { Kysely, PostgresDialect } from 'kysely';
 *
 * const db = new Kysely<{ users: { email: string } }>({ dialect: new PostgresDialect({ pool }) });
 * await db.transaction().execute(async (trx) => {
 *   await trx.insertInto('users').values({ email: address }).execute();
 *   const email = { to: [address], subject: 'Welcome', text: 'Hello!' };
 *   await outbox.enqueue(kyselyExecutor(trx), { kind: 'email', payload: email });
 * });
 */
export function kyselyExecutor(db: KyselyLike): SqlExecutor {
  return {
    async query<Row>(text: string, params: unknown[] = []): Promise<QueryResult<Row>> {
      try {
        const result = await db.executeQuery(CompiledQuery.raw(text, params));
        return {
          rows: [...result.rows] as Row[],
          rowCount:
            result.numAffectedRows === undefined
              ? result.rows.length
              : Number(result.numAffectedRows),
        };
      } catch (error) {
        throw mapDatabaseError(error);
      }
    },
  };
}
