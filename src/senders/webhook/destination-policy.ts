/**
 * Which webhook URLs the sender may call: the SSRF guard. A webhook URL is user input that our
 * servers fetch, so without this a customer could point "their endpoint" at the cloud metadata
 * service, the database's private address or an admin port on loopback.
 *
 * Checked before any connection is made: the scheme, the host's literal address or name, and
 * (where the runtime can resolve names) every address the name resolves to. The limit: fetch
 * resolves the name again when it connects, so a name that answers differently the second time
 * (DNS rebinding) can still reach a private address. Closing that needs connecting to the
 * checked address itself, which fetch cannot do; deploy behind an egress firewall for that.
 */
import {
  ConfigurationError,
  PermanentDeliveryError,
  RetryableDeliveryError,
} from '../../core/errors.js';

/**
 * Resolves a host name to every address it has (IPv4 and IPv6), as text. On Node use
 * `nodeHostResolver` (`node:dns/promises` lookup with `all: true`); Workers have no resolver.
 */
export type HostResolver = (hostname: string) => Promise<readonly string[]>;

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
   * ranges, and there is no resolver to call).
   */
  resolveHost?: HostResolver | false;
}

/** Throws a delivery error if `url` may not be called; resolves when it may. */
export type DestinationCheck = (url: URL, signal: AbortSignal) => Promise<void>;

interface Ipv4Range {
  base: number;
  prefix: number;
  reason: string;
}

/**
 * IPv4 ranges never called. More specific entries come first so the reason names them (the
 * metadata address before link-local).
 */
const FORBIDDEN_IPV4: readonly Ipv4Range[] = [
  { base: ipv4(169, 254, 169, 254), prefix: 32, reason: 'the cloud metadata service' },
  { base: ipv4(0, 0, 0, 0), prefix: 8, reason: 'an unspecified ("this network") address' },
  { base: ipv4(10, 0, 0, 0), prefix: 8, reason: 'a private address (10.0.0.0/8)' },
  { base: ipv4(100, 64, 0, 0), prefix: 10, reason: 'a carrier-grade NAT address (100.64.0.0/10)' },
  { base: ipv4(127, 0, 0, 0), prefix: 8, reason: 'a loopback address' },
  { base: ipv4(169, 254, 0, 0), prefix: 16, reason: 'a link-local address (169.254.0.0/16)' },
  { base: ipv4(172, 16, 0, 0), prefix: 12, reason: 'a private address (172.16.0.0/12)' },
  { base: ipv4(192, 0, 0, 0), prefix: 24, reason: 'an IETF protocol address (192.0.0.0/24)' },
  { base: ipv4(192, 168, 0, 0), prefix: 16, reason: 'a private address (192.168.0.0/16)' },
  { base: ipv4(198, 18, 0, 0), prefix: 15, reason: 'a benchmarking address (198.18.0.0/15)' },
  { base: ipv4(224, 0, 0, 0), prefix: 4, reason: 'a multicast address' },
  { base: ipv4(240, 0, 0, 0), prefix: 4, reason: 'a reserved or broadcast address' },
];

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
 * Why `address` (an IPv4 or IPv6 address as text) must not be called, or `undefined` when it is
 * a public address. IPv4-mapped, IPv4-compatible, NAT64 and 6to4 IPv6 addresses are judged by
 * the IPv4 address inside them.
 *
 * @example
 * forbiddenAddressReason('::ffff:127.0.0.1'); // 'a loopback address'
 * forbiddenAddressReason('93.184.215.14'); // undefined
 */
export function forbiddenAddressReason(address: string): string | undefined {
  const v4 = parseIpv4(address);
  if (v4 !== undefined) return forbiddenIpv4Reason(v4);
  const v6 = parseIpv6(address);
  if (v6 === undefined) return 'not an IP address';
  return forbiddenIpv6Reason(v6);
}

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
      new PermanentDeliveryError(`webhook URL refused, no request made: ${why} (${url.origin})`);
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

