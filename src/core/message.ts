import { ConfigurationError, ValidationError } from './errors.js';
import type { IdGenerator } from './ports.js';
import { checkStorableText, storableTextProblem } from './storable-text.js';
import { checkTraceContext, type TraceContext, type TraceContextSource } from './trace-context.js';

/** JSON as Postgres `jsonb` stores it: no `undefined`, no functions, no NaN, no class instances. */
export type JsonValue =
  | null
  | boolean
  | number
  | string
  | JsonValue[]
  | { [key: string]: JsonValue };

/** What a caller asks to send. Only `kind` and `payload` are required. */
export interface NewMessage<Payload = JsonValue> {
  /** Which sender delivers it: `email`, `webhook`, or a kind you registered. */
  kind: string;
  payload: Payload;
  /**
   * The stable ID receivers use to drop duplicates. Made by the outbox's `newId` when omitted
   * (a time-ordered UUID v7 by default); pass your own UUID when the caller already has an
   * idempotency key for this side effect.
   */
  key?: string;
  /** Messages sharing an ordering key are delivered one at a time, in enqueue order. */
  orderingKey?: string;
  /**
   * Enqueueing twice with one dedupe key yields one message (the first); the second call returns
   * the first message's key. Unique among rows still in the table: once purged, a key may recur.
   */
  dedupeKey?: string;
  /** Deliver no earlier than this. Mutually exclusive with `delayMs`. */
  dueAt?: Date;
  /** Deliver no earlier than this many milliseconds after enqueue. */
  delayMs?: number;
  /** Attempts before the message is set aside as dead. Default {@link DEFAULT_MAX_ATTEMPTS}. */
  maxAttempts?: number;
  /**
   * The W3C trace context the send continues (the receiver gets `traceparent`). Default: what
   * the outbox's `traceContext` source reads (the active span, with `outbox-relay/opentelemetry`),
   * else none.
   */
  traceContext?: TraceContext;
}

/** A message ready to insert: validated, defaults applied, payload serialised once. */
export interface PreparedMessage {
  key: string;
  kind: string;
  payloadJson: string;
  orderingKey: string | null;
  dedupeKey: string | null;
  /** An absolute due time, or `null` for "the database clock at insert, plus `delayMs`". */
  dueAt: Date | null;
  delayMs: number;
  maxAttempts: number;
  /** Where it goes, as its kind's {@link DestinationOf} names it; null for none. */
  destination: string | null;
  traceparent: string | null;
  tracestate: string | null;
}

/**
 * 256 KiB of serialised JSON. The outbox row is read on every claim, so large payloads cost every
 * drain; this matches the SQS/SNS message limit users already design around. Store big bodies
 * elsewhere and put a reference in the payload.
 */
export const MAX_PAYLOAD_BYTES = 256 * 1024;

/**
 * Ten attempts with the default backoff (1 s base, 15 min cap) span roughly an hour and a half of
 * retries: long enough to ride out a provider incident, short enough that a broken message reaches
 * dead letter the same day.
 */
export const DEFAULT_MAX_ATTEMPTS = 10;

/** Upper bound on `maxAttempts`; beyond this a message is effectively never set aside. */
export const MAX_MAX_ATTEMPTS = 1000;

/** Ordering and dedupe keys are indexed; 200 characters covers any natural ID plus a prefix. */
export const MAX_KEY_LENGTH = 200;

/** Messages per enqueue call: one statement carries them all, so keep its parameters bounded. */
export const MAX_MESSAGES_PER_ENQUEUE = 1000;

/** Kind names are identifiers that appear in metrics labels and URLs. */
const KIND_PATTERN = /^[a-z][a-z0-9_.:-]{0,62}$/;

/** A typo such as `orderKey` must fail loudly, not silently drop the ordering guarantee. */
const MESSAGE_PROPERTIES = new Set([
  'kind',
  'payload',
  'key',
  'orderingKey',
  'dedupeKey',
  'dueAt',
  'delayMs',
  'maxAttempts',
  'traceContext',
]);

/** A UUID in its text form, as message keys are written. */
export const UUID_PATTERN = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** Checks one kind's payload at enqueue; throws {@link ValidationError} naming the field. */
export type PayloadValidator = (payload: JsonValue, field: string) => void;

/** Kinds known to enqueue, each with an optional payload check. */
export type KindRegistry = ReadonlyMap<string, PayloadValidator | undefined>;

/**
 * Names the receiver a message of one kind goes to (a webhook: its URL's origin), from its
 * payload, at enqueue. Drains keep each destination's health (docs/destinations.md): after
 * failures in a row, or when the receiver asks with Retry-After, the destination is paused and
 * its messages wait, without attempts counted, while every other destination goes on. Return
 * null for a message whose failures say nothing about any other's. Called only with a payload
 * the kind's validator accepted; at most {@link MAX_DESTINATION_NAME_LENGTH} characters.
 */
export type DestinationOf = (payload: JsonValue) => string | null;

