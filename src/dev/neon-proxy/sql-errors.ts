/**
 * How the stand-in's SQL-over-HTTP endpoint reports failures: the same statuses, messages and
 * body shape as Neon's proxy (`proxy/src/serverless/sql_over_http.rs`), so code that
 * classifies Neon errors is tested against the replies production sends.
 */

/** A request the proxy refuses or cannot serve, answered with `status` and a Neon-shaped JSON error. */
export class SqlOverHttpError extends Error {
  override readonly name = 'SqlOverHttpError';
  readonly status: number;
  /** Postgres fields to report (a connect-time SQLSTATE); absent for the proxy's own errors. */
  readonly postgres: (Record<string, unknown> & { code: string }) | undefined;

  constructor(
    status: number,
    message: string,
    options?: { cause?: unknown; postgres?: Record<string, unknown> & { code: string } },
  ) {
    super(message, options);
    this.status = status;
    this.postgres = options?.postgres;
  }
}

/**
 * Neon's messages for failures that do not come from Postgres. The driver puts them, with an
 * empty `code`, on its `NeonDbError` (400) or in a `Server error (HTTP status 500): ...`
 * message (any other status).
 */
export const NEON_MESSAGES = {
  /** The compute could not be reached (tokio-postgres connect error, no Postgres reply). */
  computeUnreachable: "Couldn't connect to compute node",
  /** The control plane could not wake or locate the compute. */
  controlPlane: 'Control plane request failed',
  /** tokio-postgres' `Error::closed()`: the socket ended without an error message. */
  connectionClosed: 'connection closed',
  /** tokio-postgres' `Error::io`: the socket failed (reset, timeout). */
  communication: (detail: string) => `error communicating with the server: ${detail}`,
  /** The connection string has no password, so the proxy has nothing to check. */
  missingCredentials: 'missing authentication credentials',
  /** The proxy checks passwords itself; an unknown role gets the same reply as a wrong password. */
  passwordFailed: (user: string) => `password authentication failed for user '${user}'`,
  /** A connection string whose host is an IP names no endpoint. */
  missingHostname: 'missing hostname',
} as const;

/**
 * The Postgres error fields the driver copies from a 400 response body onto its `NeonDbError`
 * (the driver's exported `errorFields`), in its order.
 */
const POSTGRES_ERROR_FIELDS = [
  'severity',
  'code',
  'detail',
  'hint',
  'position',
  'internalPosition',
  'internalQuery',
  'where',
  'schema',
  'table',
  'column',
  'dataType',
  'constraint',
  'file',
  'line',
  'routine',
] as const;

interface PostgresErrorLike {
  message: string;
  code: string;
  severity: string;
}

/** A Postgres server error (pg's DatabaseError), told apart from socket errors by its SQLSTATE and severity. */
export function isPostgresError(
  error: unknown,
): error is Error & PostgresErrorLike & Record<string, unknown> {
  if (!(error instanceof Error)) return false;
  const { code, severity } = error as Partial<PostgresErrorLike>;
  return typeof code === 'string' && /^[0-9A-Z]{5}$/.test(code) && typeof severity === 'string';
}

/**
 * Neon's error shape: every field present; `code` and `severity` are empty strings and the
 * others `null` when Postgres did not send them.
 */
export function errorResponseBody(
  message: string,
  source?: Record<string, unknown>,
): Record<string, unknown> {
  const body: Record<string, unknown> = { message };
  for (const field of POSTGRES_ERROR_FIELDS) {
    const value = source?.[field];
    body[field] = typeof value === 'string' ? value : null;
  }
  body.code ??= '';
  body.severity ??= '';
  return body;
}

/**
 * A query-time failure as Neon reports it: a Postgres error is a 400 with its fields; a
 * socket that failed is a 400 with an empty code and tokio-postgres' message.
 */
export function errorResponse(error: unknown): { status: number; body: string } {
  if (isPostgresError(error)) {
    return { status: 400, body: JSON.stringify(errorResponseBody(error.message, error)) };
  }
  if (error instanceof SqlOverHttpError) {
    const body = errorResponseBody(error.message, error.postgres);
    return { status: error.status, body: JSON.stringify(body) };
  }
  const lost = connectionLostMessage(error);
  if (lost !== undefined) {
    return { status: 400, body: JSON.stringify(errorResponseBody(lost)) };
  }
  return {
    status: 500,
    body: JSON.stringify(errorResponseBody(`the local Neon proxy failed: ${errorMessage(error)}`)),
  };
}

/**
 * pg reports a socket that ended quietly as `Connection terminated...`, and a socket error
 * with its Node code. Neon's client says `connection closed` and `error communicating with
 * the server: ...` for the same two events. Anything else is the stand-in's own bug.
 */
function connectionLostMessage(error: unknown): string | undefined {
  if (!(error instanceof Error)) return undefined;
  const code = (error as { code?: unknown }).code;
  if (typeof code === 'string' && /^E[A-Z]+$/.test(code)) {
    return NEON_MESSAGES.communication(error.message);
  }
  if (/^Connection terminated/.test(error.message)) return NEON_MESSAGES.connectionClosed;
  // pg's answer for a session whose connection failed a moment before it was lent (its backend
  // terminated while it sat idle): to the client, the same lost connection.
  if (/encountered a connection error and is not queryable/.test(error.message)) {
    return NEON_MESSAGES.connectionClosed;
  }
  return undefined;
}

export function errorMessage(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
