/**
 * One trace through a Worker, in workerd (`wrangler dev`, `nodejs_compat`): test/fixtures/
 * traced-worker writes a webhook inside a request span (OpenTelemetry's SDK in the Worker,
 * context through AsyncLocalStorage) over Neon's HTTP driver, its cron drain sends it with the
 * drain's spans, and the receiver here gets a traceparent in the request's trace. The Worker
 * posts the spans it finished to this test. Real PostgreSQL through the local Neon stand-in.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { pgExecutor } from '../../src/drivers/node-pg.js';
import { createOutbox } from '../../src/outbox.js';
import { generateWebhookSecret } from '../../src/senders/webhook/webhook-signature.js';
import type { WranglerDev } from '../runtime/wrangler-dev.js';
import { useTestDatabase } from '../support/database.js';
import type { LoopbackServer } from '../support/loopback-http.js';
import { waitFor } from '../support/wait-for.js';
import { startWorkerStack, type WorkerStack } from '../support/worker-stack.js';

const database = useTestDatabase();

interface ExportedSpan {
  name: string;
  traceId: string;
  spanId: string;
  parentSpanId: string | null;
  links: string[];
  attributes: Record<string, unknown>;
}

let stack: WorkerStack;
let ledger: LoopbackServer;
let worker: WranglerDev;
const spans: ExportedSpan[] = [];

beforeAll(async () => {
  await createOutbox().migrate(pgExecutor(database.pool));
  stack = await startWorkerStack(database, (request, response) => {
    if (request.url === '/spans') spans.push(...(JSON.parse(request.body) as ExportedSpan[]));
    response.writeHead(204).end();
  });
  ledger = stack.ledger;
  worker = await stack.startWorker(
    {
      OUTBOX_WEBHOOK_SECRET: generateWebhookSecret(),
      OUTBOX_ENV: 'development',
      OUTBOX_WEBHOOK_ALLOW_HOSTS: `127.0.0.1:${ledger.port}`,
      SPANS_URL: `${ledger.url}/spans`,
    },
    { config: 'test/fixtures/traced-worker/wrangler.toml' },
  );
}, 120_000);

afterAll(() => stack?.stop());

describe('OpenTelemetry in a Worker', () => {
  it("carries the request's trace through the cron drain's send span to the receiver", async () => {
    const response = await fetch(`${worker.url}/orders`, {
      method: 'POST',
      body: JSON.stringify({ url: `${ledger.url}/hooks/orders` }),
    });
    expect(response.status).toBe(201);
    const request = (await response.json()) as { key: string; traceId: string; spanId: string };

    expect((await worker.scheduled('* * * * *')).status).toBe(200);
    await waitFor(
      'the webhook and the drain spans',
      () =>
        ledger.requests.some((received) => received.url === '/hooks/orders') &&
        spans.some((span) => span.name === 'outbox drain'),
    );

    const webhook = ledger.requests.find((received) => received.url === '/hooks/orders')!;
    expect(webhook.headers['webhook-id']).toBe(request.key);
    const send = spans.find(
      (span) =>
        span.name === 'send webhook' && span.attributes['messaging.message.id'] === request.key,
    )!;
    expect(send).toMatchObject({ traceId: request.traceId, parentSpanId: request.spanId });
    expect(webhook.headers.traceparent).toBe(`00-${request.traceId}-${send.spanId}-01`);
    const run = spans.find((span) => span.name === 'outbox drain')!;
    expect(send.links).toContain(run.spanId);
    for (const statement of spans.filter((span) => /^outbox (claim|settle)$/.test(span.name))) {
      expect(statement.parentSpanId).toBe(run.spanId);
    }
  });
});
