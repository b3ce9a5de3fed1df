/**
 * Which webhook URLs the sender may call: the SSRF guard. A webhook URL is user input that our
 * servers fetch, so without this a customer could point "their endpoint" at the cloud metadata
 * service, the database's private address or an admin port on loopback.
 *
 * Checked before any connection is made: the scheme, the host's literal address or name, and
 * (where the runtime can resolve names) every address the name resolves to; which addresses are
 * refused is ./forbidden-addresses.ts.
 *
 * Fetch resolves the name again when it connects, so a name that answers a public address to the
 * check and a private one to the connect (DNS rebinding) would get through the check alone. A
 * {@link ConnectingHostResolver} closes that: the connection resolves through the same resolver
 * and checks every address it would connect to, before connecting. `nodeHostResolver` is one
 * (a fetch over `node:http` agents, ./node-checked-fetch.ts). Workers need none: there is no resolver to
 * call, and the platform's fetch cannot reach private or loopback ranges.
 */
import {
  ConfigurationError,
  PermanentDeliveryError,
  RetryableDeliveryError,
} from '../../core/errors.js';
import { forbiddenAddressReason, isIpLiteral } from './forbidden-addresses.js';

export { forbiddenAddressReason } from './forbidden-addresses.js';

/**
 * Resolves a host name to every address it has (IPv4 and IPv6), as text. On Node use
 * `nodeHostResolver` (`node:dns/promises` lookup with `all: true`); Workers have no resolver.
 */
export type HostResolver = (hostname: string) => Promise<readonly string[]>;

/**
 * Why a connection to `address`, which `host` resolved to as the connection was made, is
 * refused; undefined when it may go ahead.
 */
export type ConnectCheck = (host: string, address: string) => string | undefined;

/** The part of `fetch` the webhook sender calls: one request, never redirected. */
export type CheckedFetch = (url: URL, init: RequestInit) => Promise<Response>;

/**
 * A {@link HostResolver} the webhook sender can connect through, so the connection goes only to
 * an address that was checked: `nodeHostResolver` on Node. The sender calls `connectingFetch`
 * once, with the destination policy's check, and sends every webhook with the fetch it returns
 * (on Node, over `node:http` agents whose DNS lookup is this resolver, and which refuse,
 * unconnected, a name that resolves to an address the check refuses).
 */
export interface ConnectingHostResolver extends HostResolver {
  connectingFetch(check: ConnectCheck): CheckedFetch;
}

export interface DestinationPolicyOptions {
  /**
   * `production` (the default) allows https only; `development` allows http too. The address
   * rules hold in both; open exceptions with `allowHosts`.
   */
  environment?: 'production' | 'development';
  /**
   * Hosts exempt from the address rules: `host` (any port) or `host:port`, e.g.
   * `['127.0.0.1:8787', 'receiver', '[::1]:9000']`. For local development and tests; in
   * production, prefer none.
   */
  allowHosts?: readonly string[];
  /**
   * How to resolve host names, so a name that points at a private address is refused too.
   * Required in production: pass `nodeHostResolver` on Node, or `false` where the platform
   * itself blocks private egress (Cloudflare Workers: fetch cannot reach private or loopback
   * ranges, and there is no resolver to call). A {@link ConnectingHostResolver} (as
   * `nodeHostResolver` is) is used by the connection too, which closes DNS rebinding; a plain
   * function is used by the check only.
   */
  resolveHost?: HostResolver | false;
}

/** Throws a delivery error if `url` may not be called; resolves when it may. */
export type DestinationCheck = (url: URL, signal: AbortSignal) => Promise<void>;

/**
 * Host names refused by name, before any lookup: they are internal by definition, whatever a
 * resolver says.
 */
const FORBIDDEN_NAMES: ReadonlyMap<string, string> = new Map([
  ['localhost', 'a loopback name'],
  ['metadata.google.internal', 'the cloud metadata service'],
  ['metadata.goog', 'the cloud metadata service'],
]);

/** Name suffixes that only mean something inside a private network. */
const FORBIDDEN_SUFFIXES: readonly [string, string][] = [
  ['.localhost', 'a loopback name (RFC 6761)'],
  ['.internal', 'a private-use name (.internal)'],
  ['.local', 'a multicast DNS name (.local)'],
  ['.home.arpa', 'a home-network name (.home.arpa)'],
];

/**
 * Builds the check `webhookSender` runs before each request. Throws `ConfigurationError` for a
 * malformed allow-list entry, or a production policy with no `resolveHost` decision.
 */
