/**
 * Postgres errors, mapped at the edge: a driver error keeps its SQLSTATE `code` and gains a
 * `retryable` flag, so callers and the drain decide by code, not by message text.
 */

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

/** Network-level failures that never reached Postgres. */
const RETRYABLE_NETWORK_CODES: ReadonlySet<string> = new Set([
  'ECONNRESET',
  'ECONNREFUSED',
  'ETIMEDOUT',
  'EPIPE',
  'ENOTFOUND',
  'EAI_AGAIN',
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
 * driver error (stack, SQLSTATE, detail) reaches the caller intact.
 */
export function mapDatabaseError(error: unknown): unknown {
  if (typeof error !== 'object' || error === null) return error;
  Object.defineProperty(error, 'retryable', { value: retryableByCode(error), configurable: true });
  return error;
}

/** True when a database error may pass if the statement is run again. */
export function isRetryableDatabaseError(error: unknown): boolean {
  if (typeof error !== 'object' || error === null) return false;
  if ('retryable' in error) return error.retryable === true;
  return retryableByCode(error);
}

function retryableByCode(error: object): boolean {
  const code = errorCode(error);
  if (code === undefined || code === '') {
    return error instanceof Error && CONNECTION_LOST_MESSAGE.test(error.message);
  }
  return RETRYABLE_SQLSTATES.has(code) || RETRYABLE_NETWORK_CODES.has(code);
}