/** Destination names are keys of the health table and labels of a metric: short, like a URL's origin. */
export const MAX_DESTINATION_NAME_LENGTH = 300;

/** Whether `value` can be a destination's name: 1 to 300 characters PostgreSQL can store. */
export function isDestinationName(value: unknown): boolean {
  return (
    typeof value === 'string' &&
    value.length > 0 &&
    value.length <= MAX_DESTINATION_NAME_LENGTH &&
    storableTextProblem(value) === undefined
  );
}

export function isValidKindName(kind: string): boolean {
  return KIND_PATTERN.test(kind);
}

/**
 * Validates and normalises what a caller passed to enqueue, one entry per input message, in
 * order. Throws {@link ValidationError} on the first problem, before anything is written.
 */
export function prepareMessages(
  input: unknown,
  kinds: KindRegistry,
  newId: IdGenerator,
  destinations: ReadonlyMap<string, DestinationOf> = new Map(),
  traceSource?: TraceContextSource,
): PreparedMessage[] {
  const list = Array.isArray(input) ? input : [input];
  const single = !Array.isArray(input);
  if (list.length === 0) {
    throw new ValidationError('messages', 'expected at least one message');
  }
  if (list.length > MAX_MESSAGES_PER_ENQUEUE) {
    throw new ValidationError(
      'messages',
      `at most ${MAX_MESSAGES_PER_ENQUEUE} messages per call, got ${list.length}`,
    );
  }
  const prepared: PreparedMessage[] = [];
  const seenKeys = new Set<string>();
  // Read once per call: every message of one enqueue shares the code that wrote it.
  const active = traceSource === undefined ? undefined : activeTraceContext(traceSource);
  list.forEach((candidate, index) => {
    const field = single ? 'message' : `messages[${index}]`;
    const message = prepareMessage(candidate, field, kinds, newId, destinations, active);
    if (seenKeys.has(message.key)) {
      throw new ValidationError(`${field}.key`, 'the same key appears twice in one call');
    }
    seenKeys.add(message.key);
    prepared.push(message);
  });
  return prepared;
}

function prepareMessage(
  candidate: unknown,
  field: string,
  kinds: KindRegistry,
  newId: IdGenerator,
  destinations: ReadonlyMap<string, DestinationOf>,
  activeTrace: TraceContext | undefined,
): PreparedMessage {
  if (!isPlainObject(candidate)) {
    throw new ValidationError(field, 'expected an object with kind and payload');
  }
  const message = candidate as Record<string, unknown>;
  for (const name of Object.keys(message)) {
    if (!MESSAGE_PROPERTIES.has(name)) {
      throw new ValidationError(propertyPath(field, name), 'unknown property');
    }
  }

  const kind = message.kind;
  if (typeof kind !== 'string' || !isValidKindName(kind)) {
    throw new ValidationError(
      `${field}.kind`,
      'expected a kind name: lowercase letters, digits and _ . : - (at most 63 characters)',
    );
  }
  if (!kinds.has(kind)) {
    const registered = [...kinds.keys()].sort().join(', ') || 'none';
    throw new ValidationError(
      `${field}.kind`,
      `unknown kind "${kind}" (registered: ${registered})`,
    );
  }

  if (!('payload' in message)) throw new ValidationError(`${field}.payload`, 'is required');
  assertJson(message.payload, `${field}.payload`);
  const payload = message.payload as JsonValue;
  const payloadJson = JSON.stringify(payload);
  const payloadBytes = new TextEncoder().encode(payloadJson).byteLength;
  if (payloadBytes > MAX_PAYLOAD_BYTES) {
    throw new ValidationError(
      `${field}.payload`,
      `is ${payloadBytes} bytes as JSON; the limit is ${MAX_PAYLOAD_BYTES}`,
    );
  }
  kinds.get(kind)?.(payload, `${field}.payload`);

  let key: string;
  if (message.key === undefined) {
    key = newId();
  } else if (typeof message.key === 'string' && UUID_PATTERN.test(message.key)) {
    key = message.key.toLowerCase();
  } else {
    throw new ValidationError(`${field}.key`, 'expected a UUID');
  }

  return {
    key,
    kind,
    payloadJson,
    orderingKey: optionalKey(message.orderingKey, `${field}.orderingKey`),
    dedupeKey: optionalKey(message.dedupeKey, `${field}.dedupeKey`),
    ...dueTime(message.dueAt, message.delayMs, field),
    maxAttempts: maxAttempts(message.maxAttempts, `${field}.maxAttempts`),
    destination: destinationName(destinations.get(kind), payload, kind),
    ...traceColumns(
      checkTraceContext(message.traceContext, `${field}.traceContext`) ?? activeTrace,
    ),
  };
}

function traceColumns(
  trace: TraceContext | undefined,
): Pick<PreparedMessage, 'traceparent' | 'tracestate'> {
  return { traceparent: trace?.traceparent ?? null, tracestate: trace?.tracestate ?? null };
}