export function destinationCheck(options: DestinationPolicyOptions): DestinationCheck {
  const environment = options.environment ?? 'production';
  if (environment !== 'production' && environment !== 'development') {
    throw new ConfigurationError(
      `webhook sender: unknown environment ${JSON.stringify(environment)}`,
    );
  }
  if (environment === 'production' && options.resolveHost === undefined) {
    throw new ConfigurationError(
      'webhook sender: in production, set resolveHost: nodeHostResolver on Node, or resolveHost: false where the platform blocks private egress itself (Cloudflare Workers)',
    );
  }
  const allowed = (options.allowHosts ?? []).map(parseAllowedHost);
  const resolveHost = options.resolveHost || undefined;

  return async (url, signal) => {
    const refuse = (why: string) =>
      new PermanentDeliveryError(`webhook URL refused, no request made: ${why} (${url.origin})`, {
        destination: url.href,
      });
    if (url.protocol !== 'https:' && url.protocol !== 'http:') {
      throw refuse(`${url.protocol} is not http or https`);
    }
    if (url.protocol === 'http:' && environment === 'production') {
      throw refuse('plain http is allowed only in development; use https');
    }
    const host = bareHost(url.hostname);
    const port = url.port === '' ? (url.protocol === 'https:' ? 443 : 80) : Number(url.port);
    if (allowed.some((entry) => entry.host === host && (entry.port ?? port) === port)) return;

    if (isIpLiteral(host)) {
      const reason = forbiddenAddressReason(host);
      if (reason !== undefined) throw refuse(`${host} is ${reason}`);
      return;
    }
    const nameReason = forbiddenNameReason(host);
    if (nameReason !== undefined) throw refuse(`${host} is ${nameReason}`);
    if (resolveHost === undefined) return;

    let addresses: readonly string[];
    try {
      addresses = await untilAborted(resolveHost(host), signal);
    } catch (error) {
      if (signal.aborted) {
        throw new RetryableDeliveryError(`webhook: the send's time ran out resolving ${host}`, {
          cause: error,
        });
      }
      throw new RetryableDeliveryError(`webhook: could not resolve ${host}: ${String(error)}`, {
        cause: error,
      });
    }
    if (addresses.length === 0) {
      throw new RetryableDeliveryError(`webhook: ${host} resolved to no addresses`);
    }
    // Every address must be public: fetch may connect to any of them.
    for (const address of addresses) {
      const reason = forbiddenAddressReason(bareHost(address));
      if (reason !== undefined) throw refuse(`${host} resolves to ${address}, ${reason}`);
    }
  };
}

/**
 * The fetch the sender sends with, so the connection goes only to addresses the policy allows:
 * the connecting resolver's (Node: over `node:http` agents that check each address), or the
 * global `fetch` when `resolveHost` is a plain function, `false` or unset. Build once per sender:
 * on Node it holds a connection pool.
 *
 * At connect time the host's exemption is by name, whatever the port: `allowHosts` is the
 * operator's list, and the port was already held to it by {@link destinationCheck}.
 */
export function connectingFetch(options: DestinationPolicyOptions): CheckedFetch {
  const resolveHost = options.resolveHost;
  // Looked up at each call, not now: whatever `fetch` the runtime has when the send happens.
  if (!resolveHost || !isConnectingResolver(resolveHost)) return (url, init) => fetch(url, init);
  const exempt = new Set((options.allowHosts ?? []).map((entry) => parseAllowedHost(entry).host));
  return resolveHost.connectingFetch((host, address) => {
    if (exempt.has(bareHost(host))) return undefined;
    return forbiddenAddressReason(bareHost(address));
  });
}

function isConnectingResolver(resolver: HostResolver): resolver is ConnectingHostResolver {
  return typeof (resolver as Partial<ConnectingHostResolver>).connectingFetch === 'function';
}

function forbiddenNameReason(host: string): string | undefined {
  const exact = FORBIDDEN_NAMES.get(host);
  if (exact !== undefined) return exact;
  for (const [suffix, reason] of FORBIDDEN_SUFFIXES) {
    if (host.endsWith(suffix)) return reason;
  }
  if (!host.includes('.')) {
    return 'a single-label name, which resolves through local search domains';
  }
  return undefined;
}

/** `[::1]` -> `::1`; `example.com.` -> `example.com`; zone IDs (`%eth0`) dropped. */
function bareHost(hostname: string): string {
  let host = hostname.toLowerCase();
  if (host.startsWith('[') && host.endsWith(']')) host = host.slice(1, -1);
  const zone = host.indexOf('%');
  if (zone >= 0) host = host.slice(0, zone);
  return host.endsWith('.') ? host.slice(0, -1) : host;
}

function parseAllowedHost(entry: string): { host: string; port: number | undefined } {
  const match = /^(\[[^\]]+\]|[^:[\]]+)(?::(\d{1,5}))?$/.exec(entry.trim());
  let host: string | undefined;
  if (match) {
    try {
      // The URL parser normalises the host as it will for the webhook URL (case, IPv6 zeros).
      host = bareHost(new URL(`http://${match[1]}`).hostname);
    } catch {
      host = undefined;
    }
  }
  if (!match || host === undefined) {
    throw new ConfigurationError(
      `webhook sender: allowHosts entry ${JSON.stringify(entry)} is not host or host:port`,
    );
  }
  return { host, port: match[2] === undefined ? undefined : Number(match[2]) };
}

async function untilAborted<T>(promise: Promise<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) throw signal.reason;
  let onAbort: (() => void) | undefined;
  const aborted = new Promise<never>((_, reject) => {
    onAbort = () => reject(signal.reason);
    signal.addEventListener('abort', onAbort, { once: true });
  });
  try {
    return await Promise.race([promise, aborted]);
  } finally {
    signal.removeEventListener('abort', onAbort!);
  }
}
