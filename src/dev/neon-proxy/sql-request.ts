/**
 * Reading a SQL-over-HTTP request the way Neon's proxy reads it: its headers, the connection
 * string it names, and the JSON body of one query or a batch.
 */
import type { IncomingHttpHeaders, IncomingMessage } from 'node:http';
import { isIP } from 'node:net';
import { stripBrackets } from '../neon-local-config.js';
import type { SqlConnection } from './session-pool.js';
import { NEON_MESSAGES, SqlOverHttpError } from './sql-errors.js';
import { DEFAULT_POSTGRES_PORT, isAllowedTarget, type PostgresAddress } from './targets.js';

/** Header values the driver sends for `isolationLevel`, mapped to the SQL that starts such a transaction. */
export const ISOLATION_LEVEL_SQL = new Map([
  ['ReadUncommitted', 'READ UNCOMMITTED'],
  ['ReadCommitted', 'READ COMMITTED'],
  ['RepeatableRead', 'REPEATABLE READ'],
  ['Serializable', 'SERIALIZABLE'],
]);

export interface SqlRequestHeaders {
  connectionString: string;
  /** `Neon-Array-Mode: true`; a query's own `arrayMode` overrides it. */
  arrayModeByDefault: boolean;
  /** Batch-only transaction settings; Neon ignores them for a single query. */
  transaction: { isolationLevel: string | undefined; readOnly: boolean; deferrable: boolean };
}

export interface SqlStatement {
  query: string;
  params: (string | null)[];
  arrayMode: boolean | undefined;
}

export type SqlPayload =
  | { kind: 'single'; statement: SqlStatement }
  | { kind: 'batch'; statements: SqlStatement[] };

/** Switches for Neon checks that the local setup cannot always meet. */
export interface SqlRequestPolicy {
  /** Refuse a connection string whose host is an IP address, as Neon does (`missing hostname`). */
  requireHostname: boolean;
}

export function parseSqlRequestHeaders(headers: IncomingHttpHeaders): SqlRequestHeaders {
  const connectionString = headerValue(headers, 'neon-connection-string');
  if (connectionString === undefined || connectionString === '') {
    throw new SqlOverHttpError(400, 'missing Neon-Connection-String header');
  }
  if (headerValue(headers, 'neon-raw-text-output') !== 'true') {
    // Real Neon converts values to JSON numbers, booleans and arrays when this header is absent.
    // The driver always sends it, so the conversion is not reproduced here.
    throw new SqlOverHttpError(
      400,
      'the local Neon proxy only implements Neon-Raw-Text-Output: true (which @neondatabase/serverless always sends)',
    );
  }
  // Checked for a single query too: Neon parses the headers before it looks at the body.
  const isolationLevel = headerValue(headers, 'neon-batch-isolation-level');
  if (isolationLevel !== undefined && !ISOLATION_LEVEL_SQL.has(isolationLevel)) {
    throw new SqlOverHttpError(400, 'invalid isolation level');
  }
  return {
    connectionString,
    // Like Neon: anything but exactly "true" means false.
    arrayModeByDefault: headerValue(headers, 'neon-array-mode') === 'true',
    transaction: {
      isolationLevel,
      readOnly: headerValue(headers, 'neon-batch-read-only') === 'true',
      deferrable: headerValue(headers, 'neon-batch-deferrable') === 'true',
    },
  };
}

/** Neon echoes the batch transaction settings it applied as response headers. */
export function batchResponseHeaders(headers: SqlRequestHeaders): Record<string, string> {
  const echoed: Record<string, string> = {};
  const { isolationLevel, readOnly, deferrable } = headers.transaction;
  if (readOnly) echoed['neon-batch-read-only'] = 'true';
  if (deferrable) echoed['neon-batch-deferrable'] = 'true';
  if (isolationLevel !== undefined) echoed['neon-batch-isolation-level'] = isolationLevel;
  return echoed;
}

/**
 * The login a request names. The host picks the target only when it is loopback or the
 * configured Postgres host; any other (a Neon-style `ep-....neon.tech`) goes to `postgres`.
 * The driver's `application_name` is dropped, as Neon does not forward it.
 */
export function resolveSqlConnection(
  connectionString: string,
  postgres: PostgresAddress,
  policy: SqlRequestPolicy,
): SqlConnection {
  let url: URL;
  try {
    url = new URL(connectionString);
  } catch {
    throw new SqlOverHttpError(400, 'invalid connection string: not a URL');
  }
  if (url.protocol !== 'postgres:' && url.protocol !== 'postgresql:') {
    throw new SqlOverHttpError(400, 'incorrect scheme');
  }
  const host = stripBrackets(url.hostname);
  if (host === '' || (policy.requireHostname && isIP(host) !== 0)) {
    throw new SqlOverHttpError(400, NEON_MESSAGES.missingHostname);
  }
  const user = decodeUrlComponent(url.username, 'username');
  if (user === '') throw new SqlOverHttpError(400, 'missing username');
  const database = decodeUrlComponent(url.pathname.slice(1), 'database name');
  if (database === '') throw new SqlOverHttpError(400, 'missing database name');
  const password = decodeUrlComponent(url.password, 'password');
  if (password === '') throw new SqlOverHttpError(400, NEON_MESSAGES.missingCredentials);

  const port = url.port === '' ? DEFAULT_POSTGRES_PORT : Number(url.port);
  const address = isAllowedTarget(host, postgres) ? { host, port } : postgres;
  return { address, user, password, database };
}

