/**
 * `outbox-relay/opentelemetry`: OpenTelemetry's active span as the trace context messages are
 * enqueued under. You pass your own `@opentelemetry/api` in, so this package loads no
 * OpenTelemetry code of its own, and an app without OpenTelemetry loads none at all.
 *
 * @example
 * import * as api from '@opentelemetry/api';
 * import { createOutbox } from 'outbox-relay';
 * import { activeTraceContext } from 'outbox-relay/opentelemetry';
 *
 * const outbox = createOutbox({ traceContext: activeTraceContext(api) });
 * // Inside a request's span, every enqueue now stores that span's traceparent; the webhook,
 * // queue message or email that goes out carries it to the receiver.
 */
import type { DrainRunTrace, DrainTracer, EndSpan } from '../core/drain-tracing.js';
import type { TraceContext, TraceContextSource } from '../core/trace-context.js';

/** What we read of a span context: `SpanContext` of `@opentelemetry/api`. */
export interface SpanContextLike {
  traceId: string;
  spanId: string;
  traceFlags: number;
  traceState?: { serialize(): string };
}

/** What we use of `@opentelemetry/api` (pass the module itself: `import * as api`). */
export interface OpenTelemetryApiLike {
  // biome-ignore lint/suspicious/noExplicitAny: the api's Context, which we only pass along
  context: { active(): any };
  // biome-ignore lint/suspicious/noExplicitAny: the api's Context, which we only pass along
  ROOT_CONTEXT: any;
  /** A TraceState from a `tracestate` header's text (in `@opentelemetry/api` since 1.1). */
  createTraceState(text: string): { serialize(): string };
  trace: {
    // biome-ignore lint/suspicious/noExplicitAny: the api's Context, which we only pass along
    getSpanContext(context: any): SpanContextLike | undefined;
    isSpanContextValid(spanContext: SpanContextLike): boolean;
    // biome-ignore lint/suspicious/noExplicitAny: the api's Context and Span
    setSpan(context: any, span: any): any;
    // biome-ignore lint/suspicious/noExplicitAny: the api's Context
    setSpanContext(context: any, spanContext: SpanContextLike & { isRemote?: boolean }): any;
  };
}

/** What we use of a span: its context, its attributes, its status, its end. */
export interface SpanLike {
  spanContext(): SpanContextLike;
  setStatus(status: { code: number; message?: string }): unknown;
  recordException(exception: Error | string): unknown;
  end(): void;
}

/** What we use of a `Tracer` (`trace.getTracer('outbox-relay')`, or a provider's). */
export interface TracerLike {
  startSpan(
    name: string,
    options: {
      kind?: number;
      attributes?: Record<string, string | number | boolean>;
      links?: { context: { traceId: string; spanId: string; traceFlags: number } }[];
    },
    // biome-ignore lint/suspicious/noExplicitAny: the api's Context
    context?: any,
  ): SpanLike;
}

/** `SpanKind` and `SpanStatusCode` of `@opentelemetry/api`: stable numbers of the spec. */
const SPAN_KIND = { internal: 0, client: 2, producer: 3 } as const;
const STATUS_ERROR = 2;

/**
 * A trace context source (`createOutbox({ traceContext })`) that reads the span active where
 * `enqueue` is called: its trace id, its span id as the parent, its flags and its tracestate.
 * No active span, or an invalid one: no trace context.
 */
export function activeTraceContext(api: OpenTelemetryApiLike): TraceContextSource {
  return () => {
    const span = api.trace.getSpanContext(api.context.active());
    if (span === undefined || !api.trace.isSpanContextValid(span)) return undefined;
    return traceContextOf(span);
  };
}

/** A span context as W3C Trace Context: `00-<trace id>-<span id>-<flags>`, and its tracestate. */
export function traceContextOf(span: SpanContextLike): TraceContext {
  const flags = (span.traceFlags & 0xff).toString(16).padStart(2, '0');
  const traceparent = `00-${span.traceId}-${span.spanId}-${flags}`;
  const tracestate = span.traceState?.serialize();
  return tracestate ? { traceparent, tracestate } : { traceparent };
}

