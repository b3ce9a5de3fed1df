import { destinationOf } from '../../core/attempt-facts.js';
import {
  ConfigurationError,
  describeError,
  isOutboxError,
  isValidationError,
  PermanentDeliveryError,
  RetryableDeliveryError,
} from '../../core/errors.js';
import { type Clock, systemClock } from '../../core/ports.js';
import type { DeliveryReceipt, OutboundMessage, SendContext, Sender } from '../../core/sender.js';
import { storableText } from '../../core/storable-text.js';
import { traceHeaders } from '../../core/trace-context.js';
import {
  connectingFetch,
  type DestinationPolicyOptions,
  destinationCheck,
} from './destination-policy.js';
import { retryAfterMs } from './retry-after.js';
import { type ParsedWebhook, parseWebhookPayload, type WebhookPayload } from './webhook-payload.js';
import { decodeWebhookSecret, keptSigners } from './webhook-signature.js';

/**
 * Finds the signing secret for one message, e.g. by `payload.endpointId` in your endpoints table.
 * Each call is counted as {@link WebhookSenderConfig.secretLookupSubrequests} subrequests before
 * it is made; within one drain the secret of an `endpointId` is looked up once.
 */
export type WebhookSecretLookup = (
  message: OutboundMessage,
  payload: WebhookPayload,
) => Promise<string | undefined> | string | undefined;

export interface WebhookSenderConfig extends DestinationPolicyOptions {
  /** One `whsec_` secret for every endpoint. Give this or `secretFor`. */
  secret?: string;
  /**
   * The `whsec_` secret for this message's endpoint. `undefined` (endpoint deleted or disabled)
   * is a permanent failure; a thrown error (database down) is retryable.
   */
  secretFor?: WebhookSecretLookup;
  /**
   * Subrequests one `secretFor` call makes, counted against the drain's budget before it is
   * made. Default {@link DEFAULT_SECRET_LOOKUP_SUBREQUESTS}; 0 for a lookup that reads memory;
   * a function when it depends on the payload (a shared secret for payloads naming no
   * endpoint costs nothing, a table read for those that do costs one).
   */
  secretLookupSubrequests?: number | ((payload: WebhookPayload) => number);
  /** Source of `webhook-timestamp`, and of "now" for `Retry-After` dates. Default: system clock. */
  clock?: Clock;
  /** Default {@link DEFAULT_WEBHOOK_USER_AGENT}. */
  userAgent?: string;
}

/**
 * One subrequest per secret lookup: the typical `secretFor` is one SQL read, and over Neon HTTP
 * on Workers that read is a subrequest like any other.
 */
export const DEFAULT_SECRET_LOOKUP_SUBREQUESTS = 1;

/** Names us in receivers' logs, so their operators know whom to call. */
export const DEFAULT_WEBHOOK_USER_AGENT = 'outbox-relay-webhooks/1';

/**
 * 200 characters of the response body go into the error, and so into `last_error`: enough for
 * a typical JSON error (`{"error":"invalid signature"}`), not enough to fill the table with
 * an HTML error page.
 */
export const RESPONSE_SNIPPET_CHARACTERS = 200;

/** Bytes read for the snippet; the rest of the body is discarded unread. */
const RESPONSE_SNIPPET_BYTES = 1024;

/**
 * Statuses that mean "not now" rather than "no": timeout, too early, too many requests.
 * Every 5xx is retryable too.
 */
const RETRYABLE_STATUSES = new Set([408, 425, 429]);

