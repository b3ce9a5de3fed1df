import type { BatchSqlExecutor, QueryResult, Statement } from '../core/ports.js';
import { mapDatabaseError } from './postgres-errors.js';
import { type PreparedNames, preparedNames } from './prepared-names.js';

/** pg's query config: a `name` makes it a prepared statement on each connection. */
export interface PgQueryConfigLike {
  name?: string;
  text: string;
  values?: unknown[];
}

/**
 * Anything with pg's `query(text, values)` and `query({ name, text, values })`: a pg `Pool`,
 * `Client` or `PoolClient`, or Neon's.
 */
export interface PgQueryableLike {
  query(
    textOrConfig: string | PgQueryConfigLike,
    values?: unknown[],
  ): Promise<{ rows: unknown[]; rowCount: number | null }>;
}

export interface PgExecutorOptions {
  /**
   * Run repeated statements as named prepared statements, so the server plans each once per
   * connection rather than on every call (see src/drivers/prepared-names.ts for the bounds).
   * Default true. Turn it off behind a pooler that cannot keep prepared statements across
   * transactions (PgBouncer before 1.21, or without `max_prepared_statements`).
   */
  prepare?: boolean;
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
 * await client.query('INSERT INTO users (email) VALUES ($1)', [address]);
 * const email = { to: [address], subject: 'Welcome', text: 'Hello!' };
 * await outbox.enqueue(pgExecutor(client), { kind: 'email', payload: email });
 * await client.query('COMMIT');
 */
export function pgExecutor(
  target: PgPoolLike | PgQueryableLike,
  options: PgExecutorOptions = {},
): BatchSqlExecutor {
  const names = options.prepare === false ? null : preparedNames();
  return {
    async query<Row>(text: string, params: unknown[] = []): Promise<QueryResult<Row>> {
      try {
        const result = await target.query(queryConfig(names, text, params));
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
          return await runInTransaction(connection, statements, names);
        } catch (error) {
          // A connection that failed mid-transaction may be in an unknown state: discard it.
          broken = error instanceof Error ? error : new Error(String(error));
          throw error;
        } finally {
          connection.release(broken);
        }
      }
      return runInTransaction(target, statements, names);
    },
  };
}

function queryConfig(
  names: PreparedNames | null,
  text: string,
  values: unknown[],
): PgQueryConfigLike {
  const name = names?.nameFor(text);
  return name === undefined ? { text, values } : { name, text, values };
}

function isPool(target: PgPoolLike | PgQueryableLike): target is PgPoolLike {
  return 'connect' in target && 'totalCount' in target;
}

async function runInTransaction(
  connection: PgQueryableLike,
  statements: readonly Statement[],
  names: PreparedNames | null,
): Promise<QueryResult[]> {
  const results: QueryResult[] = [];
  try {
    await connection.query('BEGIN');
    for (const statement of statements) {
      const result = await connection.query(queryConfig(names, statement.text, statement.params));
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