export function parseSqlPayload(body: Buffer): SqlPayload {
  let json: unknown;
  try {
    json = JSON.parse(body.toString('utf8'));
  } catch (error) {
    throw new SqlOverHttpError(
      400,
      `could not parse the HTTP request body: ${error instanceof Error ? error.message : error}`,
    );
  }
  // Neon tries the single-query shape first, so a body with both `query` and `queries` is single.
  if (isRecord(json) && typeof json.query === 'string') {
    return { kind: 'single', statement: parseSqlStatement(json, 'body') };
  }
  if (isRecord(json) && Array.isArray(json.queries)) {
    return {
      kind: 'batch',
      statements: json.queries.map((query, index) => parseSqlStatement(query, `queries[${index}]`)),
    };
  }
  throw new SqlOverHttpError(
    400,
    'could not parse the HTTP request body: expected {"query": string, "params"?: [...]} or {"queries": [...]}',
  );
}

function parseSqlStatement(value: unknown, where: string): SqlStatement {
  if (!isRecord(value) || typeof value.query !== 'string') {
    throw new SqlOverHttpError(
      400,
      `could not parse the HTTP request body: ${where}.query must be a string`,
    );
  }
  // Absent means no parameters; `null` is refused, as Neon's serde reads it as a bad sequence.
  const params = value.params === undefined ? [] : value.params;
  if (!Array.isArray(params)) {
    throw new SqlOverHttpError(
      400,
      `could not parse the HTTP request body: ${where}.params must be an array`,
    );
  }
  if (value.arrayMode !== undefined && typeof value.arrayMode !== 'boolean') {
    throw new SqlOverHttpError(
      400,
      `could not parse the HTTP request body: ${where}.arrayMode must be a boolean`,
    );
  }
  return { query: value.query, params: params.map(jsonParamToPgText), arrayMode: value.arrayMode };
}

/**
 * Neon's `json_to_pg_text`: parameters go to Postgres as text. The driver already sends only
 * strings and nulls (it runs pg's `prepareValue`, which turns arrays into array literals and
 * Buffers into `\x` hex), so the other branches only serve hand-written requests.
 */
function jsonParamToPgText(value: unknown): string | null {
  if (value === null) return null;
  if (typeof value === 'string') return value;
  if (Array.isArray(value)) return jsonArrayToPgArrayLiteral(value);
  return JSON.stringify(value);
}

/** Neon's `json_array_to_pg_array`, including its quirk of quoting strings with JSON escaping. */
function jsonArrayToPgArrayLiteral(value: unknown): string | null {
  if (value === null) return null;
  if (Array.isArray(value)) {
    return `{${value.map((element) => jsonArrayToPgArrayLiteral(element) ?? 'NULL').join(',')}}`;
  }
  if (isRecord(value)) return JSON.stringify(JSON.stringify(value));
  return JSON.stringify(value);
}

export function readRequestBody(request: IncomingMessage, limit: number): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const tooLarge = () =>
      new SqlOverHttpError(413, `request is too large (max is ${limit} bytes)`);
    if (Number(request.headers['content-length']) > limit) {
      request.resume(); // discard the body; the response closes the connection
      return reject(tooLarge());
    }
    const chunks: Buffer[] = [];
    let size = 0;
    const onData = (chunk: Buffer) => {
      size += chunk.length;
      if (size <= limit) {
        chunks.push(chunk);
        return;
      }
      request.off('data', onData);
      request.resume(); // keep draining so the 413 can still be written
      reject(tooLarge());
    };
    request.on('data', onData);
    request.once('end', () => resolve(Buffer.concat(chunks)));
    request.once('error', (error) =>
      reject(new SqlOverHttpError(400, `could not read the HTTP request body: ${error.message}`)),
    );
  });
}

function headerValue(headers: IncomingHttpHeaders, name: string): string | undefined {
  const value = headers[name];
  return Array.isArray(value) ? value[0] : value;
}

function decodeUrlComponent(value: string, what: string): string {
  try {
    return decodeURIComponent(value);
  } catch {
    throw new SqlOverHttpError(
      400,
      `invalid connection string: malformed percent-encoding in the ${what}`,
    );
  }
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
