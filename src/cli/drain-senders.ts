/**
 * The senders `outbox drain` uses: built from the environment as the deployed functions build
 * them (`webhookSenderFromEnv`, `sesSenderFromEnv`), then the config file's `senders` replace
 * them kind by kind, and its `endpointSecret` signs webhooks that name an endpoint. What cannot
 * be delivered is said at startup, so no message goes to dead letter silently.
 *
 * The SES sender is imported only when the environment asks for SES and the config brings no
 * email sender of its own: `@aws-sdk/client-ses` is an optional peer, which a project that sends
 * no email has not installed, and `outbox drain` must run there too.
 */
import type { Sender, SenderRegistry } from '../core/sender.js';
import type { EnvLike } from '../runtime/env.js';
import { sesRequestedInEnv } from '../senders/ses/ses-config.js';
import { nodeHostResolver } from '../senders/webhook/node-host-resolver.js';
import { webhookSenderFromEnv } from '../senders/webhook/webhook-from-env.js';
import { decodeWebhookSecret } from '../senders/webhook/webhook-signature.js';
import { CliError } from './cli-errors.js';
import { type CliIo, writeNote } from './cli-io.js';
import type { OutboxCliConfig, OutboxCliContext } from './config.js';
import { configError } from './config-file.js';

export interface DrainSendersRequest {
  io: CliIo;
  config: OutboxCliConfig;
  configPath: string | undefined;
  /** What the config's functions get: the CLI's database and environment. */
  context: OutboxCliContext;
}

export async function drainSenders(request: DrainSendersRequest): Promise<SenderRegistry> {
  const { io, config, configPath, context } = request;
  const { endpointSecret } = config;
  const own = await configSenders(config, configPath, context);
  const senders: Record<string, Sender> = {
    webhook: webhookSenderFromEnv(io.env, {
      endpointSecret: endpointSecret && ((endpointId) => endpointSecret(endpointId, context)),
      resolveHost: nodeHostResolver,
    }),
  };
  if (!('email' in own)) {
    if (!sesRequestedInEnv(io.env)) {
      writeNote(
        io,
        'not draining email: no AWS_ACCESS_KEY_ID: emails stay pending until a drain with SES credentials runs',
      );
    } else {
      senders.email = await sesSenderFromEnv(io.env);
    }
  }
  Object.assign(senders, own);
  for (const kind of Object.keys(config.kinds ?? {})) {
    if (!(kind in senders)) {
      writeNote(io, `not draining ${kind}: no sender for it in the config's senders`);
    }
  }
  if (!('webhook' in own)) {
    checkWebhookSecret(io);
    if (!endpointSecret) {
      writeNote(
        io,
        'no endpointSecret lookup: webhooks whose payload names an endpointId cannot be signed and will go to dead letter; add endpointSecret to outbox.config.ts',
      );
    }
  }
  return senders;
}

/**
 * The SES sender the environment describes, its module (and the SDK) loaded only now. A
 * missing SDK is said in words: the `ERR_MODULE_NOT_FOUND` alone names no remedy.
 */
async function sesSenderFromEnv(env: EnvLike): Promise<Sender> {
  let module: typeof import('../senders/ses/ses-from-env.js');
  try {
    module = await import('../senders/ses/ses-from-env.js');
  } catch (error) {
    if (!isMissingSesSdk(error)) throw error;
    throw new CliError(
      'CLI_CONFIGURATION',
      'SES credentials are set (AWS_ACCESS_KEY_ID or AWS_ENDPOINT_URL_SES) but @aws-sdk/client-ses is not installed: npm install @aws-sdk/client-ses, or unset them to leave emails pending',
    );
  }
  // Defined: sesRequestedInEnv(env) held.
  return module.sesSenderFromEnv(env)!;
}

function isMissingSesSdk(error: unknown): boolean {
  return (
    error instanceof Error &&
    (error as { code?: unknown }).code === 'ERR_MODULE_NOT_FOUND' &&
    error.message.includes('@aws-sdk/client-ses')
  );
}

async function configSenders(
  config: OutboxCliConfig,
  configPath: string | undefined,
  context: OutboxCliContext,
): Promise<SenderRegistry> {
  if (config.senders === undefined) return {};
  const where = configPath ?? 'outbox.config';
  let senders: unknown;
  try {
    senders = typeof config.senders === 'function' ? await config.senders(context) : config.senders;
  } catch (error) {
    const reason = error instanceof Error ? error.message : String(error);
    throw configError(where, `senders(): ${reason}`, error);
  }
  if (typeof senders !== 'object' || senders === null) {
    throw configError(where, 'senders must be an object of senders by kind');
  }
  for (const [kind, sender] of Object.entries(senders)) {
    if (typeof sender !== 'function') {
      throw configError(where, `senders.${kind} must be a sender function (message, signal)`);
    }
  }
  return senders as SenderRegistry;
}

/**
 * The webhook sender reads OUTBOX_WEBHOOK_SECRET only when it signs, and a missing or malformed
 * secret is a permanent failure there: every such webhook would go to dead letter. Say so at
 * startup instead: refuse a malformed secret, warn about a missing one.
 */
function checkWebhookSecret(io: CliIo): void {
  const secret = io.env.OUTBOX_WEBHOOK_SECRET?.trim();
  if (!secret) {
    writeNote(
      io,
      'OUTBOX_WEBHOOK_SECRET is not set: webhooks whose payload names no endpointId cannot be signed and will go to dead letter',
    );
    return;
  }
  try {
    decodeWebhookSecret(secret);
  } catch (error) {
    const reason = error instanceof Error ? error.message : String(error);
    throw new CliError('CLI_CONFIGURATION', `OUTBOX_WEBHOOK_SECRET: ${reason}`);
  }
}
