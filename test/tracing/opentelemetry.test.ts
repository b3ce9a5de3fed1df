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
  type SpanProcessor,
} from '@opentelemetry/sdk-trace-base';
import { type FauxqsServer, startFauxqs } from 'fauxqs';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { drainOnce } from '../../src/core/drain.js';
import { pgExecutor } from '../../src/drivers/node-pg.js';
import { createOutbox } from '../../src/outbox.js';
import { SQS_MESSAGE_KEY_ATTRIBUTE, sqsSender } from '../../src/senders/sqs/index.js';
import {
  activeTraceContext,
  drainTracer,
  traceContextOf,
} from '../../src/tracing/opentelemetry.js';
import { useTestDatabase } from '../support/database.js';
import { fakeClock } from '../support/drain-fixtures.js';
import { type LoopbackServer, startLoopbackServer } from '../support/loopback-http.js';
import {
  loopbackWebhookSender,
  startWebhookReceiver,
  type WebhookReceiver,
} from '../support/webhook-receiver.js';

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

/** The span context W3C trace headers name, as a receiver's propagator would read them. */
function remoteParent(traceparent: string, tracestate?: string): api.Context {
  const [, traceId, spanId, flags] = traceparent.split('-');
  return api.trace.setSpanContext(api.ROOT_CONTEXT, {
    traceId: traceId!,
    spanId: spanId!,
    traceFlags: Number.parseInt(flags!, 16),
    isRemote: true,
    ...(tracestate === undefined ? {} : { traceState: api.createTraceState(tracestate) }),
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
    await drainOnce({
      store: outbox.store(db),
      senders: {
        webhook: loopbackWebhookSender(receiver.port),
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

describe("the drain's spans", () => {
  let flaky: LoopbackServer;
  /** Answers per path, in order; the last repeats. */
  const answers = new Map<string, number[]>([['/flaky', [503, 200]]]);
  beforeAll(async () => {
    flaky = await startLoopbackServer((request, response) => {
      const script = answers.get(request.url) ?? [200];
      const status = script.length > 1 ? script.shift()! : script[0]!;
      response.writeHead(status).end();
    });
  });
  afterAll(async () => {
    await flaky?.close();
  });

  it('continue the request trace on a first attempt, link a retry to it, and parent the receiver on the send', async () => {
    exporter.reset();
    const db = pgExecutor(database.pool);
    const outbox = createOutbox({ schema: 'drain_spans', traceContext: activeTraceContext(api) });
    await outbox.migrate(db);
    // The request came in with vendors' tracestate entries, which its span keeps.
    const tracestate = 'congo=t61rcWkgMzE,rojo=00f067aa0ba902b7';
    const incoming = remoteParent(
      '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01',
      tracestate,
    );
    const { request, keys } = await tracer.startActiveSpan(
      'POST /orders',
      {},
      incoming,
      async (span) => {
        const written = await outbox.enqueue(db, [
          { kind: 'webhook', payload: { url: `${flaky.url}/ok`, body: {} } },
          { kind: 'webhook', payload: { url: `${flaky.url}/flaky`, body: {} } },
        ]);
        span.end();
        return { request: span.spanContext(), keys: written };
      },
    );
    const store = outbox.store(db);
    const senders = {
      webhook: loopbackWebhookSender(flaky.port),
    };
    const clock = fakeClock();
    const traced = drainTracer(api, tracer);
    await drainOnce({ store, senders, clock, tracer: traced });
    clock.set((await store.getByKey(keys[1]!))!.dueAt);
    await drainOnce({ store, senders, clock, tracer: traced });
    expect((await store.getByKey(keys[1]!))?.state).toBe('delivered');

    const spans = exporter.getFinishedSpans();
    const named = (name: string) => spans.filter((span) => span.name === name);
    const runs = named('outbox drain');
    expect(runs).toHaveLength(2);
    const runIds = new Set(runs.map((run) => run.spanContext().spanId));
    for (const statement of [...named('outbox claim'), ...named('outbox settle')]) {
      expect(runIds.has(statement.parentSpanContext?.spanId ?? '')).toBe(true);
    }
    expect(named('outbox settle').length).toBeGreaterThanOrEqual(2);

    const sends = named('send webhook');
    const sendOf = (key: string, attempt: number) =>
      sends.find(
        (span) =>
          span.attributes['messaging.message.id'] === key &&
          span.attributes['outbox.attempt'] === attempt,
      )!;
    // First attempts continue the request's trace, under the request's span.
    for (const key of keys) {
      const first = sendOf(key!, 1);
      expect(first.spanContext().traceId).toBe(request.traceId);
      expect(first.parentSpanContext?.spanId).toBe(request.spanId);
      expect(first.links.some((link) => runIds.has(link.context.spanId))).toBe(true);
    }
    expect(sendOf(keys[1]!, 1).status.code).toBe(api.SpanStatusCode.ERROR);
    // The retry: a trace of its own, linked to the span the message was enqueued under.
    const retry = sendOf(keys[1]!, 2);
    expect(retry.spanContext().traceId).not.toBe(request.traceId);
    expect(retry.parentSpanContext).toBeUndefined();
    expect(retry.links.map((link) => link.context.spanId)).toContain(request.spanId);

    // The receiver got the send span's context: its own span is a child of the send.
    const delivered = flaky.requests.find((received) => received.url === '/ok')!;
    const sent = sendOf(keys[0]!, 1).spanContext();
    expect(delivered.headers.traceparent).toBe(traceContextOf(sent).traceparent);
    // ... and the tracestate the message was enqueued under, every entry kept.
    expect((await store.getByKey(keys[0]!))?.traceContext?.tracestate).toBe(tracestate);
    expect(delivered.headers.tracestate).toBe(tracestate);
    // The retry's trace is its own: the request's tracestate stays with the request's trace.
    const [firstTry, retried] = flaky.requests.filter((received) => received.url === '/flaky');
    expect(firstTry?.headers.tracestate).toBe(tracestate);
    expect(retried?.headers.tracestate).toBeUndefined();
    tracer.startSpan('handle', {}, remoteParent(delivered.headers.traceparent!)).end();
    const handled = exporter.getFinishedSpans().find((span) => span.name === 'handle')!;
    expect(handled.spanContext().traceId).toBe(request.traceId);
    expect(handled.parentSpanContext?.spanId).toBe(sent.spanId);
  });
});

describe('a drain without a tracer', () => {
  afterEach(() => {
    api.trace.disable();
  });

  it('delivers with no call to the global OpenTelemetry API: no span started, no traceparent sent for an untraced message', async () => {
    // An app's global provider, noting every span as it starts (one never ended counts too): a
    // drain that called `api.trace` itself, rather than a tracer it was given, would show here.
    const started: string[] = [];
    const noteStarts: SpanProcessor = {
      onStart: (span) => started.push(span.name),
      onEnd: () => {},
      forceFlush: async () => {},
      shutdown: async () => {},
    };
    expect(
      api.trace.setGlobalTracerProvider(new BasicTracerProvider({ spanProcessors: [noteStarts] })),
    ).toBe(true);
    const db = pgExecutor(database.pool);
    const outbox = createOutbox({ schema: 'untraced_drain' });
    await outbox.migrate(db);
    const [key] = await outbox.enqueue(db, {
      kind: 'webhook',
      payload: { url: `${receiver.url}/untraced-drain`, body: {} },
    });
    const store = outbox.store(db);
    expect((await store.getByKey(key!))?.traceContext).toBeUndefined();

    await drainOnce({ store, senders: { webhook: loopbackWebhookSender(receiver.port) } });

    expect((await store.getByKey(key!))?.state).toBe('delivered');
    const received = receiver.received.find((request) => request.url === '/untraced-drain');
    expect(received?.headers['webhook-id']).toBe(key);
    expect(received?.headers.traceparent).toBeUndefined();
    expect(started).toEqual([]);
  });
});
