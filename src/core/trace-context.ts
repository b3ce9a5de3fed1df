/**
 * W3C Trace Context (https://www.w3.org/TR/trace-context/) as the outbox carries it: the
 * `traceparent` and `tracestate` of the code that enqueued a message, stored with the message
 * and handed to its sender, so the send continues the request's trace and the receiver joins it.
 * No OpenTelemetry package here: the values are plain strings, and `outbox-relay/opentelemetry`
 * reads them off an active span for those who have one.
 */
import { ValidationError } from './errors.js';

/** A message's trace context, as the W3C headers of the same names carry it. */
export interface TraceContext {
  /** `00-<32 hex trace id>-<16 hex parent span id>-<2 hex flags>`. */
  readonly traceparent: string;
  /** Vendors' entries, as the `tracestate` header carries them; at most 512 characters. */
  readonly tracestate?: string;
}

/** Where a message's trace context comes from when its enqueue gives none: the active span. */
export type TraceContextSource = () => TraceContext | undefined;

/**
 * The traceparent format: version, trace id, parent id, flags, lowercase hex. Version `ff` is
 * invalid, and an all-zero trace or parent id means none (the spec's words).
 */
const TRACEPARENT = /^([0-9a-f]{2})-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$/;

/** The spec lets a receiver drop a tracestate over 512 characters; we refuse one at enqueue. */
export const MAX_TRACESTATE_LENGTH = 512;

/** Printable ASCII, what the spec allows in tracestate's list members and separators. */
const TRACESTATE = /^[\x20-\x7e]+$/;

/** The trace id a traceparent carries, or `undefined` when it is not one. */
export function traceIdOf(traceparent: string): string | undefined {
  return TRACEPARENT.exec(traceparent)?.[2];
}

/**
 * Checks a caller's trace context at enqueue; throws {@link ValidationError} naming the field.
 * `undefined` and `null` mean none.
 */
export function checkTraceContext(value: unknown, field: string): TraceContext | undefined {
  if (value === undefined || value === null) return undefined;
  if (typeof value !== 'object' || Array.isArray(value)) {
    throw new ValidationError(field, 'expected { traceparent, tracestate? }');
  }
  const { traceparent, tracestate, ...rest } = value as Record<string, unknown>;
  const unknown = Object.keys(rest)[0];
  if (unknown !== undefined) throw new ValidationError(`${field}.${unknown}`, 'unknown property');
  const parts = typeof traceparent === 'string' ? TRACEPARENT.exec(traceparent) : null;
  if (parts === null || parts[1] === 'ff' || /^0+$/.test(parts[2]!) || /^0+$/.test(parts[3]!)) {
    throw new ValidationError(
      `${field}.traceparent`,
      'expected a W3C traceparent: 00-<32 hex trace id>-<16 hex parent id>-<2 hex flags>, ids not all zero',
    );
  }
  if (tracestate === undefined || tracestate === null || tracestate === '') {
    return { traceparent: traceparent as string };
  }
  if (
    typeof tracestate !== 'string' ||
    tracestate.length > MAX_TRACESTATE_LENGTH ||
    !TRACESTATE.test(tracestate)
  ) {
    throw new ValidationError(
      `${field}.tracestate`,
      `expected a W3C tracestate: at most ${MAX_TRACESTATE_LENGTH} printable ASCII characters`,
    );
  }
  return { traceparent: traceparent as string, tracestate };
}

/**
 * The message's trace context as the W3C headers (or a queue's string attributes) carry it:
 * `traceparent`, and `tracestate` when there is one; none without a trace.
 */
export function traceHeaders(trace: TraceContext | undefined): Record<string, string> {
  if (trace === undefined) return {};
  return trace.tracestate === undefined
    ? { traceparent: trace.traceparent }
    : { traceparent: trace.traceparent, tracestate: trace.tracestate };
}
