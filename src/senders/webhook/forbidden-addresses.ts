/**
 * The address half of the SSRF rules: which IPv4 and IPv6 addresses a webhook may never reach.
 * Addresses are compared as numbers (see ./ip-address.ts), one table per family, first match
 * decides; more specific entries come first so the reason names them.
 */
import { ipv4, parseIpv4, parseIpv6 } from './ip-address.js';

interface Ipv4Range {
  base: number;
  prefix: number;
  reason: string;
}

/** IPv4 ranges never called (the IANA special-purpose registry's non-global entries). */
const FORBIDDEN_IPV4: readonly Ipv4Range[] = [
  { base: ipv4(169, 254, 169, 254), prefix: 32, reason: 'the cloud metadata service' },
  { base: ipv4(0, 0, 0, 0), prefix: 8, reason: 'an unspecified ("this network") address' },
  { base: ipv4(10, 0, 0, 0), prefix: 8, reason: 'a private address (10.0.0.0/8)' },
  { base: ipv4(100, 64, 0, 0), prefix: 10, reason: 'a carrier-grade NAT address (100.64.0.0/10)' },
  { base: ipv4(127, 0, 0, 0), prefix: 8, reason: 'a loopback address' },
  { base: ipv4(169, 254, 0, 0), prefix: 16, reason: 'a link-local address (169.254.0.0/16)' },
  { base: ipv4(172, 16, 0, 0), prefix: 12, reason: 'a private address (172.16.0.0/12)' },
  { base: ipv4(192, 0, 0, 0), prefix: 24, reason: 'an IETF protocol address (192.0.0.0/24)' },
  { base: ipv4(192, 0, 2, 0), prefix: 24, reason: 'a documentation address (192.0.2.0/24)' },
  { base: ipv4(192, 88, 99, 0), prefix: 24, reason: 'a retired 6to4 relay address' },
  { base: ipv4(192, 168, 0, 0), prefix: 16, reason: 'a private address (192.168.0.0/16)' },
  { base: ipv4(198, 18, 0, 0), prefix: 15, reason: 'a benchmarking address (198.18.0.0/15)' },
  { base: ipv4(198, 51, 100, 0), prefix: 24, reason: 'a documentation address (198.51.100.0/24)' },
  { base: ipv4(203, 0, 113, 0), prefix: 24, reason: 'a documentation address (203.0.113.0/24)' },
  { base: ipv4(224, 0, 0, 0), prefix: 4, reason: 'a multicast address' },
  { base: ipv4(240, 0, 0, 0), prefix: 4, reason: 'a reserved or broadcast address' },
];

interface Ipv6Range {
  base: bigint;
  prefix: number;
  reason: string;
  /**
   * For ranges that carry an IPv4 address: where it sits. Such a range is judged by the IPv4
   * rules on that address (a public one passes), unless `refuseAll` is set.
   */
  embeddedIpv4?: (address: bigint) => number;
  /** Refuse the whole range even when the embedded IPv4 address is public. */
  refuseAll?: boolean;
}

const lowest32 = (address: bigint) => Number(address & 0xffff_ffffn);

/**
 * IPv6 ranges never called. Anything outside `2000::/3`, the only block IANA allocates for
 * global unicast, is refused after this table (see {@link forbiddenAddressReason}); the entries
 * below that fall outside it are listed for their more precise reason, or because they embed an
 * IPv4 address that decides.
 */
