import { ConfigurationError } from '../core/errors.js';
import type { BatchSqlExecutor, QueryResult, Statement } from '../core/ports.js';
import { postgresArrayLiteral } from './array-literal.js';
import { mapDatabaseError } from './postgres-errors.js';

/** The rows postgres.js resolves a query to: an array that also carries the affected `count`. */
export type PostgresJsRowsLike = readonly unknown[] & { count?: number | null };

/**
 * What the executor needs of postgres.js: `unsafe(text, params, options)`, on the `sql` that
 * `postgres(url)` returns or on the `tx` of `sql.begin(async (tx) => ...)`. The `sql` has
 * `begin`, a `tx` has `savepoint`; {@link postgresJsExecutor} uses them for `batch`.
 */
export interface PostgresJsSqlLike {
  unsafe(
    text: string,
    params?: never[],
    options?: { prepare?: boolean },
  ): PromiseLike<PostgresJsRowsLike>;
  begin?(run: (tx: PostgresJsSqlLike) => Promise<unknown>): Promise<unknown>;
  /** The `sql` of `postgres()` has its settings here, the result parsers among them. */
  options?: { parsers?: Record<string, ((text: string) => unknown) | undefined> };
  savepoint?(run: (tx: PostgresJsSqlLike) => Promise<unknown>): Promise<unknown>;
}

/**
 * Adapts postgres.js (`postgres` on npm) to the outbox's database port.
 *
 * Give it the `tx` of your own `sql.begin(async (tx) => ...)` to enqueue inside it: the message
 * is then written if, and only if, that transaction commits. Give it the `sql` itself for drains
 * and migrations: `batch` is one `sql.begin`, on one connection, all or nothing. Inside a `tx`,
 * `batch` is one `tx.savepoint`, so it never ends the transaction it runs in.
 *
 * The store reads timestamps as `Date`s, as postgres.js gives them by default. A client that
 * Drizzle wraps (`drizzle({ client: sql })`) gives them as text from then on, so such an `sql` is
 * refused with a `ConfigurationError`: give the executor a `postgres()` client of its own.
 *
 * Statements run as prepared statements, planned once per connection, unless the connection
 * was made with `postgres(url, { prepare: false })`, postgres.js's own switch for a pooler that
 * loses them (PgBouncer in transaction mode; docs/deploy.md, "Behind a pooler").
 *
 * @example
 * import postgres from 'postgres';
 *
 * const sql = postgres(process.env.DATABASE_URL!);
 * await sql.begin(async (tx) => {
 *   await tx`INSERT INTO users (email) VALUES (${address})`;
 *   const email = { to: [address], subject: 'Welcome', text: 'Hello!' };
 *   await outbox.enqueue(postgresJsExecutor(tx), { kind: 'email', payload: email });
 * });
 */
export function postgresJsExecutor(sql: PostgresJsSqlLike): BatchSqlExecutor {
  return {
    async query<Row>(text: string, params: unknown[] = []): Promise<QueryResult<Row>> {
      refuseTimestampsAsText(sql);
      try {
        return result<Row>(await run(sql, text, params));
      } catch (error) {
        throw mapPostgresJsError(error);
      }
    },

    async batch(statements: readonly Statement[]): Promise<QueryResult[]> {
      refuseTimestampsAsText(sql);
      const runAll = async (tx: PostgresJsSqlLike) => {
        const results: QueryResult[] = [];
        for (const statement of statements) {
          results.push(result(await run(tx, statement.text, statement.params)));
        }
        return results;
      };
      const atomically = sql.begin ?? sql.savepoint;
      if (atomically === undefined) {
        throw new TypeError('postgresJsExecutor: batch needs the sql of postgres() or a begin tx');
      }
      try {
        return (await atomically.call(sql, runAll)) as QueryResult[];
      } catch (error) {
        throw mapPostgresJsError(error);
      }
    },
  };
}

/**
 * postgres.js types a parameter by its JavaScript value, and an array by its first element's:
 * an array of `Date`s goes out as one `timestamptz`, which `$1::timestamptz[]` refuses (42846,
 * cannot cast). An array is sent as its literal text instead, which the statement's cast reads.
 * That also holds on a client Drizzle has wrapped, whose timestamp serializers take no arrays.
 */
function run(sql: PostgresJsSqlLike, text: string, params: readonly unknown[]) {
  const sent = params.map((param) => (Array.isArray(param) ? postgresArrayLiteral(param) : param));
  return sql.unsafe(text, sent as never[], { prepare: true });
}

/** PostgreSQL's type OID for `timestamptz`. */
const TIMESTAMPTZ_OID = '1184';

/**
 * Checked on every call, not once: Drizzle may wrap the client after this executor is made. A
 * `tx` has no `options` and is not checked; the enqueue reads no timestamps.
 */
function refuseTimestampsAsText(sql: PostgresJsSqlLike): void {
  const parsers = sql.options?.parsers;
  if (parsers === undefined) return;
  if (parsers[TIMESTAMPTZ_OID]?.('2000-01-01 00:00:00+00') instanceof Date) return;
  throw new ConfigurationError(
    'postgresJsExecutor: this postgres.js client returns timestamps as text (drizzle({ client }) ' +
      'sets that), and the outbox reads them as Dates: give it a postgres() client of its own',
  );
}

function result<Row>(rows: PostgresJsRowsLike): QueryResult<Row> {
  return { rows: [...rows] as Row[], rowCount: rows.count ?? rows.length };
}

/**
 * postgres.js names a violated constraint `constraint_name`; the rest of the package reads
 * `constraint`, as pg and Neon name it (`violates()`, the enqueue's duplicate-key check), so it
 * is copied across. Then mapped like every driver's error.
 */
function mapPostgresJsError(error: unknown): unknown {
  if (
    typeof error === 'object' &&
    error !== null &&
    'constraint_name' in error &&
    !('constraint' in error)
  ) {
    Object.defineProperty(error, 'constraint', {
      value: error.constraint_name,
      configurable: true,
    });
  }
  return mapDatabaseError(error);
}
