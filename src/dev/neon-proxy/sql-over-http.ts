/**
 * The stand-in's `POST /sql`: Neon's SQL-over-HTTP protocol, run with `pg` against a real
 * PostgreSQL. One query runs on its own; a `{queries: [...]}` batch runs in one transaction.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { CustomTypesConfig, PoolClient, QueryArrayConfig } from 'pg';
import { SQL_PATH } from '../neon-local-config.js';
import type { PostgresPools } from './session-pool.js';
import { errorResponse, errorResponseBody, SqlOverHttpError } from './sql-errors.js';
import {
  batchResponseHeaders,
  ISOLATION_LEVEL_SQL,
  parseSqlPayload,
  parseSqlRequestHeaders,
  readRequestBody,
  resolveSqlConnection,
  type SqlRequestHeaders,
  type SqlRequestPolicy,
  type SqlStatement,
} from './sql-request.js';
import type { PostgresAddress } from './targets.js';

/**
 * Neon rejects request bodies above 10 MiB (`sql_over_http_max_request_size_bytes`) with 413.
 * Using the same cap means a payload accepted here is also accepted in production.
 */
const MAX_REQUEST_BODY_BYTES = 10 * 1024 * 1024;

/**
 * Neon fails a query whose JSON response exceeds 10 MiB (`sql_over_http_max_response_size_bytes`)
 * with 507. An unbounded SELECT should fail locally the way it will fail in production, not pass.
 */
const MAX_RESPONSE_BODY_BYTES = 10 * 1024 * 1024;

/** Neon's reply to any path or method other than `POST /sql`. */
const UNSUPPORTED_REQUEST_MESSAGE = 'query is not supported';

/**
 * Every column value comes back as the exact text Postgres sent. The driver then applies its
 * own type parsers to it, exactly as it does with the text real Neon returns.
 */
const RAW_TEXT_TYPES: CustomTypesConfig = { getTypeParser: () => (text: string) => text };

/** What one `/sql` request needs from the running stand-in. */
export interface SqlEndpoint {
  postgres: PostgresAddress;
  pools: PostgresPools;
  policy: SqlRequestPolicy;
}

/** Answers one HTTP request; never rejects for a request's own failure (it becomes the reply). */
export async function handleSqlRequest(
  request: IncomingMessage,
  response: ServerResponse,
  endpoint: SqlEndpoint,
): Promise<void> {
  const path = new URL(request.url ?? '/', 'http://proxy.invalid').pathname;
  if (path !== SQL_PATH || request.method !== 'POST') {
    return sendJson(response, 400, JSON.stringify(errorResponseBody(UNSUPPORTED_REQUEST_MESSAGE)));
  }
  const { faults } = endpoint.pools;
  faults.httpRequests += 1;

  // A client that goes away before its reply cancels the query and rolls the batch back, as
  // Neon does, instead of letting it run on to commit.
  const clientGone = new AbortController();
  response.once('close', () => {
    if (!response.writableFinished) clientGone.abort();
  });

  try {
    const headers = parseSqlRequestHeaders(request.headers);
    const connection = resolveSqlConnection(
      headers.connectionString,
      endpoint.postgres,
      endpoint.policy,
    );
    const payload = parseSqlPayload(await readRequestBody(request, MAX_REQUEST_BODY_BYTES));
    const budget = new ResponseBudget();
    if (payload.kind === 'single') {
      const body = await endpoint.pools.withClient(connection, clientGone.signal, (client) =>
        runStatement(client, payload.statement, headers.arrayModeByDefault, budget),
      );
      if (cutReplyAfterRun(response, faults)) return;
      return sendJson(response, 200, body);
    }
    const body = await endpoint.pools.withClient(connection, clientGone.signal, (client) =>
      runBatch(client, payload.statements, headers, budget, clientGone.signal),
    );
    if (cutReplyAfterRun(response, faults)) return;
    return sendJson(response, 200, body, batchResponseHeaders(headers));
  } catch (error) {
    const { status, body } = errorResponse(error);
    // A rejected body may be partly unread; closing the connection keeps the next request clean.
    return sendJson(response, status, body, status === 413 ? { connection: 'close' } : {});
  }
}

/** Test switch: the statement took effect, and the client is told nothing but a dead socket. */
function cutReplyAfterRun(response: ServerResponse, faults: PostgresPools['faults']): boolean {
  if (faults.cutRepliesAfterRun <= 0) return false;
  faults.cutRepliesAfterRun -= 1;
  response.socket?.destroy();
  return true;
}

