import { ValidationError } from '../../core/errors.js';
import type { DestinationOf, JsonValue, PayloadValidator } from '../../core/message.js';
import {
  expectHeaderSafeString,
  expectObject,
  rejectUnknownProperties,
} from '../payload-checks.js';
import { checkWebhookUrl } from './webhook-url.js';

/**
 * The payload of a `kind: "webhook"` message.
 *
 * No signing secret ever travels in the payload: payloads are stored in the outbox table, shown
 * in the admin API and copied into logs. The sender finds the secret from its config, usually by
 * `endpointId` (see `webhookSender`'s `secretFor`).
 *
 * @example
 * const payload: WebhookPayload = {
 *   url: 'https://hooks.customer.example/outbox',
 *   endpointId: 'ep_42',
 *   event: 'invoice.paid',
 *   body: { invoiceId: 'inv_1', amount: 1200 },
 * };
 */
export type WebhookPayload = {
  /** Where to POST: an absolute http(s) URL, no user:password part (see `webhookUrlProblem`). */
  url: string;
  /**
   * The event type. When given, the request body is the Standard Webhooks envelope
   * `{"type": event, "timestamp": <ISO time the message was enqueued>, "data": body}`, so the
   * type is covered by the signature; without it, `body` is sent as it is.
   */
  event?: string;
  /** Any JSON, sent as the request body (or as `data` in the envelope). */
  body: JsonValue;
  /** Your ID for the receiving endpoint: how `secretFor` finds the signing secret. */
  endpointId?: string;
};

/** Event types are short dotted names (`invoice.paid`); this leaves plenty of room. */
const MAX_EVENT_LENGTH = 200;

/** Matches the core's ordering and dedupe keys: room for any natural ID plus a prefix. */
const MAX_ENDPOINT_ID_LENGTH = 200;

const WEBHOOK_PROPERTIES = new Set(['url', 'event', 'body', 'endpointId']);

/**
 * Checks a webhook payload at enqueue, throwing `ValidationError` naming the field. It checks
 * the URL's form only, with `checkWebhookUrl`; whether its host may be called (the SSRF rules)
 * is decided when sending, because DNS answers change and the rules depend on the sender's
 * configuration.
 */
export const webhookPayloadValidator: PayloadValidator = (payload, field) => {
  parseWebhookPayload(payload, field);
};

/** A validated webhook payload, with its URL parsed once. */
export interface ParsedWebhook {
  payload: WebhookPayload;
  url: URL;
}

/** Validates a webhook payload and returns it typed; throws `ValidationError` on the first problem. */
export function parseWebhookPayload(payload: JsonValue, field: string): ParsedWebhook {
  const webhook = expectObject(payload, field, 'a webhook payload object with url and body');
  if ('secret' in webhook) {
    throw new ValidationError(
      `${field}.secret`,
      'a signing secret must never be stored in a payload; configure it on the sender (secretFor) and pass endpointId',
    );
  }
  rejectUnknownProperties(webhook, field, WEBHOOK_PROPERTIES);

  if (!('url' in webhook)) throw new ValidationError(`${field}.url`, 'is required');
  // The same rule an app applies when it registers the endpoint (`checkWebhookUrl`).
  const url = checkWebhookUrl(webhook.url, `${field}.url`);
  const urlText = webhook.url as string;

  if (!('body' in webhook)) throw new ValidationError(`${field}.body`, 'is required (any JSON)');

  const parsed: WebhookPayload = { url: urlText, body: webhook.body as JsonValue };
  if (webhook.event !== undefined) {
    parsed.event = expectHeaderSafeString(webhook.event, `${field}.event`, MAX_EVENT_LENGTH);
  }
  if (webhook.endpointId !== undefined) {
    parsed.endpointId = expectHeaderSafeString(
      webhook.endpointId,
      `${field}.endpointId`,
      MAX_ENDPOINT_ID_LENGTH,
    );
  }
  return { payload: parsed, url };
}

/**
 * A webhook's destination, for destination health: its URL's origin (scheme, host and port),
 * so every endpoint of one receiver shares its health, and a receiver that is down pauses its
 * own messages alone. Never the path or query (which may hold a customer's token), which keeps
 * the name fit for a metric label. Called after {@link webhookPayloadValidator}.
 */
export const webhookDestination: DestinationOf = (payload) =>
  new URL((payload as { url: string }).url).origin;
