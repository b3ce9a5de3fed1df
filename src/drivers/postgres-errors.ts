/**
 * Postgres errors, mapped at the edge: a driver error keeps its SQLSTATE `code` and gains a
 * `retryable` flag, so callers and the drain decide by code, not by message text.
 */
import { isMissingPasswordFailure, missingPasswordError } from './connection-password.js';

/**
 * SQLSTATEs where running the same statement again may succeed: connection loss, failover,
 * serialization and deadlock aborts, resource pressure, and Neon compute waking up. Anything
 * else (constraint violations, syntax, permissions) will fail the same way again.
 */
export const RETRYABLE_SQLSTATES: ReadonlySet<string> = new Set([
  '08000', // connection_exception
  '08001', // sqlclient_unable_to_establish_sqlconnection
  '08003', // connection_does_not_exist
  '08004', // sqlserver_rejected_establishment_of_sqlconnection
  '08006', // connection_failure
  '08007', // transaction_resolution_unknown
  '40001', // serialization_failure
  '40P01', // deadlock_detected
  '53000', // insufficient_resources
  '53100', // disk_full
  '53200', // out_of_memory
  '53300', // too_many_connections
  '55P03', // lock_not_available
  '57P01', // admin_shutdown (failover, compute suspend)
  '57P02', // crash_shutdown
  '57P03', // cannot_connect_now (starting up)
]);

/**
 * Network-level failures that never reached Postgres, or lost the connection under a statement.
 * postgres.js names its own: `CONNECTION_CLOSED` when the socket closed under a query (a
 * terminated backend, a failover), `CONNECT_TIMEOUT` when no connection opened in time. Not
 * its `CONNECTION_ENDED` or `CONNECTION_DESTROYED`: those follow the app's own `sql.end()`.
 */
const RETRYABLE_NETWORK_CODES: ReadonlySet<string> = new Set([
  'ECONNRESET',
  'ECONNREFUSED',
  'ETIMEDOUT',
  'EPIPE',
  'ENOTFOUND',
  'EAI_AGAIN',
  'CONNECTION_CLOSED',
  'CONNECT_TIMEOUT',
]);

/**
 * node-postgres reports a connection lost mid-query with no code at all; recognise it by its
 * message so a dropped connection is retried like any other network failure.
 */
const CONNECTION_LOST_MESSAGE =
  /Connection terminated|connection (?:was )?closed|Client has encountered a connection error/i;

/** SQLSTATE 23505: a unique index refused the row. */
export const UNIQUE_VIOLATION = '23505';
/** SQLSTATE 23503: a foreign key points at a row that does not exist. */
export const FOREIGN_KEY_VIOLATION = '23503';

/**
 * SQLSTATE 26000 (invalid_sql_statement_name): a Bind named a prepared statement this server
 * connection does not have. Not in {@link RETRYABLE_SQLSTATES}: our executors already run such
 * a statement again unnamed where that is safe, so one that still reaches a caller failed
 * inside the caller's own transaction, which it aborted; the statement alone cannot pass.
 */
export const INVALID_SQL_STATEMENT_NAME = '26000';
/** SQLSTATE 42P05 (duplicate_prepared_statement): a Parse named one this connection has. Same as 26000. */
export const DUPLICATE_PREPARED_STATEMENT = '42P05';
/** SQLSTATE 25P02: the transaction is aborted; every statement fails until ROLLBACK. */
export const IN_FAILED_SQL_TRANSACTION = '25P02';

/**
 * True when `error` says the named statement `name` was missing from (26000), or already on
 * (42P05), the server connection it reached: what a pooler that moves a client between server
 * connections causes. Either failed at Parse or Bind, before the statement ran, so running it
 * again unnamed cannot run it twice. The message must name the statement (in any server
 * language), so a user's own failing `EXECUTE` or `PREPARE` is not taken for the pooler.
 */
export function namedStatementLost(error: unknown, name: string): boolean {
  const code = errorCode(error);
  return (
    (code === INVALID_SQL_STATEMENT_NAME || code === DUPLICATE_PREPARED_STATEMENT) &&
    error instanceof Error &&
    error.message.includes(name)
  );
}