const FORBIDDEN_IPV6: readonly Ipv6Range[] = [
  v6('::', 128, 'an unspecified address'),
  v6('::1', 128, 'a loopback address'),
  // How dual-stack sockets and SIIT translators spell an IPv4 address: reaching one reaches the
  // IPv4 address, so the IPv4 rules decide.
  v6('::ffff:0:0', 96, 'an IPv4-mapped address', { embeddedIpv4: lowest32 }),
  v6('::ffff:0:0:0', 96, 'an IPv4-translated address', { embeddedIpv4: lowest32 }),
  // Deprecated by RFC 4291; no host has one, and some stacks still route it as IPv4.
  v6('::', 96, 'a deprecated IPv4-compatible address', {
    embeddedIpv4: lowest32,
    refuseAll: true,
  }),
  // NAT64 (RFC 6052): the translator connects to the embedded IPv4 address.
  v6('64:ff9b::', 96, 'a NAT64 address', { embeddedIpv4: lowest32 }),
  // Local-use NAT64 (RFC 8215) maps addresses by a site's own rules, which we cannot judge.
  v6('64:ff9b:1::', 48, 'a local-use NAT64 address (64:ff9b:1::/48)'),
  v6('100::', 64, 'a discard-only address (100::/64)'),
  // Teredo (RFC 4380) hides the client's IPv4 address XOR-ed in the last 32 bits and names a
  // server in bits 32-63; the service is retired (no public relays, off in Windows since 2018),
  // so no webhook endpoint lives here. Refused whole rather than trusting a decoding.
  v6('2001::', 32, 'a Teredo tunnel address (2001::/32)'),
  v6('2001:2::', 48, 'a benchmarking address (2001:2::/48)'),
  v6('2001::', 23, 'an IETF protocol address (2001::/23)'),
  v6('2001:db8::', 32, 'a documentation address (2001:db8::/32)'),
  // 6to4 (RFC 3056): the relay delivers to the IPv4 address in bits 16-47.
  v6('2002::', 16, 'a 6to4 address', {
    embeddedIpv4: (address) => Number((address >> 80n) & 0xffff_ffffn),
  }),
  v6('3fff::', 20, 'a documentation address (3fff::/20)'),
  v6('fd00:ec2::254', 128, 'the cloud metadata service'),
  v6('fc00::', 7, 'a unique-local address (fc00::/7)'),
  v6('fe80::', 10, 'a link-local address (fe80::/10)'),
  v6('fec0::', 10, 'a site-local address (fec0::/10)'),
  v6('ff00::', 8, 'a multicast address'),
];

const GLOBAL_UNICAST = v6('2000::', 3, '');

/**
 * Why `address` (an IPv4 or IPv6 address as text) must not be called, or `undefined` when it is
 * a public address. IPv6 addresses that carry an IPv4 address (IPv4-mapped, IPv4-translated,
 * NAT64, 6to4) are judged by the IPv4 address inside them; IPv4-compatible and Teredo addresses
 * are refused whole. Accepts a zone id (`fe80::1%eth0`) and brackets (`[::1]`).
 *
 * @example
 * forbiddenAddressReason('::ffff:127.0.0.1'); // 'an IPv4-mapped address: a loopback address'
 * forbiddenAddressReason('93.184.215.14'); // undefined
 */
export function forbiddenAddressReason(address: string): string | undefined {
  const text = address.startsWith('[') && address.endsWith(']') ? address.slice(1, -1) : address;
  const v4 = parseIpv4(text);
  if (v4 !== undefined) return forbiddenIpv4Reason(v4);
  const v6address = parseIpv6(text);
  if (v6address === undefined) return 'not an IP address';
  return forbiddenIpv6Reason(v6address);
}

/** Whether `text` is an IPv4 or IPv6 literal (no brackets). */
export function isIpLiteral(text: string): boolean {
  return parseIpv4(text) !== undefined || parseIpv6(text) !== undefined;
}

function forbiddenIpv4Reason(address: number): string | undefined {
  for (const range of FORBIDDEN_IPV4) {
    const mask = range.prefix === 0 ? 0 : (~0 << (32 - range.prefix)) >>> 0;
    if ((address & mask) >>> 0 === range.base) return range.reason;
  }
  return undefined;
}

function forbiddenIpv6Reason(address: bigint): string | undefined {
  for (const range of FORBIDDEN_IPV6) {
    if (!inIpv6Range(address, range)) continue;
    if (range.embeddedIpv4 === undefined) return range.reason;
    const inner = forbiddenIpv4Reason(range.embeddedIpv4(address));
    if (inner !== undefined) return `${range.reason}: ${inner}`;
    return range.refuseAll ? range.reason : undefined;
  }
  if (!inIpv6Range(address, GLOBAL_UNICAST)) {
    return 'not a global unicast address (outside 2000::/3)';
  }
  return undefined;
}

function inIpv6Range(address: bigint, range: Ipv6Range): boolean {
  const shift = BigInt(128 - range.prefix);
  return address >> shift === range.base >> shift;
}

function v6(
  text: string,
  prefix: number,
  reason: string,
  options: Pick<Ipv6Range, 'embeddedIpv4' | 'refuseAll'> = {},
): Ipv6Range {
  const base = parseIpv6(text);
  if (base === undefined) throw new Error(`bad IPv6 range ${text}`);
  return { base, prefix, reason, ...options };
}