/**
 * The source's trace context, checked as a caller's would be. A source that throws or returns
 * something malformed costs the message its trace, never its enqueue: tracing is an aid, and the
 * domain write must not fail for it.
 */
function activeTraceContext(source: TraceContextSource): TraceContext | undefined {
  try {
    return checkTraceContext(source(), 'traceContext');
  } catch {
    return undefined;
  }
}

/**
 * The kind's destination for `payload`. A name that cannot be stored is the destination
 * function's fault, not the caller's: a configuration error naming the kind, before anything is
 * written.
 */
function destinationName(
  destinationOf: DestinationOf | undefined,
  payload: JsonValue,
  kind: string,
): string | null {
  if (destinationOf === undefined) return null;
  const name = destinationOf(payload);
  if (name === null) return null;
  if (!isDestinationName(name)) {
    throw new ConfigurationError(
      `the destination function of kind "${kind}" returned ${typeof name === 'string' ? `a name it cannot store (${name.length} characters)` : typeof name}: expected null or a storable string of 1 to ${MAX_DESTINATION_NAME_LENGTH} characters`,
    );
  }
  return name;
}

function optionalKey(value: unknown, field: string): string | null {
  if (value === undefined || value === null) return null;
  if (typeof value !== 'string' || value.length === 0 || value.length > MAX_KEY_LENGTH) {
    throw new ValidationError(field, `expected a string of 1 to ${MAX_KEY_LENGTH} characters`);
  }
  checkStorableText(value, field);
  return value;
}

function dueTime(
  dueAt: unknown,
  delayMs: unknown,
  field: string,
): { dueAt: Date | null; delayMs: number } {
  if (dueAt !== undefined && delayMs !== undefined) {
    throw new ValidationError(`${field}.dueAt`, 'give dueAt or delayMs, not both');
  }
  if (dueAt !== undefined) {
    if (!(dueAt instanceof Date) || Number.isNaN(dueAt.getTime())) {
      throw new ValidationError(`${field}.dueAt`, 'expected a valid Date');
    }
    return { dueAt, delayMs: 0 };
  }
  if (delayMs !== undefined) {
    if (typeof delayMs !== 'number' || !Number.isFinite(delayMs) || delayMs < 0) {
      throw new ValidationError(`${field}.delayMs`, 'expected a non-negative number');
    }
    return { dueAt: null, delayMs: Math.round(delayMs) };
  }
  return { dueAt: null, delayMs: 0 };
}

function maxAttempts(value: unknown, field: string): number {
  if (value === undefined) return DEFAULT_MAX_ATTEMPTS;
  if (
    typeof value !== 'number' ||
    !Number.isInteger(value) ||
    value < 1 ||
    value > MAX_MAX_ATTEMPTS
  ) {
    throw new ValidationError(field, `expected an integer from 1 to ${MAX_MAX_ATTEMPTS}`);
  }
  return value;
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return false;
  const prototype = Object.getPrototypeOf(value);
  return prototype === Object.prototype || prototype === null;
}

/**
 * Accepts exactly the values that survive a JSON round trip unchanged, so what the sender reads
 * is what the caller wrote. `JSON.stringify` would silently drop `undefined`, turn `NaN` into
 * null and a `Date` into a string; we refuse those instead, naming the path.
 */
function assertJson(value: unknown, field: string, depth = 0): void {
  if (depth > 64) throw new ValidationError(field, 'is nested more than 64 levels deep');
  switch (typeof value) {
    case 'string':
      checkStorableText(value, field);
      return;
    case 'boolean':
      return;
    case 'number':
      if (!Number.isFinite(value)) throw new ValidationError(field, `${value} is not JSON`);
      return;
    case 'object': {
      if (value === null) return;
      if (Array.isArray(value)) {
        for (const [index, item] of value.entries()) {
          assertJson(item, `${field}[${index}]`, depth + 1);
        }
        return;
      }
      if (!isPlainObject(value)) {
        const name = (value as object).constructor?.name ?? 'object';
        throw new ValidationError(field, `a ${name} is not JSON; convert it first`);
      }
      for (const [name, item] of Object.entries(value)) {
        const path = propertyPath(field, name);
        const problem = storableTextProblem(name);
        if (problem !== undefined) throw new ValidationError(path, `the property name ${problem}`);
        assertJson(item, path, depth + 1);
      }
      return;
    }
    default:
      throw new ValidationError(field, `a ${typeof value} is not JSON`);
  }
}

/**
 * `field.name`, or `field["name"]` with the name JSON-escaped when it holds characters that
 * would make the path itself unprintable or unstorable (NUL, lone surrogates, control
 * characters): error messages are logged and returned to callers.
 */
function propertyPath(field: string, name: string): string {
  // biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what it finds
  const plain = storableTextProblem(name) === undefined && !/[\u0000-\u001f\u007f]/.test(name);
  return plain ? `${field}.${name}` : `${field}[${JSON.stringify(name)}]`;
}
