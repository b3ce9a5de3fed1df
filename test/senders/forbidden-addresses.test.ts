/**
 * The address rules of the SSRF guard, range by range: each forbidden range is refused as a
 * literal in the URL and as what a resolver answers for an innocent-looking name, and public
 * addresses (including public IPv4 inside IPv6) still pass. No request is made by any of these:
 * the check runs before fetch, and the URLs point nowhere we listen.
 */
import { describe, expect, it } from 'vitest';
import { isPermanentDeliveryError } from '../../src/core/errors.js';
import { destinationCheck } from '../../src/senders/webhook/destination-policy.js';
import { forbiddenAddressReason } from '../../src/senders/webhook/index.js';
import { openSignal } from './outbound-message.js';

/** [address, a word the reason must contain]: one or more rows per range. */
const FORBIDDEN: readonly [string, string][] = [
  // IPv4, for the embedded forms below to lean on.
  ['127.0.0.1', 'loopback'],
  ['10.1.2.3', 'private'],
  ['169.254.169.254', 'metadata'],
  ['192.0.2.10', 'documentation'],
  ['198.51.100.7', 'documentation'],
  ['203.0.113.9', 'documentation'],
  ['192.88.99.1', '6to4 relay'],
  // IPv6 of its own.
  ['::1', 'loopback'],
  ['::', 'unspecified'],
  ['fc00::1', 'unique-local'],
  ['fdff:ffff::1', 'unique-local'],
  ['fe80::1', 'link-local'],
  ['febf:ffff::1', 'link-local'],
  ['fec0::1', 'site-local'],
  ['feff::1', 'site-local'],
  ['ff02::1', 'multicast'],
  ['ff0e::101', 'multicast'],
  ['2001:db8::1', 'documentation'],
  ['2001:db8:ffff::1', 'documentation'],
  ['3fff::1', 'documentation'],
  ['100::1', 'discard-only'],
  ['2001:2::1', 'benchmarking'],
  ['2001:1::1', 'IETF protocol'],
  ['fd00:ec2::254', 'metadata'],
  ['4000::1', 'global unicast'],
  ['5f00::1', 'global unicast'],
  ['::2:0:0:1', 'global unicast'],
  // IPv4-mapped ::ffff:0:0/96.
  ['::ffff:127.0.0.1', 'loopback'],
  ['::ffff:7f00:1', 'loopback'],
  ['::ffff:a9fe:a9fe', 'metadata'],
  ['::ffff:10.0.0.1', 'private'],
  // IPv4-translated ::ffff:0:0:0/96 (SIIT).
  ['::ffff:0:7f00:1', 'loopback'],
  ['::ffff:0:a9fe:a9fe', 'metadata'],
  ['::ffff:0:10.0.0.1', 'private'],
  // IPv4-compatible ::/96, deprecated: refused whether or not the IPv4 inside is public.
  ['::127.0.0.1', 'loopback'],
  ['::7f00:1', 'IPv4-compatible'],
  ['::5db8:d822', 'IPv4-compatible'],
  // NAT64 64:ff9b::/96 by the IPv4 inside; local-use 64:ff9b:1::/48 whole.
  ['64:ff9b::127.0.0.1', 'loopback'],
  ['64:ff9b::a9fe:a9fe', 'metadata'],
  ['64:ff9b::c0a8:1', 'private'],
  ['64:ff9b:1::5db8:d822', 'local-use NAT64'],
  ['64:ff9b:1:ffff::1', 'local-use NAT64'],
  // 6to4 2002::/16 by the IPv4 in bits 16-47.
  ['2002:7f00:1::1', 'loopback'],
  ['2002:a9fe:a9fe::1', 'metadata'],
  ['2002:a00:1::1', 'private'],
  // Teredo 2001::/32, whole: this one's obfuscated client is 192.0.2.45, its server public.
  ['2001:0:4136:e378:8000:63bf:3fff:fdd2', 'Teredo'],
  ['2001:0:5db8:d822::1', 'Teredo'],
  // Spellings: full, zero-padded, uppercase, zone ids, brackets.
  ['0:0:0:0:0:0:0:1', 'loopback'],
  ['0000:0000:0000:0000:0000:0000:0000:0001', 'loopback'],
  ['0:0:0:0:0:ffff:127.0.0.1', 'loopback'],
  ['0000:0000:0000:0000:0000:FFFF:7F00:0001', 'loopback'],
  ['::FFFF:0:A9FE:A9FE', 'metadata'],
  ['FE80::1', 'link-local'],
  ['fe80::1%eth0', 'link-local'],
  ['fe80::1%25', 'link-local'],
  ['FD00:EC2:0:0:0:0:0:254', 'metadata'],
  ['[::1]', 'loopback'],
  // Not addresses at all.
  ['1::2::3', 'not an IP address'],
  ['12345::1', 'not an IP address'],
  [':::1', 'not an IP address'],
  ['1:2:3:4:5:6:7:8:9', 'not an IP address'],
  ['1:2:3:4:5:6:7::8', 'not an IP address'],
  ['::ffff:1.2.3', 'not an IP address'],
  ['::ffff:1.2.3.256', 'not an IP address'],
  ['fe80::1%', 'not an IP address'],
  ['%eth0', 'not an IP address'],
  ['', 'not an IP address'],
];

