/**
 * Where a request came from, for throttling failed logins. Only sources the client cannot forge
 * are read by default; headers a proxy appends are trusted only when the user says so.
 */
import type { Context } from 'hono';

/** Reads the client's address from a request; undefined when it cannot be known. */
export type ClientAddress = (c: Context) => string | undefined;

/**
 * The default: the TCP peer on Node (`@hono/node-server` passes the socket in `c.env`), the
 * source IP API Gateway reports on Lambda (`hono/aws-lambda`'s `c.env.requestContext`), and on
 * Cloudflare Workers `cf-connecting-ip`, which Cloudflare's edge sets and overwrites. Nothing
 * else: behind your own proxy every request would share the proxy's address, so pass
 * {@link clientAddressFromHeader} for the header your proxy sets.
 */
export const defaultClientAddress: ClientAddress = (c) => {
  const env = c.env as
    | {
        incoming?: { socket?: { remoteAddress?: unknown } };
        server?: { incoming?: { socket?: { remoteAddress?: unknown } } };
        requestContext?: { identity?: { sourceIp?: unknown }; http?: { sourceIp?: unknown } };
      }
    | undefined;
  const socketAddress =
    env?.incoming?.socket?.remoteAddress ?? env?.server?.incoming?.socket?.remoteAddress;
  if (typeof socketAddress === 'string') return socketAddress;
  const sourceIp = env?.requestContext?.identity?.sourceIp ?? env?.requestContext?.http?.sourceIp;
  if (typeof sourceIp === 'string') return sourceIp;
  if (globalThis.navigator?.userAgent === 'Cloudflare-Workers') {
    return c.req.header('cf-connecting-ip');
  }
  return undefined;
};

/**
 * Reads the address from a header your own proxy sets, e.g. `x-forwarded-for` or
 * `x-real-ip`. For a list, the last entry: the one your proxy appended, which the client did not
 * write. Use it only behind a proxy that always sets the header.
 */
export function clientAddressFromHeader(name: string): ClientAddress {
  return (c) => {
    const value = c.req.header(name);
    const last = value?.split(',').at(-1)?.trim();
    return last ? last : undefined;
  };
}
