/**
 * The Node resolver for the webhook SSRF guard. Node only: it imports `node:dns/promises` and
 * `node:http`, so it lives apart from the sender, which runs on Workers too.
 */
import { lookup } from 'node:dns/promises';
import type { ConnectCheck, ConnectingHostResolver, HostResolver } from './destination-policy.js';
import { checkedFetch } from './node-checked-fetch.js';

/**
 * `resolveHost` as a resolver the webhook sender connects through too (see
 * {@link ConnectingHostResolver}): the check and the connection both ask it, and the connection
 * goes only to addresses that pass. `nodeHostResolver` is this over the system resolver.
 */
export function connectingHostResolver(resolveHost: HostResolver): ConnectingHostResolver {
  return Object.assign((hostname: string) => resolveHost(hostname), {
    connectingFetch: (check: ConnectCheck) => checkedFetch(resolveHost, check),
  });
}

/**
 * Every address `hostname` resolves to, through the system resolver (`getaddrinfo`, so
 * /etc/hosts counts). `all: true` because a connection may go to any of them, so each must pass.
 *
 * The webhook sender connects through it as well (`node:http` agents whose lookup is this
 * resolver), so the connection goes only to an address that passed the check, even if the name
 * answers differently the second time (DNS rebinding). Those connections bypass fetch's global
 * dispatcher: behind an egress proxy set with undici's `setGlobalDispatcher`, pass
 * `(host) => nodeHostResolver(host)` instead, a plain function the sender checks with only.
 *
 * @example
 * webhookSender({ secret: env.WEBHOOK_SECRET, resolveHost: nodeHostResolver });
 */
export const nodeHostResolver: ConnectingHostResolver = connectingHostResolver(async (hostname) => {
  const answers = await lookup(hostname, { all: true, verbatim: true });
  return answers.map((answer) => answer.address);
});
