/**
 * Standard Webhooks signing (https://www.standardwebhooks.com): HMAC-SHA256 over
 * `${webhook-id}.${webhook-timestamp}.${body}`, keyed with the base64 bytes of a `whsec_` secret,
 * sent as `v1,<base64 signature>`. WebCrypto only, so it runs on Workers, Node and Lambda alike;
 * receivers verify with the `standardwebhooks` package or any implementation of the spec.
 */

/** The prefix Standard Webhooks secrets carry, which tells them apart from other keys. */
export const WEBHOOK_SECRET_PREFIX = 'whsec_';

/** The spec asks for keys of 24 to 64 bytes: shorter is guessable, longer gains nothing for HMAC-SHA256. */
const MIN_SECRET_BYTES = 24;
const MAX_SECRET_BYTES = 64;

/** 32 bytes: the HMAC-SHA256 block's natural key size, inside the spec's range. */
const GENERATED_SECRET_BYTES = 32;

/** The header values for one request. */
export interface WebhookSignatureHeaders {
  'webhook-id': string;
  'webhook-timestamp': string;
  'webhook-signature': string;
}

/**
 * The key bytes of a `whsec_...` secret. Throws `Error` saying what is wrong (prefix, base64,
 * length) without echoing the secret.
 */
export function decodeWebhookSecret(secret: string): Uint8Array<ArrayBuffer> {
  if (!secret.startsWith(WEBHOOK_SECRET_PREFIX)) {
    throw new Error(`a webhook secret must start with ${WEBHOOK_SECRET_PREFIX}`);
  }
  let binary: string;
  try {
    binary = atob(secret.slice(WEBHOOK_SECRET_PREFIX.length));
  } catch {
    throw new Error(`a webhook secret is ${WEBHOOK_SECRET_PREFIX} followed by base64`);
  }
  if (binary.length < MIN_SECRET_BYTES || binary.length > MAX_SECRET_BYTES) {
    throw new Error(
      `a webhook secret must hold ${MIN_SECRET_BYTES} to ${MAX_SECRET_BYTES} bytes, this one holds ${binary.length}`,
    );
  }
  return Uint8Array.from(binary, (character) => character.charCodeAt(0));
}

/**
 * Signs one request: returns the three Standard Webhooks headers for `body`, which must be sent
 * byte for byte as signed.
 *
 * @example
 * const post: Sender = async (message, signal) => {
 *   const body = JSON.stringify(message.payload);
 *   const secret = env.WEBHOOK_SECRET;
 *   const signed = await signWebhook({ secret, id: message.key, timestamp: new Date(), body });
 *   const headers = { ...signed, 'content-type': 'application/json' };
 *   await fetch('https://hooks.example.com/outbox', { method: 'POST', headers, body, signal });
 * };
 */
export async function signWebhook(request: {
  secret: string;
  id: string;
  timestamp: Date;
  body: string;
}): Promise<WebhookSignatureHeaders> {
  const seconds = String(Math.floor(request.timestamp.getTime() / 1000));
  const key = await crypto.subtle.importKey(
    'raw',
    decodeWebhookSecret(request.secret),
    { name: 'HMAC', hash: 'SHA-256' },
    false,
    ['sign'],
  );
  const signed = new TextEncoder().encode(`${request.id}.${seconds}.${request.body}`);
  const signature = new Uint8Array(await crypto.subtle.sign('HMAC', key, signed));
  return {
    'webhook-id': request.id,
    'webhook-timestamp': seconds,
    'webhook-signature': `v1,${base64(signature)}`,
  };
}

/** A new random `whsec_` secret, for creating an endpoint. Show it to its owner once. */
export function generateWebhookSecret(): string {
  return `${WEBHOOK_SECRET_PREFIX}${base64(crypto.getRandomValues(new Uint8Array(GENERATED_SECRET_BYTES)))}`;
}

function base64(bytes: Uint8Array): string {
  let binary = '';
  for (const byte of bytes) binary += String.fromCharCode(byte);
  return btoa(binary);
}
