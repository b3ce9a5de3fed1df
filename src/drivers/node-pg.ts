import type { BatchSqlExecutor, Logger, QueryResult, Statement } from '../core/ports.js';
import {
  errorCode,
  IN_FAILED_SQL_TRANSACTION,
  mapDatabaseError,
  namedStatementLost,
} from './postgres-errors.js';
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
   * Default true.
   *
   * Behind a pooler that cannot keep prepared statements across transactions (PgBouncer in
   * transaction mode before 1.21, or with `max_prepared_statements = 0`) the first named
   * statement that fails for it (SQLSTATE 26000 or 42P05) is run again unnamed, and every
   * statement on the pool runs unnamed from then on, with one warning. `false` starts unnamed
   * and skips that first failure (docs/deploy.md, "Behind a pooler").
   */
  prepare?: boolean;
  /** Where that one warning goes. Default: one `console.warn` line. */
  logger?: Pick<Logger, 'warn'>;
}

/** A pg `PoolClient` (or Neon's): a checked-out connection that must be released. */
export interface PgPoolClientLike extends PgQueryableLike {
  release(error?: Error | boolean): void;
  /** pg's `'I'` idle, `'T'` in a transaction, `'E'` in a failed one; Neon's Client has none. */
  getTransactionStatus?(): string | null;
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
  const names =
    options.prepare === false ? null : preparedNames({ target, logger: options.logger });
  return {
    async query(text: string, params: unknown[] = []): Promise<QueryResult> {
      try {
        const result = await runStatement(target, names, text, params);
        const rows = result.rows as Record<string, unknown>[];
        return { rows, rowCount: result.rowCount ?? rows.length };
      } catch (error) {
        throw mapDatabaseError(error);
      }
    },

    async batch(statements: readonly Statement[]): Promise<QueryResult[]> {
      if (isPool(target)) {
        const connection = await target.connect();
        let broken: Error | undefined;
        try {
          // Checked out just now, so idle: the transaction below is ours to restart.
          return await runInTransaction(connection, statements, names, true);
        } catch (error) {
          // A connection that failed mid-transaction may be in an unknown state: discard it.
          broken = error instanceof Error ? error : new Error(String(error));
          throw error;
        } finally {
          connection.release(broken);
        }
      }
      return runInTransaction(target, statements, names, isIdle(target));
    },
  };
}

/**
 * One statement outside `batch`: by name once it repeats. When the name turns out not to
 * survive on this connection (see {@link namedStatementLost}), the statement did not run, so it
 * runs once more unnamed, and the pool stays unnamed.
 */
async function runStatement(
  target: PgQueryableLike,
  names: PreparedNames | null,
  text: string,
  values: unknown[],
): Promise<{ rows: unknown[]; rowCount: number | null }> {
  const name = names?.nameFor(text);
  try {
    return await target.query(queryConfig(name, text, values));
  } catch (error) {
    if (name === undefined || !namedStatementLost(error, name)) throw error;
    names!.stopNaming(error);
    return target.query({ text, values }).catch((retryError: unknown) => {
      // Inside the caller's own transaction the first failure aborted it, so the repeat can
      // only say that (25P02): the first error is the one that explains.
      throw errorCode(retryError) === IN_FAILED_SQL_TRANSACTION ? error : retryError;
    });
  }
}

function queryConfig(name: string | undefined, text: string, values: unknown[]): PgQueryConfigLike {
  return name === undefined ? { text, values } : { name, text, values };
}

/** True only when the connection says it is outside any transaction (pg's Client does). */
function isIdle(target: PgQueryableLike): boolean {
  const status = (target as Partial<PgPoolClientLike>).getTransactionStatus?.();
  return status === 'I';
}

function isPool(target: PgPoolLike | PgQueryableLike): target is PgPoolLike {
  return 'connect' in target && 'totalCount' in target;
}

/**
 * BEGIN, the statements in order, COMMIT, on one connection; ROLLBACK on any failure.
 *
 * A named statement that fails because its name does not survive here aborts the transaction,
 * so nothing of this run can commit. When the transaction is ours (`restartable`: we checked
 * the connection out, or it said it was idle before our BEGIN), it is rolled back and run once
 * more from BEGIN with every statement unnamed. Nothing else is repeated: not a failure of
 * COMMIT (which is never named, so it cannot fail that way, and whose outcome may be unknown),
 * and not a failure inside a caller's transaction, which that caller must retry as a whole.
 */
async function runInTransaction(
  connection: PgQueryableLike,
  statements: readonly Statement[],
  names: PreparedNames | null,
  restartable: boolean,
): Promise<QueryResult[]> {
  let lostName: unknown;
  try {
    const results: QueryResult[] = [];
    await connection.query('BEGIN');
    for (const statement of statements) {
      const name = names?.nameFor(statement.text);
      const result = await connection
        .query(queryConfig(name, statement.text, statement.params))
        .catch((error: unknown) => {
          if (name !== undefined && namedStatementLost(error, name)) lostName = error;
          throw error;
        });
      results.push({
        rows: result.rows as Record<string, unknown>[],
        rowCount: result.rowCount ?? 0,
      });
    }
    await connection.query('COMMIT');
    return results;
  } catch (error) {
    await connection.query('ROLLBACK').catch(() => {});
    if (lostName !== undefined) names!.stopNaming(lostName);
    if (lostName === undefined || !restartable) throw mapDatabaseError(error);
  }
  return runInTransaction(connection, statements, names, false);
}
