/**
 * Sends that start together share one AbortSignal (src/core/send-outcome.ts, SendTimeouts): the
 * drain must not make Node warn of a listener leak when more of them listen to it than Node's
 * default of 10, as every fetch and every AWS SDK call does.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { drainOnce } from '../../src/core/drain.js';
import type { DrainReport } from '../../src/core/drain-settings.js';
import type { Sender } from '../../src/core/sender.js';
import { startLocalSes } from '../../src/dev/local-ses.js';
import { pgExecutor } from '../../src/drivers/node-pg.js';
import { createOutbox } from '../../src/outbox.js';
import { sesSender } from '../../src/senders/ses/index.js';
import { useTestDatabase } from '../support/database.js';
import { type LoopbackServer, startLoopbackServer } from '../support/loopback-http.js';
import { loopbackWebhookSender } from '../support/webhook-receiver.js';

const database = useTestDatabase();
let receiver: LoopbackServer;

beforeAll(async () => {
  receiver = await startLoopbackServer((_request, response) => {
    // Answered a moment later, so the lanes' sends overlap.
    setTimeout(() => response.end('ok'), 20);
  });
});

afterAll(async () => {
  await receiver?.close();
});

/** A drain of `payloads` as `kind` through `send`, 40 lanes; the process's warnings meanwhile. */
async function drainWatchingWarnings(
  schema: string,
  kind: string,
  payloads: unknown[],
  send: Sender,
): Promise<{ report: DrainReport; warnings: string[] }> {
  const outbox = createOutbox({ schema, kinds: { [kind]: true } });
  const db = pgExecutor(database.pool);
  await outbox.migrate(db);
  await outbox.enqueue(
    db,
    payloads.map((payload) => ({ kind, payload: payload as never })),
  );
  const warnings: string[] = [];
  const onWarning = (warning: Error) => warnings.push(`${warning.name}: ${warning.message}`);
  process.on('warning', onWarning);
  try {
    const report = await drainOnce({
      store: outbox.store(db),
      senders: { [kind]: send },
      batchSize: 100,
      concurrency: 40,
    });
    return { report, warnings };
  } finally {
    process.off('warning', onWarning);
  }
}

describe('sends in flight together', () => {
  it('make Node warn of no listener leak on the signal they share: webhooks', async () => {
    const payloads = Array.from({ length: 200 }, (_, index) => ({
      url: `${receiver.url}/hook`,
      event: 'order.created',
      body: { index },
    }));
    const { report, warnings } = await drainWatchingWarnings(
      'send_signals_webhooks',
      'webhook',
      payloads,
      loopbackWebhookSender(receiver.port),
    );
    expect([report.delivered, receiver.requests.length]).toEqual([200, 200]);
    expect(warnings).toEqual([]);
  });

  it('make Node warn of no listener leak on the signal they share: SES through the AWS SDK', async () => {
    const ses = await startLocalSes();
    try {
      const send = sesSender({
        region: 'us-east-1',
        credentials: { accessKeyId: 'AKIDLOCALTEST', secretAccessKey: 'local-test-secret' },
        endpoint: ses.url,
        defaultFrom: 'Acme <no-reply@acme.example>',
      });
      const payloads = Array.from({ length: 200 }, (_, index) => ({
        to: `customer-${index}@example.com`,
        subject: `Order ${index}`,
        text: 'Your order ships today.',
      }));
      const { report, warnings } = await drainWatchingWarnings(
        'send_signals_ses',
        'email',
        payloads,
        send,
      );
      expect(report.delivered).toBe(200);
      expect(warnings).toEqual([]);
    } finally {
      await ses.close();
    }
  });
});
