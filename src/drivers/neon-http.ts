import type { BatchSqlExecutor, QueryResult, Statement } from '../core/ports.js';
import { mapDatabaseError } from './postgres-errors.js';

/** A query promise made by Neon's `sql.query(...)`, to place inside `sql.transaction([...])`. */
export type NeonHttpQueryLike = PromiseLike<unknown>;

/** The HTTP query function returned by `neon(connectionString)`. */
export interface NeonHttpLike {
  query(
    text: string,
    params?: unknown[],
    options?: { fullResults: true },
  ): PromiseLike<{ rows: unknown[]; rowCount: number | null }> & NeonHttpQueryLike;
  /**
   * Typed loosely on purpose: the driver accepts only query objects it made itself, which is
   * what {@link neonHttpQuery} hands it.
   */
  transaction(
    queries: never[],
    options?: { fullResults: true },
  ): Promise<{ rows: unknown[]; rowCount: number | null }[]>;
}

/**
 * Adapts Neon's HTTP driver (`neon()`) to the outbox's database port. Each `query` is one HTTPS
 * round trip with no session; `batch` is one `sql.transaction([...])`. That is enough for the
 * whole drain (claim, settle and release are single statements) and for migrations.
 *
 * It cannot join a transaction you hold open, because HTTP has none. To enqueue atomically with
 * your domain write over HTTP, put both in one `sql.transaction`: see {@link neonHttpQuery} and
 * `outbox.enqueueStatement()`.
 */
export function neonHttpExecutor(sql: NeonHttpLike): BatchSqlExecutor {
  return {
    async query(text: string, params: unknown[] = []): Promise<QueryResult> {
      try {
        const result = await sql.query(text, params, { fullResults: true });
        const rows = result.rows as Record<string, unknown>[];
        return { rows, rowCount: result.rowCount ?? rows.length };
      } catch (error) {
        throw mapDatabaseError(error);
      }
    },

    async batch(statements: readonly Statement[]): Promise<QueryResult[]> {
      try {
        const results = await sql.transaction(
          statements.map((statement) => neonHttpQuery(sql, statement)) as never[],
          { fullResults: true },
        );
        return results.map((result) => ({
          rows: result.rows as Record<string, unknown>[],
          rowCount: result.rowCount ?? result.rows.length,
        }));
      } catch (error) {
        throw mapDatabaseError(error);
      }
    },
  };
}

/**
 * Turns a statement into a query for `sql.transaction([...])`, next to your own domain write.
 *
 * @example
 * const email = { to: [address], subject: 'Welcome', text: 'Hello!' };
 * const write = outbox.enqueueStatement({ kind: 'email', payload: email });
 * await sql.transaction([
 *   sql`INSERT INTO users (email) VALUES (${address})`,
 *   neonHttpQuery(sql, write.statement),
 * ]);
 * // write.keys: the message keys
 */
export function neonHttpQuery<Sql extends NeonHttpLike>(
  sql: Sql,
  statement: Statement,
): NeonTransactionQuery<Sql> {
  return sql.query(statement.text, statement.params) as NeonTransactionQuery<Sql>;
}

/**
 * The query type the given driver's `sql.transaction([...])` accepts (Neon's own
 * `NeonQueryPromise` for a real `neon()`), so {@link neonHttpQuery} sits beside your
 * `` sql`...` `` writes in one array without a cast.
 */
export type NeonTransactionQuery<Sql extends NeonHttpLike> = Extract<
  Parameters<Sql['transaction']>[0],
  readonly unknown[]
>[number];
