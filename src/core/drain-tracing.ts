/**
 * The drain's spans, as a port: the core says when a run, a claim, a settle and a send start and
 * end; an adapter (`drainTracer` of `outbox-relay/opentelemetry`) makes them spans of a tracer.
 * Without one the drain makes no call here at all.
 */
import type { TraceContext } from './trace-context.js';

/** Ends a span; an error marks it failed. Called once. */
export type EndSpan = (error?: unknown) => void;

/** What a send span knows of its message. */
export interface TracedSend {
  key: string;
  kind: string;
  /** 1 on the first attempt. */
  attempt: number;
  /** The context the message was enqueued under, if any. */
  traceContext?: TraceContext;
}

/** One drain run's spans: the run itself, and its claims, settles and sends. */
export interface DrainRunTrace {
  /** A claim statement, inside the run. */
  claim(): EndSpan;
  /** A settle statement writing `outcomes` outcomes, inside the run. */
  settle(outcomes: number): EndSpan;
  /**
   * One message's send (alone, or its place in a batch call). The first attempt of a message
   * enqueued under a trace continues that trace; a retry starts a trace of its own linked to
   * it. Returns the context the receiver gets: the send span's own.
   */
  send(message: TracedSend): { traceContext: TraceContext | undefined; end: EndSpan };
  /** Ends the run. */
  end: EndSpan;
}

/**
 * Makes a drain's spans: `drainOnce({ tracer })`. One `startRun` per drain, called where the
 * drain starts, so an invocation's own span (a Lambda's, a request's) is its parent.
 */
export interface DrainTracer {
  startRun(): DrainRunTrace;
}