function isIpLiteral(host: string): boolean {
  return parseIpv4(host) !== undefined || parseIpv6(host) !== undefined;
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

function ipv4(a: number, b: number, c: number, d: number): number {
  return ((a << 24) | (b << 16) | (c << 8) | d) >>> 0;
}

/** Strict dotted-decimal IPv4, as the URL parser and resolvers print it. */
function parseIpv4(text: string): number | undefined {
  const parts = text.split('.');
  if (parts.length !== 4) return undefined;
  const octets: number[] = [];
  for (const part of parts) {
    if (!/^\d{1,3}$/.test(part)) return undefined;
    const octet = Number(part);
    if (octet > 255) return undefined;
    octets.push(octet);
  }
  const [a, b, c, d] = octets as [number, number, number, number];
  return ipv4(a, b, c, d);
}

function forbiddenIpv4Reason(address: number): string | undefined {
  for (const range of FORBIDDEN_IPV4) {
    const mask = range.prefix === 0 ? 0 : (~0 << (32 - range.prefix)) >>> 0;
    if ((address & mask) >>> 0 === range.base) return range.reason;
  }
  return undefined;
}

/** Eight 16-bit groups, or undefined. Accepts `::` compression and a dotted IPv4 tail. */
function parseIpv6(text: string): number[] | undefined {
  if (!text.includes(':')) return undefined;
  let head = text;
  const tail: number[] = [];
  const lastColon = text.lastIndexOf(':');
  if (text.slice(lastColon + 1).includes('.')) {
    const v4 = parseIpv4(text.slice(lastColon + 1));
    if (v4 === undefined) return undefined;
    tail.push(v4 >>> 16, v4 & 0xffff);
    head = text.slice(0, lastColon + 1);
    // `::1.2.3.4` leaves `::`; `64:ff9b::1.2.3.4` leaves `64:ff9b::`; `1:2:3:4:5:6:1.2.3.4`
    // leaves a dangling colon to drop.
    if (!head.endsWith('::')) head = head.slice(0, -1);
  }
  const halves = head.split('::');
  if (halves.length > 2) return undefined;
  const groups = (half: string) => (half === '' ? [] : half.split(':'));
  const parseGroups = (parts: string[]) =>
    parts.map((part) => (/^[0-9a-f]{1,4}$/i.test(part) ? Number.parseInt(part, 16) : Number.NaN));
  const left = parseGroups(groups(halves[0]!));
  const right = halves.length === 2 ? parseGroups(groups(halves[1]!)) : [];
  if ([...left, ...right].some(Number.isNaN)) return undefined;
  const given = left.length + right.length + tail.length;
  if (halves.length === 2) {
    if (given > 7) return undefined;
    return [...left, ...new Array<number>(8 - given).fill(0), ...right, ...tail];
  }
  return given === 8 ? [...left, ...tail] : undefined;
}

function forbiddenIpv6Reason(groups: readonly number[]): string | undefined {
  const [g0, g1, g2, g3, g4, g5, g6, g7] = groups as [
    number,
    number,
    number,
    number,
    number,
    number,
    number,
    number,
  ];
  const embeddedV4 = ((g6 << 16) | g7) >>> 0;
  const firstSixZero = g0 === 0 && g1 === 0 && g2 === 0 && g3 === 0 && g4 === 0 && g5 === 0;
  if (firstSixZero && g6 === 0 && g7 === 0) return 'an unspecified address';
  if (firstSixZero && g6 === 0 && g7 === 1) return 'a loopback address';
  if (g0 === 0 && g1 === 0 && g2 === 0 && g3 === 0 && g4 === 0 && g5 === 0xffff) {
    const reason = forbiddenIpv4Reason(embeddedV4);
    return reason === undefined ? undefined : `an IPv4-mapped address: ${reason}`;
  }
  if (firstSixZero) {
    return `a deprecated IPv4-compatible address${withIpv4Reason(embeddedV4)}`;
  }
  if (g0 === 0x64 && g1 === 0xff9b && g2 === 0 && g3 === 0 && g4 === 0 && g5 === 0) {
    const reason = forbiddenIpv4Reason(embeddedV4);
    return reason === undefined ? undefined : `a NAT64 address: ${reason}`;
  }
  if (g0 === 0x64 && g1 === 0xff9b && g2 === 1) return 'a local-use NAT64 address (64:ff9b:1::/48)';
  if (g0 === 0x2002) {
    const reason = forbiddenIpv4Reason(((g1 << 16) | g2) >>> 0);
    return reason === undefined ? undefined : `a 6to4 address: ${reason}`;
  }
  if (
    g0 === 0xfd00 &&
    g1 === 0x0ec2 &&
    g2 === 0 &&
    g3 === 0 &&
    g4 === 0 &&
    g5 === 0 &&
    g6 === 0 &&
    g7 === 0x254
  ) {
    return 'the cloud metadata service';
  }
  if ((g0 & 0xfe00) === 0xfc00) return 'a unique-local address (fc00::/7)';
  if ((g0 & 0xffc0) === 0xfe80) return 'a link-local address (fe80::/10)';
  if ((g0 & 0xffc0) === 0xfec0) return 'a site-local address (fec0::/10)';
  if ((g0 & 0xff00) === 0xff00) return 'a multicast address';
  if (g0 === 0x0100 && g1 === 0 && g2 === 0 && g3 === 0) return 'a discard-only address (100::/64)';
  return undefined;
}

function withIpv4Reason(v4: number): string {
  const reason = forbiddenIpv4Reason(v4);
  return reason === undefined ? '' : ` (${reason})`;
}