/**
 * The drain's spans (`drainOnce({ tracer: drainTracer(api, tracer) })`), after OpenTelemetry's
 * messaging and database conventions:
 *
 * - `outbox drain`, the run, a child of whatever span is active where the drain starts (the
 *   invocation's, when the runtime is instrumented);
 * - `outbox claim` and `outbox settle`, children of the run (`db.system.name` postgresql);
 * - `send KIND`, one per message (alone or its place in a batch call), a producer span: on the
 *   message's first attempt a child of the span it was enqueued under, so the request's trace
 *   runs on to the receiver, its tracestate with it; on a retry a trace of its own linked to
 *   that span; both linked to the run. A message enqueued under no trace is sent under the run.
 *   The receiver gets the send span's context (`traceparent`, `tracestate`), so its span is a
 *   child of the send.
 *
 * A span ends failed (status error, the exception recorded) when its statement or send failed.
 */
export function drainTracer(api: OpenTelemetryApiLike, tracer: TracerLike): DrainTracer {
  return {
    startRun(): DrainRunTrace {
      const runSpan = tracer.startSpan(
        'outbox drain',
        { kind: SPAN_KIND.internal },
        api.context.active(),
      );
      const runContext = api.trace.setSpan(api.context.active(), runSpan);
      const statement = (name: string, attributes: Record<string, string | number>) =>
        ending(
          tracer.startSpan(
            name,
            {
              kind: SPAN_KIND.client,
              attributes: { 'db.system.name': 'postgresql', ...attributes },
            },
            runContext,
          ),
        );
      return {
        claim: () => statement('outbox claim', { 'db.operation.name': 'claim' }),
        settle: (outcomes) =>
          statement('outbox settle', {
            'db.operation.name': 'settle',
            'db.operation.batch.size': outcomes,
          }),
        send(message) {
          const enqueued = message.traceContext && spanContextOf(api, message.traceContext);
          const first = message.attempt === 1;
          const parent =
            enqueued === undefined
              ? runContext
              : first
                ? api.trace.setSpanContext(api.ROOT_CONTEXT, { ...enqueued, isRemote: true })
                : api.ROOT_CONTEXT;
          const links = [
            ...(enqueued !== undefined && !first ? [{ context: enqueued }] : []),
            { context: runSpan.spanContext() },
          ];
          const span = tracer.startSpan(
            `send ${message.kind}`,
            {
              kind: SPAN_KIND.producer,
              attributes: {
                'messaging.operation.type': 'send',
                'messaging.operation.name': 'send',
                'messaging.message.id': message.key,
                'messaging.destination.name': message.kind,
                'outbox.attempt': message.attempt,
              },
              links,
            },
            parent,
          );
          return { traceContext: traceContextOf(span.spanContext()), end: ending(span) };
        },
        end: ending(runSpan),
      };
    },
  };
}

/** A span's end, once: failed with the error's message and the exception when given one. */
function ending(span: SpanLike): EndSpan {
  let ended = false;
  return (error) => {
    if (ended) return;
    ended = true;
    if (error !== undefined) {
      const exception = error instanceof Error ? error : String(error);
      span.recordException(exception);
      span.setStatus({
        code: STATUS_ERROR,
        message: error instanceof Error ? error.message : String(error),
      });
    }
    span.end();
  };
}

/**
 * The span context a stored trace context names, its tracestate included, as the receiver of a
 * request would read the two headers: a span started from it keeps the vendors' entries.
 */
function spanContextOf(
  api: OpenTelemetryApiLike,
  trace: TraceContext,
): SpanContextLike | undefined {
  const [, traceId, spanId, flags] = trace.traceparent.split('-');
  if (traceId === undefined || spanId === undefined || flags === undefined) return undefined;
  const spanContext = { traceId, spanId, traceFlags: Number.parseInt(flags, 16) };
  return trace.tracestate === undefined
    ? spanContext
    : { ...spanContext, traceState: api.createTraceState(trace.tracestate) };
}