/**
 * A sender for `kind: "webhook"`: POSTs JSON signed per Standard Webhooks.
 *
 * Each request carries `webhook-id` (the outbox message key: the same on every retry, so the
 * receiver deduplicates on it), `webhook-timestamp` (the time of this attempt, in Unix seconds)
 * and `webhook-signature`, and the W3C `traceparent` (and `tracestate`) of a message enqueued
 * under a trace. The body is the payload's `body`, or the envelope
 * `{type, timestamp, data}` when the payload names an `event`.
 *
 * Before connecting, the URL must pass the destination policy (the SSRF guard: https only in
 * production; no loopback, private, link-local, metadata or other internal address, by literal,
 * by name or by what the name resolves to; `allowHosts` for exceptions). A refused URL is a
 * `PermanentDeliveryError` and no connection is made. With `resolveHost: nodeHostResolver` the
 * connection resolves the name through it again and goes only to an address that passes, so a
 * name that rebinds to a private address after the check is refused too.
 *
 * | Response | Outcome |
 * | --- | --- |
 * | 2xx | delivered |
 * | 3xx | permanent, naming the `Location`: redirects are not followed |
 * | 408, 425, 429, 5xx | retryable, with `Retry-After` (seconds or HTTP date) as `retryAfterMs` |
 * | 410 | permanent: the endpoint is gone |
 * | other 4xx | permanent |
 * | network error, timeout | retryable |
 *
 * Error messages name the status, the first 200 characters of the response body, and the URL's
 * scheme, host and path: never its query string, where tokens most often travel (the URL is in
 * the message's payload, which operators see anyway). Every attempt reports its status and that
 * destination to attempt history: a delivery resolves with them as its receipt, a failure
 * carries them on its error, with the network error's code (`ECONNREFUSED`) as `providerCode`.
 *
 * Uses the global `fetch` and `crypto.subtle`: runs on Node 20+, Lambda and Workers.
 *
 * @example
 * import { webhookSender } from 'outbox-relay/webhook';
 * import { nodeHostResolver } from 'outbox-relay/node';
 *
 * const webhook = webhookSender({
 *   secretFor: async (_message, { endpointId }) => {
 *     const { rows } = await db.query(
 *       'SELECT secret FROM my_hooks WHERE id = $1 AND enabled',
 *       [endpointId],
 *     );
 *     return rows[0]?.secret as string | undefined; // undefined: the endpoint is gone, the message dead-lettered
 *   },
 *   resolveHost: nodeHostResolver,
 * });
 */
export function webhookSender(config: WebhookSenderConfig): Sender {
  const lookupSecret = secretSource(config);
  const checkDestination = destinationCheck(config);
  // On Node with nodeHostResolver: a fetch that connects only to addresses that pass.
  const send = connectingFetch(config);
  const clock = config.clock ?? systemClock;
  const userAgent = config.userAgent ?? DEFAULT_WEBHOOK_USER_AGENT;
  const signerFor = keptSigners();

  return async (message, signal, context) => {
    let webhook: ParsedWebhook;
    try {
      webhook = parseWebhookPayload(message.payload, 'payload');
    } catch (error) {
      if (!isValidationError(error)) throw error;
      throw new PermanentDeliveryError(`invalid webhook payload: ${error.message}`, {
        cause: error,
      });
    }
    const { payload, url } = webhook;
    const destination = destinationOf(url.href) ?? url.origin;
    await checkDestination(url, signal);
    const secret = await lookupSecret(message, payload, context);

    const body = JSON.stringify(
      payload.event === undefined
        ? payload.body
        : { type: payload.event, timestamp: message.createdAt.toISOString(), data: payload.body },
    );
    const signature = await signerFor(secret)({ id: message.key, timestamp: clock.now(), body });

    let response: Response;
    try {
      response = await send(url, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          'user-agent': userAgent,
          ...signature,
          // The receiver's work joins the trace of the request that wrote the message.
          ...traceHeaders(message.traceContext),
        },
        body,
        // A redirect could lead anywhere, past the destination check: report it instead.
        redirect: 'manual',
        signal,
      });
    } catch (error) {
      // The connection refused the address the name now resolves to: the check's own verdict.
      const cause = error instanceof Error ? error.cause : undefined;
      if (isOutboxError(cause)) throw cause;
      if (signal.aborted) {
        throw new RetryableDeliveryError(
          `webhook to ${destination} abandoned: the send's time was up before a response`,
          { cause: error, destination },
        );
      }
      throw new RetryableDeliveryError(
        `webhook to ${destination} failed: ${networkFailure(error)}`,
        {
          cause: error,
          destination,
          providerCode: networkCode(error),
        },
      );
    }
    return failUnlessDelivered(response, destination, signal, clock);
  };
}

