/**
 * Parsing IP addresses as the SSRF rules need them: to numbers, so ranges are compared by bits,
 * never by a prefix of the text (which `::ffff:7f00:1`, `0:0::1` or `FE80::1` would slip past).
 */

/** An IPv4 address as an unsigned 32-bit number. */
export function ipv4(a: number, b: number, c: number, d: number): number {
  return ((a << 24) | (b << 16) | (c << 8) | d) >>> 0;
}

/**
 * Strict dotted-decimal IPv4 (`10.0.0.1`), as the URL parser and resolvers print it, or
 * `undefined`. The URL parser has already turned `0x7f.1` or `2130706433` into this form.
 */
export function parseIpv4(text: string): number | undefined {
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

const HEXTET = /^[0-9a-f]{1,4}$/i;

/**
 * An IPv6 address as a 128-bit number, or `undefined`. Accepts what RFC 4291 section 2.2
 * allows: eight hextets of one to four hex digits in either case (`0db8`, `DB8`), one `::`
 * standing for one or more zero hextets, and a dotted IPv4 tail in place of the last two
 * (`::ffff:10.0.0.1`). A zone id (`fe80::1%eth0`) is dropped: it picks an interface, not an
 * address. Brackets are not part of an address; strip them first.
 *
 * @example
 * parseIpv6('::ffff:127.0.0.1') === parseIpv6('0:0:0:0:0:FFFF:7F00:0001'); // true
 */
export function parseIpv6(text: string): bigint | undefined {
  const zone = text.indexOf('%');
  const address = zone >= 0 ? text.slice(0, zone) : text;
  if (zone === 0 || zone === text.length - 1) return undefined;
  if (!address.includes(':')) return undefined;

  let head = address;
  const tail: number[] = [];
  const lastColon = address.lastIndexOf(':');
  if (address.slice(lastColon + 1).includes('.')) {
    const v4 = parseIpv4(address.slice(lastColon + 1));
    if (v4 === undefined) return undefined;
    tail.push(v4 >>> 16, v4 & 0xffff);
    // `::1.2.3.4` leaves `::`, which keeps its compression; `1:2:3:4:5:6:1.2.3.4` leaves a
    // dangling separator to drop.
    head = address.slice(0, lastColon + 1);
    if (!head.endsWith('::')) head = head.slice(0, -1);
  }

  const halves = head.split('::');
  if (halves.length > 2) return undefined;
  const left = hextets(halves[0]!);
  const right = halves.length === 2 ? hextets(halves[1]!) : [];
  if (left === undefined || right === undefined) return undefined;
  const given = left.length + right.length + tail.length;
  let groups: number[];
  if (halves.length === 2) {
    if (given > 7) return undefined; // `::` stands for at least one zero hextet
    groups = [...left, ...new Array<number>(8 - given).fill(0), ...right, ...tail];
  } else {
    if (given !== 8) return undefined;
    groups = [...left, ...tail];
  }
  return groups.reduce((value, group) => (value << 16n) | BigInt(group), 0n);
}

function hextets(text: string): number[] | undefined {
  if (text === '') return [];
  const groups: number[] = [];
  for (const part of text.split(':')) {
    if (!HEXTET.test(part)) return undefined;
    groups.push(Number.parseInt(part, 16));
  }
  return groups;
}
