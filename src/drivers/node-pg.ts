import type { BatchSqlExecutor, QueryResult, Statement } from '../core/ports.js';
import { mapDatabaseError } from './postgres-errors.js';

/** Anything with pg's `query(text, values)`: a pg `Pool`, `Client` or `PoolClient`. */
export interface PgQueryableLike {
  query(text: string, values?: unknown[]): Promise<{ rows: unknown[]; rowCount: number | null }>;
}

/** A pg `PoolClient` (or Neon's): a checked-out connection that must be released. */
export interface PgPoolClientLike extends PgQueryableLike {
  release(error?: Error | boolean): void;
}

/** A pg `Pool` (or Neon's): hands out connections for transactions. */
export interface PgPoolLike extends PgQueryableLike {
  connect(): Promise<PgPoolClientLike>;
  readonly totalCount: number;
}

/**
 * Adapts node-postgres to the outbox's database port.
 *
 * Give it a `Pool` for drains and migrations: `batch` checks out one connection for its
 * transaction. Give it the `PoolClient` of your own open transaction to enqueue inside it: the
 * message is then written if, and only if, that transaction commits.
 *
 * @example
 * const client = await pool.connect();
 * await client.query('BEGIN');
 * await client.query('INSERT INTO users ...');
 * await outbox.enqueue(pgExecutor(client), { kind: 'email', payload });
 * await client.query('COMMIT');
 */
export function pgExecutor(target: PgPoolLike | PgQueryableLike): BatchSqlExecutor {
  return {
    async query<Row>(text: string, params: unknown[] = []): Promise<QueryResult<Row>> {
      try {
        const result = await target.query(text, params);
        return { rows: result.rows as Row[], rowCount: result.rowCount ?? result.rows.length };
      } catch (error) {
        throw mapDatabaseError(error);
      }
    },

    async batch(statements: readonly Statement[]): Promise<QueryResult[]> {
      if (isPool(target)) {
        const connection = await target.connect();
        let broken: Error | undefined;
        try {
          return await runInTransaction(connection, statements);
        } catch (error) {
          // A connection that failed mid-transaction may be in an unknown state: discard it.
          broken = error instanceof Error ? error : new Error(String(error));
          throw error;
        } finally {
          connection.release(broken);
        }
      }
      return runInTransaction(target, statements);
    },
  };
}

function isPool(target: PgPoolLike | PgQueryableLike): target is PgPoolLike {
  return 'connect' in target && 'totalCount' in target;
}

async function runInTransaction(
  connection: PgQueryableLike,
  statements: readonly Statement[],
): Promise<QueryResult[]> {
  const results: QueryResult[] = [];
  try {
    await connection.query('BEGIN');
    for (const statement of statements) {
      const result = await connection.query(statement.text, statement.params);
      results.push({
        rows: result.rows as Record<string, unknown>[],
        rowCount: result.rowCount ?? 0,
      });
    }
    await connection.query('COMMIT');
    return results;
  } catch (error) {
    await connection.query('ROLLBACK').catch(() => {});
    throw mapDatabaseError(error);
  }
}