/** Throws the outcome of a non-2xx response; resolves for 2xx with the receipt. */
async function failUnlessDelivered(
  response: Response,
  destination: string,
  signal: AbortSignal,
  clock: Clock,
): Promise<DeliveryReceipt> {
  const { status } = response;
  if (status >= 200 && status < 300) {
    await discardBody(response);
    return { status, destination };
  }
  // Browsers hide manual redirects as an opaque response with status 0.
  if (response.type === 'opaqueredirect' || (status >= 300 && status < 400)) {
    await discardBody(response);
    const location = response.headers.get('location');
    throw new PermanentDeliveryError(
      `webhook to ${destination} answered HTTP ${status} redirecting to ${location ?? '(no Location)'}; redirects are not followed: update the endpoint URL`,
      { status, destination },
    );
  }
  const snippet = await bodySnippet(response, signal);
  const what = `webhook to ${destination} answered HTTP ${status}${snippet === '' ? '' : `: ${snippet}`}`;
  const details = { status, destination };
  if (RETRYABLE_STATUSES.has(status) || status >= 500) {
    const waitMs = retryAfterMs(response.headers.get('retry-after'), clock.now());
    throw new RetryableDeliveryError(
      what,
      waitMs === undefined ? details : { ...details, retryAfterMs: waitMs },
    );
  }
  if (status === 410) {
    throw new PermanentDeliveryError(
      `${what} (410 Gone: the receiver retired this endpoint)`,
      details,
    );
  }
  if (status >= 400) throw new PermanentDeliveryError(what, details);
  throw new RetryableDeliveryError(`${what} (an unexpected status)`, details);
}

type SecretSource = (
  message: OutboundMessage,
  payload: WebhookPayload,
  context: SendContext | undefined,
) => Promise<string>;

function secretSource(config: WebhookSenderConfig): SecretSource {
  const { secret, secretFor } = config;
  if ((secret === undefined) === (secretFor === undefined)) {
    throw new ConfigurationError('webhook sender: give exactly one of secret and secretFor');
  }
  if (secret !== undefined) {
    try {
      decodeWebhookSecret(secret);
    } catch (error) {
      throw new ConfigurationError(`webhook sender: ${describeError(error)}`, { cause: error });
    }
    return async () => secret;
  }
  const configured = config.secretLookupSubrequests ?? DEFAULT_SECRET_LOOKUP_SUBREQUESTS;
  const lookupSubrequests = (payload: WebhookPayload): number => {
    const count = typeof configured === 'function' ? configured(payload) : configured;
    if (!Number.isInteger(count) || count < 0) {
      throw new ConfigurationError(
        `webhook sender: secretLookupSubrequests must be a whole number >= 0, got ${count}`,
      );
    }
    return count;
  };
  // A fixed count is checked now, at configuration; a function's answer when it is called.
  if (typeof configured === 'number' && !(Number.isInteger(configured) && configured >= 0)) {
    throw new ConfigurationError(
      `webhook sender: secretLookupSubrequests must be a whole number >= 0, got ${configured}`,
    );
  }
  const lookup = checkedLookup(secretFor!);
  // Secrets by drain run, then by endpoint: a drain reads each endpoint's secret once (a batch
  // of webhooks to one endpoint costs one read), and the next drain sees a disabled endpoint.
  const byRun = new WeakMap<object, Map<string, Promise<string>>>();
  return (message, payload, context) => {
    const endpointId = payload.endpointId;
    if (context === undefined || endpointId === undefined) {
      const count = lookupSubrequests(payload);
      if (count > 0) context?.spend(count, 'webhook secret lookup');
      return lookup(message, payload);
    }
    let secrets = byRun.get(context.run);
    if (secrets === undefined) {
      secrets = new Map();
      byRun.set(context.run, secrets);
    }
    let found = secrets.get(endpointId);
    if (found === undefined) {
      // Counted before the read; throws (nothing remembered) when the budget cannot cover it.
      context.spend(lookupSubrequests(payload), `webhook secret lookup for endpoint ${endpointId}`);
      found = lookup(message, payload);
      secrets.set(endpointId, found);
      // A failed read is not remembered: the next message of this drain tries again.
      const remembered = secrets;
      found.catch(() => remembered.delete(endpointId));
    }
    return found;
  };
}

