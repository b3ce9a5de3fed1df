/**
 * Points `@neondatabase/serverless` at the local Neon stand-in (`startNeonProxy`) instead of
 * Neon. Development and tests only.
 *
 * Node-free on purpose: a Worker run by `wrangler dev` imports this module, so it loads no
 * Node built-ins and no `ws`. On Node 20, which has no global WebSocket, pass one (`ws`'s) as
 * `webSocket`; src/dev/neon-proxy.ts does that for Node callers.
 */
import type { neonConfig as NeonConfigClass } from '@neondatabase/serverless';
import { ConfigurationError } from '../core/errors.js';

/** The interface the stand-in listens on unless told otherwise: loopback, because it has no TLS. */
export const DEFAULT_PROXY_HOST = '127.0.0.1';

/** Neon's SQL-over-HTTP path, served by the stand-in as well. */
export const SQL_PATH = '/sql';

/**
 * `host:port` where host is a 127.x.y.z address, `localhost` or `[::1]`. The stand-in has no
 * TLS and no authentication of its own, so a setting that would send credentials in clear
 * text to another machine is refused rather than obeyed.
 */
const LOOPBACK_AUTHORITY = /^(?:127(?:\.\d{1,3}){3}|localhost|\[::1\]):(\d{1,5})$/;

/** A WebSocket constructor as the driver takes it (`ws`'s on Node, the global one on Workers). */
export type WebSocketConstructorLike = NonNullable<typeof NeonConfigClass.webSocketConstructor>;

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
  /** Set only when a constructor was given; otherwise the driver's own choice stands. */
  webSocketConstructor?: WebSocketConstructorLike;
}

/** Where the stand-in listens, and the WebSocket class to reach it with when the runtime has none. */
export interface NeonLocalTarget {
  port: number;
  /** Default `127.0.0.1`. */
  host?: string;
  webSocket?: WebSocketConstructorLike;
}

/**
 * The `neonConfig` settings a driver user needs to reach a proxy started by `startNeonProxy`.
 * Prefer `applyNeonLocalConfig`, which assigns them.
 *
 * @example
 * import { neonConfig } from '@neondatabase/serverless';
 *
 * Object.assign(neonConfig, neonLocalConfig({ port: 54330 }));
 */
export function neonLocalConfig(target: NeonLocalTarget): NeonLocalConfig {
  const authority = `${formatHostForUrl(target.host ?? DEFAULT_PROXY_HOST)}:${target.port}`;
  const config: NeonLocalConfig = {
    wsProxy: (host, port) =>
      `${authority}/v2?address=${encodeURIComponent(`${formatHostForUrl(host)}:${port}`)}`,
    fetchEndpoint: () => `http://${authority}${SQL_PATH}`,
    useSecureWebSocket: false,
    forceDisablePgSSL: true,
    pipelineConnect: false,
    pipelineTLS: false,
  };
  if (target.webSocket !== undefined) config.webSocketConstructor = target.webSocket;
  return config;
}

/**
 * Points `@neondatabase/serverless` at a local proxy by assigning `neonLocalConfig(target)`.
 *
 * Pass the driver's global `neonConfig` to affect every `Pool`, `Client` and `neon()` created
 * afterwards (what tests normally do, once per file). Or pass one client's `client.neonConfig`
 * before `client.connect()` to redirect only that client; `fetchEndpoint` is global-only in
 * the driver, so it is set only when the global `neonConfig` is passed. A `Pool` has no
 * settings of its own: its clients read the global `neonConfig`, unless `pool.Client` is
 * replaced by a subclass that applies the settings in its constructor (docs/local-neon-proxy.md).
 *
 * @example
 * import { neon, neonConfig } from '@neondatabase/serverless';
 *
 * applyNeonLocalConfig(neonConfig, { port: proxy.port, webSocket: WebSocket });
 * const sql = neon(connectionString); // HTTP via the proxy
 */
export function applyNeonLocalConfig(
  target: typeof NeonConfigClass | NeonConfigClass,
  local: NeonLocalTarget,
): void {
  const config = neonLocalConfig(local);
  target.wsProxy = config.wsProxy;
  target.useSecureWebSocket = config.useSecureWebSocket;
  target.forceDisablePgSSL = config.forceDisablePgSSL;
  target.pipelineConnect = config.pipelineConnect;
  target.pipelineTLS = config.pipelineTLS;
  if (config.webSocketConstructor !== undefined) {
    target.webSocketConstructor = config.webSocketConstructor;
  }
  // Only the global (the class itself) has `fetchEndpoint`; a client instance has no such setting.
  if (typeof target === 'function') target.fetchEndpoint = config.fetchEndpoint;
}

/**
 * Applies a `NEON_LOCAL_PROXY`-style setting: `authority` is the stand-in's `host:port`, and
 * must be loopback (`127.0.0.1:54330`, `localhost:54330`, `[::1]:54330`), because the driver
 * would otherwise send the connection string, password included, in clear text to another
 * machine. Throws ConfigurationError (`OUTBOX_CONFIGURATION`) for anything else.
 *
 * @example
 * import { neonConfig } from '@neondatabase/serverless';
 *
 * if (env.NEON_LOCAL_PROXY) applyNeonLocalProxy(neonConfig, env.NEON_LOCAL_PROXY);
 */
export function applyNeonLocalProxy(
  target: typeof NeonConfigClass,
  authority: string,
  webSocket?: WebSocketConstructorLike,
): void {
  const match = LOOPBACK_AUTHORITY.exec(authority);
  const port = match === null ? Number.NaN : Number(match[1]);
  if (match === null || port < 1 || port > 65_535) {
    throw new ConfigurationError(
      `NEON_LOCAL_PROXY must be a loopback host:port such as 127.0.0.1:54330, got ${authority}`,
    );
  }
  const host = authority.slice(0, authority.lastIndexOf(':'));
  applyNeonLocalConfig(target, { host: stripBrackets(host), port, webSocket });
}

/** `[::1]` style brackets for an IPv6 literal in a URL authority. */
export function formatHostForUrl(host: string): string {
  return host.includes(':') && !host.startsWith('[') ? `[${host}]` : host;
}

export function stripBrackets(host: string): string {
  return host.startsWith('[') && host.endsWith(']') ? host.slice(1, -1) : host;
}
