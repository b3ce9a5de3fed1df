/**
 * Where the local Neon stand-in may connect: loopback or the configured Postgres host only,
 * so a test that builds a wrong connection string can never make it reach another machine.
 */
import { BlockList, isIP } from 'node:net';
import { stripBrackets } from '../neon-local-config.js';

/** Port assumed when a connection string names no port, as libpq and the driver assume. */
export const DEFAULT_POSTGRES_PORT = 5432;

export interface PostgresAddress {
  host: string;
  port: number;
}

const loopbackAddresses = new BlockList();
loopbackAddresses.addSubnet('127.0.0.0', 8, 'ipv4');
loopbackAddresses.addAddress('::1', 'ipv6');

export function validatePostgresAddress(address: PostgresAddress): PostgresAddress {
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

/** True for loopback addresses, `localhost` and the configured Postgres host. */
export function isAllowedTarget(host: string, postgres: PostgresAddress): boolean {
  const bare = stripBrackets(host).toLowerCase();
  if (bare === postgres.host.toLowerCase() || bare === 'localhost') return true;
  const family = isIP(bare);
  if (family === 0) return false;
  // BlockList also matches IPv4-mapped IPv6 (::ffff:127.0.0.1) against the IPv4 subnet.
  return loopbackAddresses.check(bare, family === 6 ? 'ipv6' : 'ipv4');
}

export type WebSocketTarget =
  | { allowed: true; address: PostgresAddress }
  | { allowed: false; status: number; reason: string };

/**
 * Reads the `address` query parameter the driver's `wsProxy` produces: `host:port`,
 * `[ipv6]:port`, or a bare IPv6 address whose last `:` separates the port.
 */
export function resolveWebSocketTarget(
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

export function isValidPort(port: unknown): port is number {
  return typeof port === 'number' && Number.isInteger(port) && port >= 1 && port <= 65_535;
}
