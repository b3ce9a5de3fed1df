/**
 * The Node resolver for the webhook SSRF guard. Node only: it imports `node:dns/promises`, so
 * it lives apart from the sender, which runs on Workers too.
 */
import { lookup } from 'node:dns/promises';
import type { HostResolver } from './destination-policy.js';

/**
 * Every address `hostname` resolves to, through the system resolver (`getaddrinfo`, so
 * /etc/hosts counts, as it will for fetch). `all: true` because fetch may connect to any of
 * them, so each must pass.
 *
 * @example
 * webhookSender({ secret: env.WEBHOOK_SECRET, resolveHost: nodeHostResolver });
 */
export const nodeHostResolver: HostResolver = async (hostname) => {
  const answers = await lookup(hostname, { all: true, verbatim: true });
  return answers.map((answer) => answer.address);
};