/**
 * Counts response bytes as rows are serialised, like Neon, which fails with 507 as soon as
 * the rows read so far pass the cap rather than after building the whole reply.
 */
class ResponseBudget {
  #bytes = 0;

  spend(text: string): void {
    this.#bytes += Buffer.byteLength(text);
    if (this.#bytes > MAX_RESPONSE_BODY_BYTES) {
      throw new SqlOverHttpError(
        507,
        `response is too large (max is ${MAX_RESPONSE_BODY_BYTES} bytes)`,
      );
    }
  }
}

/**
 * Runs one statement the way Neon does: extended protocol even without parameters (so, as on
 * Neon, several statements in one query are rejected), and every value returned as raw text.
 * Returns the statement's JSON result.
 */
async function runStatement(
  client: PoolClient,
  statement: SqlStatement,
  arrayModeByDefault: boolean,
  budget: ResponseBudget,
): Promise<string> {
  const config: QueryArrayConfig<(string | null)[]> & { queryMode: 'extended' } = {
    text: statement.query,
    values: statement.params,
    rowMode: 'array',
    types: RAW_TEXT_TYPES,
    queryMode: 'extended',
  };
  const result = await client.query<(string | null)[]>(config);
  const arrayMode = statement.arrayMode ?? arrayModeByDefault;
  const fields = result.fields.map((field) => ({
    name: field.name,
    dataTypeID: field.dataTypeID,
    tableID: field.tableID,
    columnID: field.columnID,
    dataTypeSize: field.dataTypeSize,
    dataTypeModifier: field.dataTypeModifier,
    format: 'text',
  }));
  const rows = result.rows.map((row) => {
    const json = JSON.stringify(
      arrayMode
        ? row
        : Object.fromEntries(fields.map((field, index) => [field.name, row[index] ?? null])),
    );
    budget.spend(json);
    return json;
  });
  const head = JSON.stringify({
    fields,
    command: result.command ?? '',
    rowCount: result.rowCount ?? null,
  });
  const tail = `,"rowAsArray":${arrayMode}}`;
  budget.spend(head);
  return `${head.slice(0, -1)},"rows":[${rows.join(',')}]${tail}`;
}

/**
 * Runs a batch in one transaction, started with the requested isolation level, READ ONLY and
 * DEFERRABLE. The first error rolls everything back and becomes the response; so does a
 * result set that outgrows the response cap, and so does the client going away, so nothing
 * commits that the caller never saw.
 */
async function runBatch(
  client: PoolClient,
  statements: SqlStatement[],
  headers: SqlRequestHeaders,
  budget: ResponseBudget,
  clientGone: AbortSignal,
): Promise<string> {
  await client.query(startTransactionSql(headers.transaction));
  try {
    const results: string[] = [];
    for (const statement of statements) {
      throwIfClientGone(clientGone);
      results.push(await runStatement(client, statement, headers.arrayModeByDefault, budget));
    }
    throwIfClientGone(clientGone);
    await client.query('COMMIT');
    return `{"results":[${results.join(',')}]}`;
  } catch (error) {
    // A failed COMMIT has already ended the transaction; anything else left it open.
    if (client.getTransactionStatus() !== 'I') {
      // If ROLLBACK fails too, the session stays non-idle and withClient discards it.
      await client.query('ROLLBACK').catch(() => {});
    }
    throw error;
  }
}

function throwIfClientGone(signal: AbortSignal): void {
  if (signal.aborted) throw new SqlOverHttpError(400, 'query was cancelled');
}

function startTransactionSql(transaction: SqlRequestHeaders['transaction']): string {
  const modes: string[] = [];
  const isolationSql =
    transaction.isolationLevel && ISOLATION_LEVEL_SQL.get(transaction.isolationLevel);
  if (isolationSql) modes.push(`ISOLATION LEVEL ${isolationSql}`);
  // Like Neon, only an explicit "true" changes the mode; otherwise the session default applies.
  if (transaction.readOnly) modes.push('READ ONLY');
  if (transaction.deferrable) modes.push('DEFERRABLE');
  return modes.length === 0 ? 'START TRANSACTION' : `START TRANSACTION ${modes.join(', ')}`;
}

function sendJson(
  response: ServerResponse,
  status: number,
  body: string,
  headers: Record<string, string> = {},
): void {
  if (response.headersSent || response.destroyed) return;
  response.writeHead(status, {
    ...headers,
    'content-type': 'application/json',
    'content-length': Buffer.byteLength(body),
  });
  response.end(body);
}