/** The error's `code`: a SQLSTATE when Postgres answered, a Node code for network failures. */
export function errorCode(error: unknown): string | undefined {
  return typeof error === 'object' &&
    error !== null &&
    'code' in error &&
    typeof error.code === 'string'
    ? error.code
    : undefined;
}

/**
 * True when Postgres refused a statement with `sqlState`, naming `constraint` when given: how
 * callers turn a known constraint into a clear 4xx or ValidationError instead of a 500.
 */
export function violates(error: unknown, sqlState: string, constraint?: string): boolean {
  if (errorCode(error) !== sqlState) return false;
  if (constraint === undefined) return true;
  return (error as { constraint?: unknown }).constraint === constraint;
}

/**
 * Marks a driver error with `retryable` and returns it unchanged otherwise, so the original
 * driver error (stack, SQLSTATE, detail) reaches the caller intact. Two are replaced, the
 * driver's error kept as `cause`: a WebSocket failure that is not an Error (see
 * {@link webSocketFailure}), and a connection string without a password, which becomes a
 * `ConfigurationError` saying how to add one (src/drivers/connection-password.ts).
 */
export function mapDatabaseError(error: unknown): unknown {
  if (typeof error !== 'object' || error === null) return error;
  const mapped =
    webSocketFailure(error) ??
    (isMissingPasswordFailure(error)
      ? missingPasswordError('the connection string', error)
      : error);
  Object.defineProperty(mapped, 'retryable', {
    value: retryableByCode(mapped),
    configurable: true,
  });
  return mapped;
}

/**
 * Neon's WebSocket driver rejects with the socket's `ErrorEvent`, not an Error, when the
 * WebSocket fails under a query (the proxy restarted, the connection reset): no stack, no code
 * at the top. Turned into an Error that names the failure and carries the network code
 * (ECONNRESET), so it is retried like any other lost connection.
 */
function webSocketFailure(error: object): Error | undefined {
  if (error instanceof Error || !('error' in error) || !(error.error instanceof Error)) {
    return undefined;
  }
  const inner = error.error as Error & { code?: unknown };
  const message =
    'message' in error && typeof error.message === 'string' && error.message !== ''
      ? error.message
      : inner.message;
  return Object.assign(
    new Error(`the WebSocket to the database failed: ${message}`, { cause: inner }),
    typeof inner.code === 'string' ? { code: inner.code } : {},
  );
}

/** True when a database error may pass if the statement is run again. */
export function isRetryableDatabaseError(error: unknown): boolean {
  if (typeof error !== 'object' || error === null) return false;
  if ('retryable' in error) return error.retryable === true;
  return retryableByCode(error);
}

function retryableByCode(error: object): boolean {
  const neon = neonHttpFailure(error);
  if (neon !== undefined) return neon.retryable;
  const code = errorCode(error);
  if (code === undefined || code === '') {
    return error instanceof Error && CONNECTION_LOST_MESSAGE.test(error.message);
  }
  return RETRYABLE_SQLSTATES.has(code) || RETRYABLE_NETWORK_CODES.has(code);
}

/**
 * The failures Neon's SQL-over-HTTP endpoint reports without a usable `code`, as
 * `@neondatabase/serverless` hands them over. The driver reads the reply body only for HTTP
 * 400; any other status becomes `Server error (HTTP status N): <body>` with no `code`, so a
 * SQLSTATE Neon sends with a 500 is found by reading that body.
 *
 * | shape (message)                                        | statement ran? | retryable |
 * |--------------------------------------------------------|----------------|-----------|
 * | `Server error (HTTP status 500): {..."code":"53300"}`  | no (at connect) | when the SQLSTATE is in RETRYABLE_SQLSTATES |
 * | `Server error (HTTP status 500): ...Couldn't connect to compute node` | no | yes |
 * | `Server error (HTTP status 500): ...Control plane request failed`      | no | yes |
 * | `Server error (HTTP status 502/503/504): ...` (an edge in front of Neon) | maybe | yes |
 * | `Error connecting to database: TypeError: fetch failed` | maybe (the reply may be what was lost) | yes |
 * | `connection closed` (400, code "")                     | maybe          | yes       |
 * | `error communicating with the server: ...` (400, code "") | maybe       | yes       |
 * | `Query cancelled, connection was terminated` (400, 08P01) | maybe; a batch rolled back | yes |
 * | `password authentication failed for user '...'` (400, code "") | no   | no: configuration |
 * | any other 5xx body (`could not parse postgres response`, 507 too large) | - | no |
 *
 * What each caller does with a retryable one, and why that is safe when the statement may
 * have run:
 * - **Drain (claim)**: the schedule tries again on its next tick. A claim that ran but whose
 *   reply was lost leaves its rows leased; the lease expires and a later claim takes them, so
 *   it costs a delay, never a message.
 * - **Settle**: `drainOnce` repeats it at once (a few tries). Every settle names the claim
 *   token in its WHERE clause, so a repeat after one that did commit matches zero rows and
 *   changes nothing; if every try fails the leases expire as above.
 * - **Kick** (the after-commit drain of just-enqueued keys): not repeated inline; the
 *   scheduled drain delivers those rows. The enqueue itself already committed.
 * - **An HTTP request that writes** (an enqueue with a domain write): repeat it in place only
 *   when the statement did not run (the connect-time rows); otherwise answer 503 and let the
 *   caller retry with its idempotency key, because a blind repeat could write twice.
 */
