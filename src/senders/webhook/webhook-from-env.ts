/**
 * The webhook sender a deployment's environment describes, built the same way on every
 * runtime: the CLI and Node (process.env), Lambda (process.env), Workers (the `env` binding
 * object).
 */
import type { Sender } from '../../core/sender.js';
import { type EnvLike, readEnv } from '../../runtime/env.js';
import type { HostResolver } from './destination-policy.js';
import { webhookSender } from './webhook-sender.js';

/**
 * Finds the signing secret of a webhook endpoint named by a payload's `endpointId`, in your own
 * storage (a table of subscribers, a secrets store). `undefined` means the endpoint is gone or
 * disabled: the webhook sender then fails the message permanently. A thrown error is retryable.
 */
export type EndpointSecretLookup = (endpointId: string) => Promise<string | undefined>;

export interface WebhookSenderFromEnvOptions {
  /**
   * How to resolve webhook hosts for the SSRF guard: `nodeHostResolver` on Node and Lambda;
   * `false` on Workers, whose egress cannot reach private ranges and which have no resolver.
   */
  resolveHost: HostResolver | false;
  /**
   * Secrets for webhooks whose payload names an `endpointId`. Without it those webhooks fail
   * permanently; webhooks naming no endpoint are signed with `OUTBOX_WEBHOOK_SECRET`.
   */
  endpointSecret?: EndpointSecretLookup;
}

/**
 * A {@link webhookSender} configured from `env`:
 *
 * | variable | meaning |
 * | --- | --- |
 * | `OUTBOX_WEBHOOK_SECRET` | one `whsec_` secret for webhooks whose payload names no `endpointId` |
 * | `OUTBOX_ENV` | `production` (default: https only, no internal addresses) or `development` |
 * | `OUTBOX_WEBHOOK_ALLOW_HOSTS` | comma-separated `host` or `host:port` exempt from the address rules |
 *
 * @example
 * const webhook = webhookSenderFromEnv(env, { resolveHost: false }); // a Worker
 */
export function webhookSenderFromEnv(env: EnvLike, options: WebhookSenderFromEnvOptions): Sender {
  const read = (name: string) => readEnv(env, name);
  const staticSecret = read('OUTBOX_WEBHOOK_SECRET');
  const lookup = options.endpointSecret;
  return webhookSender({
    environment: read('OUTBOX_ENV') === 'development' ? 'development' : 'production',
    allowHosts: (read('OUTBOX_WEBHOOK_ALLOW_HOSTS') ?? '')
      .split(',')
      .map((host) => host.trim())
      .filter(Boolean),
    resolveHost: options.resolveHost,
    // The shared secret is in memory; only an endpoint's secret costs a read (a subrequest).
    secretLookupSubrequests: (payload) => (payload.endpointId !== undefined && lookup ? 1 : 0),
    secretFor: async (_message, payload) => {
      // An endpoint's webhook signed with the shared secret would fail its receiver's check:
      // with no lookup it has no secret, which the sender fails permanently.
      if (payload.endpointId !== undefined) return lookup?.(payload.endpointId);
      return staticSecret;
    },
  });
}
