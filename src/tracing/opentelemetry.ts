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
  context: { active(): unknown };
  trace: {
    // biome-ignore lint/suspicious/noExplicitAny: the api's Context type, which we never touch
    getSpanContext(context: any): SpanContextLike | undefined;
    isSpanContextValid(spanContext: SpanContextLike): boolean;
  };
}

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
