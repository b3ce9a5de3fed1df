/**
 * A Lambda that sends only webhooks, as a user writes one against the installed package:
 * Neon's HTTP driver, the webhook sender from the environment, the Lambda kit. Bundled in
 * test/package/consumer.test.ts exactly as `esbuild lambda.ts --bundle --platform=node
 * --format=esm` would (no banner, no `require` shim), in a project with no AWS SDK installed,
 * then run in plain Node with an EventBridge event.
 */
import { neon, neonConfig } from '@neondatabase/serverless';
import { createOutbox, neonHttpExecutor } from 'outbox-relay';
import { lambdaScheduledHandler, nodeHostResolver } from 'outbox-relay/aws-lambda';
import { applyNeonLocalProxy } from 'outbox-relay/neon-local';
import { webhookSenderFromEnv } from 'outbox-relay/webhook';

const outbox = createOutbox();

export const handler = lambdaScheduledHandler(() => {
  // Tests only: the loopback stand-in for Neon's endpoints.
  const proxy = process.env.NEON_LOCAL_PROXY;
  if (proxy) applyNeonLocalProxy(neonConfig, proxy);
  return {
    store: outbox.store(neonHttpExecutor(neon(process.env.DATABASE_URL!))),
    senders: { webhook: webhookSenderFromEnv(process.env, { resolveHost: nodeHostResolver }) },
  };
});