/** `secretFor` with its outcomes mapped: not found is permanent, a thrown error retryable. */
function checkedLookup(
  secretFor: WebhookSecretLookup,
): (message: OutboundMessage, payload: WebhookPayload) => Promise<string> {
  return async (message, payload) => {
    const endpoint =
      payload.endpointId === undefined ? 'this webhook' : `endpoint ${payload.endpointId}`;
    let found: string | undefined;
    try {
      found = await secretFor(message, payload);
    } catch (error) {
      if (isOutboxError(error)) throw error;
      throw new RetryableDeliveryError(
        `webhook: could not look up the signing secret for ${endpoint}: ${describeError(error)}`,
        { cause: error },
      );
    }
    if (found === undefined) {
      throw new PermanentDeliveryError(
        `webhook: no signing secret for ${endpoint} (deleted or disabled?); nothing was sent`,
      );
    }
    try {
      decodeWebhookSecret(found);
    } catch (error) {
      throw new PermanentDeliveryError(
        `webhook: the signing secret for ${endpoint} is unusable: ${describeError(error)}`,
        { cause: error },
      );
    }
    return found;
  };
}

/**
 * Up to {@link RESPONSE_SNIPPET_CHARACTERS} of the body on one line, then `…` if there was more;
 * '' if unreadable. Invalid UTF-8 reads as U+FFFD, and NUL and control characters are made
 * readable as the stored error will have them (see storableText).
 */
async function bodySnippet(response: Response, signal: AbortSignal): Promise<string> {
  if (response.body === null || signal.aborted) return '';
  const reader = response.body.getReader();
  const chunks: Uint8Array[] = [];
  let received = 0;
  try {
    while (received < RESPONSE_SNIPPET_BYTES) {
      const { done, value } = await reader.read();
      if (done) break;
      chunks.push(value);
      received += value.byteLength;
    }
  } catch {
    // The snippet is a courtesy: a body that fails mid-read still leaves the status to report.
  } finally {
    reader.cancel().catch(() => {});
  }
  const bytes = new Uint8Array(received);
  let offset = 0;
  for (const chunk of chunks) {
    bytes.set(chunk, offset);
    offset += chunk.byteLength;
  }
  // stream: a character the byte limit cut in two is left out rather than shown as U+FFFD.
  const text = new TextDecoder().decode(bytes, { stream: true }).replace(/\s+/g, ' ').trim();
  return storableText(text, RESPONSE_SNIPPET_CHARACTERS + 1);
}

/** Frees the connection for reuse without reading a body nobody needs. */
async function discardBody(response: Response): Promise<void> {
  await response.body?.cancel().catch(() => {});
}

/** The system code of a network failure (`ECONNREFUSED`), from the error or its cause. */
function networkCode(error: unknown): string | undefined {
  for (const each of [error instanceof Error ? error.cause : undefined, error]) {
    if (typeof each === 'object' && each !== null && 'code' in each) {
      if (typeof each.code === 'string') return each.code;
    }
  }
  return undefined;
}

/** fetch says only "fetch failed"; the reason (ECONNREFUSED, a TLS error) is in `cause`. */
function networkFailure(error: unknown): string {
  const cause = error instanceof Error ? error.cause : undefined;
  return cause === undefined
    ? describeError(error)
    : `${describeError(error)} (${describeError(cause)})`;
}
