/**
 * The webhook sender's connection on Node: an undici Agent whose DNS lookup is the same resolver
 * the destination check used, checking every address it returns before connecting. So a name
 * that resolves to a public address for the check and to loopback for the connect (DNS
 * rebinding) is refused without a connection, instead of reaching the loopback receiver.
 *
 * Node only (undici, `node:net`): loaded through ./node-host-resolver.ts, never by the sender,
 * which runs on Workers too. Node 20's global fetch takes a `dispatcher` from the `undici`
 * package of the same major version as its own (6.x); the package is pinned to one.
 */
import { isIP, type LookupFunction } from 'node:net';
import { Agent } from 'undici';
import { PermanentDeliveryError } from '../../core/errors.js';
import type { ConnectCheck, HostResolver } from './destination-policy.js';

/**
 * An undici Agent for fetch's `dispatcher`: each new connection resolves its host with
 * `resolveHost` and connects only if `check` allows every address (as the destination check
 * requires of them all, since a connection may take any); otherwise it fails with a
 * `PermanentDeliveryError` naming the address, before any byte is sent. Pooled connections are
 * reused as usual: each was made to an address that passed.
 */
export function checkedConnectDispatcher(resolveHost: HostResolver, check: ConnectCheck): Agent {
  const lookup: LookupFunction = (hostname, options, callback) => {
    resolveHost(hostname).then(
      (addresses) => {
        for (const address of addresses) {
          const reason = check(hostname, address);
          if (reason !== undefined) {
            callback(
              new PermanentDeliveryError(
                `webhook connection refused, no request made: ${hostname} resolved to ${address} as the connection was made, ${reason} (it passed the check just before: DNS rebinding?)`,
              ),
              '',
            );
            return;
          }
        }
        const family = options.family === 4 || options.family === 6 ? options.family : 0;
        const usable = addresses
          .map((address) => ({ address, family: isIP(address) }))
          .filter((entry) => entry.family !== 0 && (family === 0 || entry.family === family));
        if (usable.length === 0) {
          const error = Object.assign(new Error(`${hostname} resolved to no usable address`), {
            code: 'ENOTFOUND',
          });
          callback(error, '');
          return;
        }
        if (options.all) callback(null, usable);
        else callback(null, usable[0]!.address, usable[0]!.family);
      },
      (error: unknown) => callback(error as NodeJS.ErrnoException, ''),
    );
  };
  return new Agent({ connect: { lookup } });
}
