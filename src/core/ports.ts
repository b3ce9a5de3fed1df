/**
 * The ports the core talks through. Adapters in src/drivers and src/senders implement them; the
 * core imports no driver, SDK or runtime.
 */

/** What any Postgres driver returns for one statement, reduced to what we read. */
export interface QueryResult<Row = Record<string, unknown>> {
  rows: Row[];
  rowCount: number;
}

/** One SQL statement and its parameters. Values always travel as parameters, never in `text`. */
export interface Statement {
  /** A short stable name, for logs and metrics. */
  name: string;
  text: string;
  params: unknown[];
}

/**
 * The one narrow database port: run a statement, get rows back. Anything that can do this is a
 * valid target for enqueue and drain: a pg `Pool`, a `PoolClient` inside the caller's open
 * transaction, a Neon `Pool`/`Client`, or Neon's HTTP `neon()` function (see src/drivers/).
 */
export interface SqlExecutor {
  query<Row = Record<string, unknown>>(text: string, params?: unknown[]): Promise<QueryResult<Row>>;
}

/**
 * An executor that can also run several statements atomically in one transaction, in order, with
 * no application logic between them. That is what Neon's HTTP `sql.transaction([...])` offers, so
 * it is all we ask for: migrations are written to need nothing more.
 */
export interface BatchSqlExecutor extends SqlExecutor {
  batch(statements: readonly Statement[]): Promise<QueryResult[]>;
}

/** Time, injected so tests can move it. */
export interface Clock {
  now(): Date;
}

export const systemClock: Clock = { now: () => new Date() };

/** Structured logging; the default writes nothing. */
export interface Logger {
  debug(message: string, fields?: Record<string, unknown>): void;
  info(message: string, fields?: Record<string, unknown>): void;
  warn(message: string, fields?: Record<string, unknown>): void;
  error(message: string, fields?: Record<string, unknown>): void;
}

export const silentLogger: Logger = {
  debug() {},
  info() {},
  warn() {},
  error() {},
};

/** Makes message keys and claim tokens; injected so tests can make them predictable. */
export type IdGenerator = () => string;

export const randomId: IdGenerator = () => crypto.randomUUID();