const PUBLIC: readonly string[] = [
  '93.184.216.34',
  '8.8.8.8',
  '2606:4700::1111',
  '2606:4700:4700::1111',
  '2a00:1450:4001:82b::200e',
  '2606:4700:4700:0000:0000:0000:0000:1111',
  '::ffff:93.184.216.34',
  '::ffff:0:5db8:d822',
  '64:ff9b::93.184.216.34',
  '2002:5db8:d822::1',
  '2001:4860:4860::8888',
  '3fff:1000::1', // just past the 3fff::/20 documentation block
];

/** Whether the URL parser takes the address as a host literal (it refuses zone ids). */
function urlHost(address: string): string | undefined {
  const host = address.includes(':') && !address.startsWith('[') ? `[${address}]` : address;
  try {
    return new URL(`https://${host}/hook`).host;
  } catch {
    return undefined;
  }
}

async function refusal(check: ReturnType<typeof destinationCheck>, url: string) {
  try {
    await check(new URL(url), openSignal());
  } catch (error) {
    return error;
  }
  throw new Error(`expected ${url} to be refused`);
}

describe('forbiddenAddressReason', () => {
  it.each(FORBIDDEN)('refuses %s (%s)', (address, reason) => {
    expect(forbiddenAddressReason(address)).toContain(reason);
  });

  it.each(PUBLIC)('allows the public address %s', (address) => {
    expect(forbiddenAddressReason(address)).toBeUndefined();
  });
});

describe('the production destination check', () => {
  const addresses = FORBIDDEN.filter(([, reason]) => reason !== 'not an IP address');

  it.each(addresses)('refuses %s as a literal in the URL (%s)', async (address, reason) => {
    const host = urlHost(address);
    if (host === undefined) return; // zone ids cannot be written in a URL; the resolver case covers them
    const check = destinationCheck({ resolveHost: async () => ['93.184.216.34'] });
    const error = await refusal(check, `https://${host}/hook`);
    expect(isPermanentDeliveryError(error)).toBe(true);
    expect((error as Error).message).toContain(reason);
    expect((error as Error).message).toContain('no request made');
  });

  it.each(addresses)('refuses a name that resolves to %s (%s)', async (address, reason) => {
    const check = destinationCheck({ resolveHost: async () => ['93.184.216.34', address] });
    const error = await refusal(check, 'https://hooks.example.com/hook');
    expect(isPermanentDeliveryError(error)).toBe(true);
    expect((error as Error).message).toContain(`resolves to ${address}`);
    expect((error as Error).message).toContain(reason);
  });

  it('writes most of the table as URL literals, so the literal path is really exercised', () => {
    const literal = addresses.filter(([address]) => urlHost(address) !== undefined);
    expect(literal.length).toBeGreaterThan(addresses.length - 3);
  });

  it.each(PUBLIC)('lets %s through, as a literal and by resolution', async (address) => {
    const check = destinationCheck({ resolveHost: async () => [address] });
    await expect(
      check(new URL(`https://${urlHost(address)}/hook`), openSignal()),
    ).resolves.toBeUndefined();
    await expect(
      check(new URL('https://hooks.example.com/hook'), openSignal()),
    ).resolves.toBeUndefined();
  });
});
