/**
 * What one attempt leaves in a message's attempt history: when it started, how long it took,
 * and what the sender said of it (status, provider code, destination), made storable here, in
 * the core, before anything reaches the settle statement. A sender is user code and a provider's
 * answer is anyone's bytes: nothing in them may fail a settle, and nothing a sender hands over by
 * mistake (a URL's password or query string) is kept.
 */
import type { DeliveryDetails } from './errors.js';
import { storableText } from './storable-text.js';

/** One attempt as the drain records it. Built only by {@link attemptFacts}. */
export interface AttemptFacts {
  /** When the send started, by the drain's clock. */
  readonly startedAt: Date;
  /** How long the send took, whole ms, measured by the drain (a timed-out send: its timeout). */
  readonly durationMs: number;
  /** The HTTP status, when the sender reported one from 100 to 599. */
  readonly status: number | null;
  readonly providerCode: string | null;
  readonly destination: string | null;
}

/**
 * What a delivery keeps: its status and duration (history holds nothing more for it). Built only
 * by {@link deliveryFacts}.
 */
export interface DeliveryFacts {
  readonly status: number | null;
  readonly durationMs: number;
}

/** A delivery's facts from its measured duration and the sender's receipt, checked as below. */
export function deliveryFacts(durationMs: number, receipt: unknown): DeliveryFacts {
  const status =
    typeof receipt === 'object' && receipt !== null
      ? checkedStatus(readDetails(receipt).status)
      : null;
  return { status, durationMs: checkedDuration(durationMs) };
}

/** HTTP's status range: anything outside it is not a status, whatever a sender says. */
const LOWEST_STATUS = 100;
const HIGHEST_STATUS = 599;

/** Provider codes are short identifiers (`Throttling`, `ECONNREFUSED`); longer is not a code. */
export const MAX_PROVIDER_CODE_LENGTH = 100;

/** A destination is a URL without its query, or a name: 300 characters hold any sane one. */
export const MAX_DESTINATION_LENGTH = 300;

/**
 * The longest duration recorded, ms: the largest int4, about 24.8 days. No send lasts that long
 * (the drain's timeout cuts it), so only a clock that jumped gets here.
 */
const MAX_DURATION_MS = 2 ** 31 - 1;

/**
 * The facts of one attempt from what the drain measured and what the sender reported, each
 * checked: a status that is not a whole number from 100 to 599 is dropped; a code and a
 * destination that are not strings are dropped, and the rest made storable within their limits
 * ({@link storableText}); a URL destination keeps only its scheme, host (and port) and path.
 * Never throws, whatever `reported` holds (getters that throw included).
 */
export function attemptFacts(startedAt: Date, durationMs: number, reported: unknown): AttemptFacts {
  const details = readDetails(reported);
  return {
    startedAt,
    durationMs: checkedDuration(durationMs),
    status: checkedStatus(details.status),
    providerCode:
      typeof details.providerCode === 'string' && details.providerCode !== ''
        ? storableText(details.providerCode, MAX_PROVIDER_CODE_LENGTH)
        : null,
    destination:
      typeof details.destination === 'string' ? destinationOf(details.destination) : null,
  };
}

/** The three fields of a receipt or a delivery error, read once; {} from anything else. */
function readDetails(reported: unknown): DeliveryDetails {
  if (typeof reported !== 'object' || reported === null) return {};
  try {
    const { status, providerCode, destination } = reported as Record<string, unknown>;
    return {
      status: typeof status === 'number' ? status : undefined,
      providerCode: typeof providerCode === 'string' ? providerCode : undefined,
      destination: typeof destination === 'string' ? destination : undefined,
    };
  } catch {
    return {};
  }
}

function checkedDuration(durationMs: number): number {
  return Number.isFinite(durationMs)
    ? Math.min(MAX_DURATION_MS, Math.max(0, Math.round(durationMs)))
    : 0;
}

function checkedStatus(status: unknown): number | null {
  return typeof status === 'number' &&
    Number.isInteger(status) &&
    status >= LOWEST_STATUS &&
    status <= HIGHEST_STATUS
    ? status
    : null;
}

/**
 * `destination` as attempt history keeps it: an http(s) URL as scheme, host and path (never the
 * user name, password, query or fragment: those hold credentials and tokens more often than
 * paths do, and history is shown to every operator); anything else, such as `ses:eu-west-1`,
 * as text made storable. Null when empty.
 */
export function destinationOf(destination: string): string | null {
  if (destination === '') return null;
  let text = destination;
  if (/^https?:/i.test(destination) && URL.canParse(destination)) {
    const url = new URL(destination);
    text = `${url.protocol}//${url.host}${url.pathname}`;
  }
  return storableText(text, MAX_DESTINATION_LENGTH);
}

/**
 * At most 1 KiB of an attempt's error: enough for a provider's message and a snippet of the
 * response, and a hundred attempts of a message still fit in about 100 KiB.
 */
export const MAX_ATTEMPT_ERROR_BYTES = 1024;

/**
 * `error` within {@link MAX_ATTEMPT_ERROR_BYTES} of UTF-8, made storable and readable as
 * {@link storableText} does, cut between two characters and ending in `…` when cut.
 *
 * @example
 * attemptErrorExcerpt('x'.repeat(5000)).length; // 1022: 1,021 x and the 3-byte '…'
 */
export function attemptErrorExcerpt(error: string): string {
  // Each UTF-16 code unit is at most 3 bytes of UTF-8, so this bounds the work.
  const text = storableText(error, MAX_ATTEMPT_ERROR_BYTES);
  let bytes = 0;
  for (let index = 0; index < text.length; index++) {
    const code = text.charCodeAt(index);
    // A surrogate pair is 4 bytes for two code units: 2 each.
    const size = code < 0x80 ? 1 : code < 0x800 ? 2 : code >= 0xd800 && code <= 0xdfff ? 2 : 3;
    if (bytes + size > MAX_ATTEMPT_ERROR_BYTES)
      return cutToBytes(text, MAX_ATTEMPT_ERROR_BYTES - 3);
    bytes += size;
  }
  return text;
}

/** `text` cut to at most `room` bytes of UTF-8 on a character boundary, then `…`. */
function cutToBytes(text: string, room: number): string {
  let bytes = 0;
  let end = 0;
  while (end < text.length) {
    const code = text.charCodeAt(end);
    const pair = code >= 0xd800 && code <= 0xdbff && end + 1 < text.length;
    const size = code < 0x80 ? 1 : code < 0x800 ? 2 : pair ? 4 : 3;
    if (bytes + size > room) break;
    bytes += size;
    end += pair ? 2 : 1;
  }
  return `${text.slice(0, end)}…`;
}
