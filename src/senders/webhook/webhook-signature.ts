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
  return webhookSigner(request.secret)(request);
}

/** Signs requests with one secret; see {@link webhookSigner}. */
export type WebhookSigner = (request: {
  id: string;
  timestamp: Date;
  body: string;
}) => Promise<WebhookSignatureHeaders>;

/**
 * A signer for one secret: imports its key once, then signs each request as
 * {@link signWebhook} does. Importing is most of signing's cost on Node 20: 142 to 185 µs of
 * CPU per signature imported each time, 45 to 76 µs imported once. Keep one per secret when
 * you sign many requests. Throws `Error` at once for a malformed secret.
 */
export function webhookSigner(secret: string): WebhookSigner {
  const key = crypto.subtle.importKey(
    'raw',
    decodeWebhookSecret(secret),
    { name: 'HMAC', hash: 'SHA-256' },
    false,
    ['sign'],
  );
  // Awaited by every signature; a signer never used must not leave a rejection unhandled.
  key.catch(() => {});
  return async ({ id, timestamp, body }) => {
    const seconds = String(Math.floor(timestamp.getTime() / 1000));
    const signed = new TextEncoder().encode(`${id}.${seconds}.${body}`);
    const signature = new Uint8Array(await crypto.subtle.sign('HMAC', await key, signed));
    return {
      'webhook-id': id,
      'webhook-timestamp': seconds,
      'webhook-signature': `v1,${base64(signature)}`,
    };
  };
}

/** Signers a sender keeps, one per secret: past this many, the one used longest ago goes. */
const SIGNERS_KEPT = 256;

/**
 * Each secret's signer, its key imported once (a webhook drain's profile once showed a seventh
 * of its JavaScript time in WebCrypto, importing the key again for every message). One per
 * webhook sender, not per module, so a secret lives no longer than the sender that was given
 * it; a rotated secret is a new entry.
 */
export function keptSigners(): (secret: string) => WebhookSigner {
  const kept = new Map<string, WebhookSigner>();
  return (secret) => {
    let signer = kept.get(secret);
    if (signer) {
      // Most recently used last, so the first entry is the one to drop.
      kept.delete(secret);
    } else {
      signer = webhookSigner(secret);
      if (kept.size >= SIGNERS_KEPT) kept.delete(kept.keys().next().value!);
    }
    kept.set(secret, signer);
    return signer;
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
