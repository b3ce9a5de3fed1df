/**
 * One trace from the request to the receiver, with the real OpenTelemetry SDK
 * (`@opentelemetry/sdk-trace-base`, spans kept in memory; context through AsyncLocalStorage):
 * a request's span enqueues a webhook and an SQS message under `activeTraceContext(api)`, a
 * drain sends them, and the receiver's span, parented on the `traceparent` the webhook carried,
 * lands in the request's trace. The queue message carries the same traceparent as an attribute.
 */
import * as api from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import {
  BasicTracerProvider,
  InMemorySpanExporter,
  SimpleSpanProcessor,
} from '@opentelemetry/sdk-trace-base';
import { type FauxqsServer, startFauxqs } from 'fauxqs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { drainOnce } from '../../src/core/drain.js';
import { pgExecutor } from '../../src/drivers/node-pg.js';
import { createOutbox } from '../../src/outbox.js';
import { SQS_MESSAGE_KEY_ATTRIBUTE, sqsSender } from '../../src/senders/sqs/index.js';
import { webhookSender } from '../../src/senders/webhook/webhook-sender.js';
import { generateWebhookSecret } from '../../src/senders/webhook/webhook-signature.js';
import { activeTraceContext, traceContextOf } from '../../src/tracing/opentelemetry.js';
import { useTestDatabase } from '../support/database.js';
import { startWebhookReceiver, type WebhookReceiver } from '../support/webhook-receiver.js';

const database = useTestDatabase();
const exporter = new InMemorySpanExporter();
const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
const tracer = provider.getTracer('outbox-relay-test');
const QUEUE_KIND = 'order.placed';
let receiver: WebhookReceiver;
let queues: FauxqsServer;

beforeAll(async () => {
  api.context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
  receiver = await startWebhookReceiver();
  queues = await startFauxqs({ port: 0, logger: false, messageSpies: true });
});
afterAll(async () => {
  api.context.disable();
  await Promise.all([receiver?.close(), queues?.stop()]);
});

/** The span context a W3C traceparent names, as a receiver's propagator would read it. */
function remoteParent(traceparent: string): api.Context {
  const [, traceId, spanId, flags] = traceparent.split('-');
  return api.trace.setSpanContext(api.ROOT_CONTEXT, {
    traceId: traceId!,
    spanId: spanId!,
    traceFlags: Number.parseInt(flags!, 16),
    isRemote: true,
  });
}

describe('OpenTelemetry context carried through the outbox', () => {
  it("puts the receiver's span in the trace of the request that enqueued the message", async () => {
    const db = pgExecutor(database.pool);
    const outbox = createOutbox({
      schema: 'traced',
      kinds: { [QUEUE_KIND]: true },
      traceContext: activeTraceContext(api),
    });
    await outbox.migrate(db);

    // The request: its span is active while it writes, so the enqueue stores its context.
    const { requestSpan, keys } = await tracer.startActiveSpan('POST /orders', async (span) => {
      const written = await outbox.enqueue(db, [
        { kind: 'webhook', payload: { url: `${receiver.url}/orders`, body: { id: 1 } } },
        { kind: QUEUE_KIND, payload: { id: 1 } },
      ]);
      span.end();
      return { requestSpan: span.spanContext(), keys: written };
    });
    // Outside any span: no trace context.
    const [untraced] = await outbox.enqueue(db, {
      kind: 'webhook',
      payload: { url: `${receiver.url}/later`, body: {} },
    });

    const { QueueUrl } = await createQueue(queues, 'orders');
    const secret = generateWebhookSecret();
    await drainOnce({
      store: outbox.store(db),
      senders: {
        webhook: webhookSender({
          secret,
          environment: 'development',
          allowHosts: [`127.0.0.1:${receiver.port}`],
          resolveHost: false,
        }),
        [QUEUE_KIND]: sqsSender({
          queueUrl: QueueUrl,
          endpoint: queues.address,
          region: 'us-east-1',
          credentials: { accessKeyId: 'AKIDTRACE', secretAccessKey: 'trace-secret' },
        }),
      },
    });

    // The receiver continues the trace the webhook carried.
    const orders = receiver.received.find((request) => request.url === '/orders');
    expect(orders?.headers['webhook-id']).toBe(keys[0]);
    const traceparent = orders!.headers.traceparent!;
    expect(traceparent).toBe(traceContextOf(requestSpan).traceparent);
    tracer.startSpan('handle order webhook', {}, remoteParent(traceparent)).end();
    const spans = exporter.getFinishedSpans();
    const handled = spans.find((span) => span.name === 'handle order webhook')!;
    expect(handled.spanContext().traceId).toBe(requestSpan.traceId);
    expect(handled.parentSpanContext?.spanId).toBe(requestSpan.spanId);

    // The queue message carries the same context as attributes.
    const published = queues.spy
      .getAllMessages()
      .find(
        (event) =>
          event.service === 'sqs' &&
          event.status === 'published' &&
          event.messageAttributes[SQS_MESSAGE_KEY_ATTRIBUTE]?.StringValue === keys[1],
      );
    expect(
      published?.service === 'sqs' ? published.messageAttributes.traceparent?.StringValue : null,
    ).toBe(traceparent);

    const later = receiver.received.find((request) => request.url === '/later');
    expect(later?.headers['webhook-id']).toBe(untraced);
    expect(later?.headers.traceparent).toBeUndefined();
  });

  it('reads no context where no span is active, and keeps the tracestate of one that has it', () => {
    const source = activeTraceContext(api);
    expect(source()).toBeUndefined();
    const traced = api.trace.setSpanContext(api.ROOT_CONTEXT, {
      traceId: '4bf92f3577b34da6a3ce929d0e0e4736',
      spanId: '00f067aa0ba902b7',
      traceFlags: api.TraceFlags.SAMPLED,
      traceState: api.createTraceState('rojo=00f067aa0ba902b7'),
    });
    expect(api.context.with(traced, source)).toEqual({
      traceparent: '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01',
      tracestate: 'rojo=00f067aa0ba902b7',
    });
  });
});

/** A standard queue on the in-process SQS server. */
function createQueue(server: FauxqsServer, name: string): { QueueUrl: string } {
  return { QueueUrl: server.createQueue(name).queueUrl };
}