export interface NeonHttpFailure {
  /** The HTTP status Neon answered with; undefined when no reply arrived (fetch failed). */
  status: number | undefined;
  /** The SQLSTATE named in a 500 body (connect-time), or the reply's code. */
  sqlState: string | undefined;
  /** False only for failures Neon reports before running anything (at connect). */
  statementMayHaveRun: boolean;
  retryable: boolean;
}

const NEON_SERVER_ERROR = /^Server error \(HTTP status (\d{3})\): ([\s\S]*)$/;
const NEON_FETCH_FAILED = /^Error connecting to database: /;
const NEON_CONNECT_FAILED = /Couldn't connect to compute node|Control plane request failed/;
const NEON_CONNECTION_LOST = /^(?:connection closed|error communicating with the server)/;
const NEON_QUERY_CANCELLED = /^Query cancelled/;
/** Statuses from a gateway in front of Neon: the request did not get a reply from the proxy. */
const GATEWAY_STATUSES: ReadonlySet<number> = new Set([502, 503, 504]);

/**
 * Reads a Neon HTTP driver error (`NeonDbError`) into one row of the table above; undefined
 * for anything else, including an ordinary Postgres error with its SQLSTATE.
 */
export function neonHttpFailure(error: unknown): NeonHttpFailure | undefined {
  if (!(error instanceof Error)) return undefined;
  const code = errorCode(error);
  const { message } = error;
  const server = NEON_SERVER_ERROR.exec(message);
  if (server !== null) {
    const status = Number(server[1]);
    const body = parseJsonObject(server[2]!);
    const sqlState = typeof body?.code === 'string' && body.code !== '' ? body.code : undefined;
    const bodyMessage = typeof body?.message === 'string' ? body.message : server[2]!;
    if (sqlState !== undefined) {
      return {
        status,
        sqlState,
        statementMayHaveRun: false,
        retryable: RETRYABLE_SQLSTATES.has(sqlState),
      };
    }
    if (NEON_CONNECT_FAILED.test(bodyMessage)) {
      return { status, sqlState, statementMayHaveRun: false, retryable: true };
    }
    const retryable = GATEWAY_STATUSES.has(status);
    return { status, sqlState, statementMayHaveRun: true, retryable };
  }
  if (NEON_FETCH_FAILED.test(message)) {
    return { status: undefined, sqlState: undefined, statementMayHaveRun: true, retryable: true };
  }
  if ((code === '' || code === undefined) && NEON_CONNECTION_LOST.test(message)) {
    return { status: 400, sqlState: undefined, statementMayHaveRun: true, retryable: true };
  }
  if (code === '08P01' && NEON_QUERY_CANCELLED.test(message)) {
    return { status: 400, sqlState: code, statementMayHaveRun: true, retryable: true };
  }
  return undefined;
}

function parseJsonObject(text: string): Record<string, unknown> | undefined {
  try {
    const value: unknown = JSON.parse(text);
    return typeof value === 'object' && value !== null
      ? (value as Record<string, unknown>)
      : undefined;
  } catch {
    return undefined;
  }
}
