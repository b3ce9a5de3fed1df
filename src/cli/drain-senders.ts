/**
 * The senders `outbox drain` uses: built from the environment as the deployed functions build
 * them (`sendersFromEnv`), then the config file's `senders` replace them kind by kind, and its
 * `endpointSecret` signs webhooks that name an endpoint. What cannot be delivered is said at
 * startup, so no message goes to dead letter silently.
 */
import type { SenderRegistry } from '../core/sender.js';
import { sendersFromEnv } from '../runtime/senders-from-env.js';
import { nodeHostResolver } from '../senders/webhook/node-host-resolver.js';
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
  const built = sendersFromEnv(io.env, {
    endpointSecret: endpointSecret && ((endpointId) => endpointSecret(endpointId, context)),
    resolveHost: nodeHostResolver,
  });
  const own = await configSenders(config, configPath, context);
  const senders: SenderRegistry = { ...built.senders, ...own };
  for (const { kind, reason } of built.skipped) {
    if (!(kind in own)) writeNote(io, `not draining ${kind}: ${reason}`);
  }
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
