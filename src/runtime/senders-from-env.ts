/**
 * Builds the drain's senders from environment variables, the same way on every runtime: the
 * CLI and Node (process.env), Lambda (process.env), Workers (the `env` binding object).
 */
import { ConfigurationError } from '../core/errors.js';
import type { SenderRegistry } from '../core/sender.js';
import { limitSender } from '../senders/rate-limit.js';
import { sesConfigFromEnv, sesSender } from '../senders/ses/ses-sender.js';
import type { HostResolver } from '../senders/webhook/destination-policy.js';
import { webhookSender } from '../senders/webhook/webhook-sender.js';
import { type EnvLike, readEnv } from './env.js';

/**
 * Environment variables read here:
 *
 * | variable | meaning |
 * | --- | --- |
 * | `AWS_REGION`, `AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY` (`AWS_SESSION_TOKEN`) | SES credentials; without them no email sender is built and emails stay pending |
 * | `AWS_ENDPOINT_URL_SES` | SES endpoint override (a local emulator) |
 * | `OUTBOX_EMAIL_FROM` | `From` for emails that name none |
 * | `OUTBOX_SES_MAX_SEND_RATE` | messages per second per invocation (your SES account's rate divided by overlapping invocations) |
 * | `OUTBOX_WEBHOOK_SECRET` | one `whsec_` secret for webhooks whose payload names no `endpointId` |
 * | `OUTBOX_ENV` | `production` (default: https only, no internal addresses) or `development` |
 * | `OUTBOX_WEBHOOK_ALLOW_HOSTS` | comma-separated `host` or `host:port` exempt from the address rules |
 */

/**
 * Finds the signing secret of a webhook endpoint named by a payload's `endpointId`, in your own
 * storage (a table of subscribers, a secrets store). `undefined` means the endpoint is gone or
 * disabled: the webhook sender then fails the message permanently. A thrown error is retryable.
 */
export type EndpointSecretLookup = (endpointId: string) => Promise<string | undefined>;

export interface SendersFromEnvOptions {
  /**
   * Secrets for webhooks whose payload names an `endpointId`. Without it those webhooks fail
   * permanently; webhooks naming no endpoint are signed with `OUTBOX_WEBHOOK_SECRET`.
   */
  endpointSecret?: EndpointSecretLookup;
  /**
   * How to resolve webhook hosts for the SSRF guard: `nodeHostResolver` on Node and Lambda;
   * `false` on Workers, whose egress cannot reach private ranges and which have no resolver.
   */
  resolveHost: HostResolver | false;
}

/** What was built, and what was left out and why: printed at startup so nothing is silent. */
export interface SendersFromEnv {
  senders: SenderRegistry;
  skipped: { kind: string; reason: string }[];
}

export function sendersFromEnv(env: EnvLike, options: SendersFromEnvOptions): SendersFromEnv {
  const read = (name: string) => readEnv(env, name);
  const senders: Record<string, SenderRegistry[string]> = {};
  const skipped: SendersFromEnv['skipped'] = [];

  if (read('AWS_ACCESS_KEY_ID') || read('AWS_ENDPOINT_URL_SES')) {
    const email = sesSender(sesConfigFromEnv(env));
    const rate = read('OUTBOX_SES_MAX_SEND_RATE');
    if (rate !== undefined && !(Number(rate) > 0)) {
      throw new ConfigurationError(
        `OUTBOX_SES_MAX_SEND_RATE must be a positive number, got ${rate}`,
      );
    }
    senders.email = rate === undefined ? email : limitSender(email, { perSecond: Number(rate) });
  } else {
    skipped.push({
      kind: 'email',
      reason: 'no AWS_ACCESS_KEY_ID: emails stay pending until a drain with SES credentials runs',
    });
  }

  const environment = read('OUTBOX_ENV') === 'development' ? 'development' : 'production';
  const staticSecret = read('OUTBOX_WEBHOOK_SECRET');
  const lookup = options.endpointSecret;
  senders.webhook = webhookSender({
    environment,
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
  return { senders, skipped };
}
