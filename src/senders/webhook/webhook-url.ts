/**
 * The one rule for the form of a webhook URL. The webhook payload validator applies it at every
 * enqueue; an app that stores endpoints (a registration route, a CLI) applies it when the URL is
 * registered, so nothing can be stored that every later enqueue naming it would refuse.
 *
 * Form only: whether the host may be called (the SSRF rules) is decided when sending, by the
 * destination policy, because DNS answers change and the rules depend on the sender's settings.
 */
import { ValidationError } from '../../core/errors.js';
import { storableTextProblem } from '../../core/storable-text.js';

/** Browsers and proxies commonly refuse longer URLs; a longer one is a bug, not an endpoint. */
export const MAX_WEBHOOK_URL_LENGTH = 2048;

/**
 * C0 and C1 controls, DEL, and every Unicode space or line break (`\s`: tab, space, NBSP,
 * U+2028, BOM, ...). The URL parser would quietly strip some (leading spaces, tabs, newlines)
 * and percent-encode others, so the URL called would differ from the text stored and shown;
 * CR and LF in a stored URL also invite header and log injection. No real endpoint needs them.
 */
// biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what it finds
const CONTROL_OR_WHITESPACE = /[\u0000-\u001f\u007f-\u009f\s]/u;

/**
 * Why `url` cannot be a webhook URL, or `undefined` when it can. Refused: an empty or over-long
 * string ({@link MAX_WEBHOOK_URL_LENGTH}), text PostgreSQL cannot store (NUL, lone surrogates),
 * control characters or whitespace anywhere, anything that is not an absolute URL, a scheme other
 * than http or https, and a user name or password (the URL is stored and logged in clear).
 *
 * @example
 * webhookUrlProblem('https://hooks.customer.example/outbox'); // undefined
 * webhookUrlProblem('https://u:p@hooks.customer.example/'); // 'must not hold a user name ...'
 */
export function webhookUrlProblem(url: string): string | undefined {
  const parsed = parseWebhookUrl(url);
  return typeof parsed === 'string' ? parsed : undefined;
}

/**
 * Checks `value` as a webhook URL and returns it parsed; throws {@link ValidationError} naming
 * `field` otherwise. Accepts exactly what {@link webhookUrlProblem} accepts.
 *
 * @example
 * async function registerEndpoint(db: SqlExecutor, body: { url?: unknown }) {
 *   const url = checkWebhookUrl(body.url, 'url'); // before storing it, so every enqueue passes
 *   await db.query('INSERT INTO my_hooks (url) VALUES ($1)', [url.href]);
 * }
 */
export function checkWebhookUrl(value: unknown, field: string): URL {
  if (typeof value !== 'string' || value.length === 0) {
    throw new ValidationError(field, 'expected a non-empty string');
  }
  const parsed = parseWebhookUrl(value);
  if (typeof parsed === 'string') throw new ValidationError(field, parsed);
  return parsed;
}

/** The parsed URL, or the reason there is none. */
function parseWebhookUrl(text: string): URL | string {
  if (text.length === 0) return 'expected a non-empty string';
  if (text.length > MAX_WEBHOOK_URL_LENGTH) {
    return `is ${text.length} characters; the limit is ${MAX_WEBHOOK_URL_LENGTH}`;
  }
  const unstorable = storableTextProblem(text);
  if (unstorable !== undefined) return unstorable;
  if (CONTROL_OR_WHITESPACE.test(text)) {
    return 'must not contain control characters or whitespace (percent-encode a space as %20)';
  }
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    return 'is not an absolute URL';
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') {
    return `must be http or https, not ${url.protocol}`;
  }
  if (url.username !== '' || url.password !== '') {
    return 'must not hold a user name or password: the URL is stored and logged in clear';
  }
  return url;
}
