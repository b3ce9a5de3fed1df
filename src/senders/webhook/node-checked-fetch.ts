/**
 * The webhook sender's connection on Node: a fetch over `node:http` and `node:https` agents
 * whose DNS lookup is the same resolver the destination check used, checking every address it
 * returns before connecting. So a name that resolves to a public address for the check and to
 * loopback for the connect (DNS rebinding) is refused without a connection, instead of reaching
 * the loopback receiver.
 *
 * Node's own http modules, not the undici package: undici is CommonJS, whose `require` of Node
 * built-ins cannot run in a plain ES module bundle (`esbuild --format=esm`, what a Lambda gets
 * without a `require` shim), and fetch's `dispatcher` option ties the package to the undici
 * major version the running Node carries. Node only: loaded through ./node-host-resolver.ts,
 * never by the sender, which runs on Workers too.
 */
import { Agent as HttpAgent, request as httpRequest, type IncomingMessage } from 'node:http';
import { Agent as HttpsAgent, request as httpsRequest } from 'node:https';
import { isIP, type LookupFunction } from 'node:net';
import { Readable } from 'node:stream';
import { PermanentDeliveryError } from '../../core/errors.js';
import type { CheckedFetch, ConnectCheck, HostResolver } from './destination-policy.js';

/** Statuses whose response has no body (the Fetch standard's "null body status"). */
const NULL_BODY_STATUSES: ReadonlySet<number> = new Set([101, 103, 204, 205, 304]);

/**
 * A fetch for the webhook sender: each new connection resolves its host with `resolveHost` and
 * connects only if `check` allows every address (as the destination check requires of them all,
 * since a connection may take any); otherwise the fetch rejects, before any byte is sent, with
 * a `TypeError` whose `cause` is a `PermanentDeliveryError` naming the address (as fetch reports
 * any connection failure). Connections are kept alive and reused, as fetch's own pool does:
 * each was made to an address that passed. Redirects are never followed (the sender reports
 * them), and `signal` aborts the request and its body.
 */
export function checkedFetch(resolveHost: HostResolver, check: ConnectCheck): CheckedFetch {
  const lookup = checkedLookup(resolveHost, check);
  const agents = {
    http: new HttpAgent({ keepAlive: true, lookup }),
    https: new HttpsAgent({ keepAlive: true, lookup }),
  };
  return (url, init) =>
    new Promise<Response>((resolve, reject) => {
      const secure = url.protocol === 'https:';
      const body = typeof init.body === 'string' ? init.body : '';
      const headers = Object.fromEntries(new Headers(init.headers));
      const send = secure ? httpsRequest : httpRequest;
      const request = send(
        url,
        {
          method: init.method ?? 'GET',
          headers: { ...headers, 'content-length': String(Buffer.byteLength(body)) },
          agent: secure ? agents.https : agents.http,
          signal: init.signal ?? undefined,
        },
        (message) => {
          try {
            resolve(asResponse(message));
          } catch (error) {
            // A status or header the Fetch API cannot represent: a broken answer, not a verdict.
            message.destroy();
            reject(new TypeError('fetch failed', { cause: error }));
          }
        },
      );
      request.once('error', (error) => reject(new TypeError('fetch failed', { cause: error })));
      request.end(body);
    });
}

function asResponse(message: IncomingMessage): Response {
  const status = message.statusCode ?? 0;
  const headers = new Headers();
  const raw = message.rawHeaders;
  for (let index = 0; index + 1 < raw.length; index += 2) {
    headers.append(raw[index]!, raw[index + 1]!);
  }
  if (NULL_BODY_STATUSES.has(status)) {
    message.resume();
    return new Response(null, { status, headers });
  }
  const stream = Readable.toWeb(message) as unknown as ReadableStream<Uint8Array>;
  return new Response(stream, { status, headers });
}

/** A `lookup` for the agents: `resolveHost`, every address held to `check`. */
function checkedLookup(resolveHost: HostResolver, check: ConnectCheck): LookupFunction {
  return (hostname, options, callback) => {
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
}
