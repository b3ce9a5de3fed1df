/**
 * One rule for a webhook URL: what an app checks when it registers an endpoint
 * (`checkWebhookUrl` / `webhookUrlProblem`) is exactly what every later enqueue naming that URL
 * checks (the webhook payload validator, inside the core's `prepareMessages`). A URL that passed
 * registration but failed every enqueue would make the endpoint unusable after it was stored.
 */
import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { isValidationError } from '../../src/core/errors.js';
import { type KindRegistry, prepareMessages } from '../../src/core/message.js';
import { BUILT_IN_KINDS } from '../../src/outbox.js';
import {
  checkWebhookUrl,
  MAX_WEBHOOK_URL_LENGTH,
  webhookPayloadValidator,
  webhookUrlProblem,
} from '../../src/senders/webhook/index.js';

const kinds: KindRegistry = new Map(Object.entries(BUILT_IN_KINDS));

const longPath = 'a'.repeat(MAX_WEBHOOK_URL_LENGTH);

/** [what it is, the URL, whether it is a webhook URL]. */
const URLS: readonly [string, string, boolean][] = [
  ['plain https', 'https://hooks.example.com/in', true],
  ['http (allowed in development by the sender)', 'http://hooks.example.com/in', true],
  ['a port, query and fragment', 'https://hooks.example.com:8443/in?x=1#frag', true],
  ['an IP literal', 'https://[2606:4700::1111]/in', true],
  ['a percent-encoded space', 'https://hooks.example.com/a%20b', true],
  ['an internationalised name', 'https://bücher.example/in', true],
  ['an emoji path (a surrogate pair)', 'https://hooks.example.com/🎉', true],
  [
    'exactly the length limit',
    `https://h.example/${longPath}`.slice(0, MAX_WEBHOOK_URL_LENGTH),
    true,
  ],
  [
    'one past the length limit',
    `https://h.example/${longPath}`.slice(0, MAX_WEBHOOK_URL_LENGTH + 1),
    false,
  ],
  ['user and password', 'https://u:p@hooks.example.com/', false],
  ['a user only', 'https://u@hooks.example.com/', false],
  ['a password only', 'https://:p@hooks.example.com/', false],
  ['a NUL', 'https://hooks.example.com/\u0000', false],
  ['a CR LF', 'https://hooks.example.com/in\r\nX-Injected: 1', false],
  ['a tab inside the host', 'https://hooks.exa\tmple.com/', false],
  ['a leading space', ' https://hooks.example.com/', false],
  ['a trailing newline', 'https://hooks.example.com/\n', false],
  ['a space in the path', 'https://hooks.example.com/a b', false],
  ['a no-break space', 'https://hooks.example.com/a\u00a0b', false],
  ['a line separator', 'https://hooks.example.com/a\u2028b', false],
  ['a byte-order mark', '\ufeffhttps://hooks.example.com/', false],
  ['DEL', 'https://hooks.example.com/\u007f', false],
  ['a C1 control', 'https://hooks.example.com/\u0085', false],
  ['a lone high surrogate', 'https://hooks.example.com/\ud800', false],
  ['a lone low surrogate', 'https://hooks.example.com/\udc00x', false],
  ['a relative URL', '/hooks/in', false],
  ['no scheme', 'hooks.example.com/in', false],
  ['file:', 'file:///etc/passwd', false],
  ['javascript:', 'javascript:alert(1)', false],
  ['ftp:', 'ftp://hooks.example.com/', false],
  ['data:', 'data:text/plain,hi', false],
  ['gopher:', 'gopher://127.0.0.1:6379/_FLUSHALL', false],
  ['an empty string', '', false],
  ['a bad IPv6 literal', 'https://[::1::2]/', false],
  ['a bad port', 'https://hooks.example.com:99999/', false],
];

/** The field a check names when it refuses, or undefined when it accepts. */
function refusedField(check: () => unknown): string | undefined {
  try {
    check();
    return undefined;
  } catch (error) {
    if (!isValidationError(error)) throw error;
    return error.field;
  }
}

describe('webhook URL rule', () => {
  it.each(URLS)(
    'a URL accepted by the destination check is accepted by the webhook payload validator and vice versa: %s',
    (_what, url, accepted) => {
      const atRegistration = refusedField(() => checkWebhookUrl(url, 'url'));
      const atValidation = refusedField(() =>
        webhookPayloadValidator({ url, body: {} }, 'payload'),
      );
      const atEnqueue = refusedField(() =>
        prepareMessages({ kind: 'webhook', payload: { url, body: {} } }, kinds, randomUUID),
      );
      expect(atRegistration).toBe(accepted ? undefined : 'url');
      expect(webhookUrlProblem(url) === undefined).toBe(accepted);
      expect(atValidation).toBe(accepted ? undefined : 'payload.url');
      expect(atEnqueue).toBe(accepted ? undefined : 'message.payload.url');
    },
  );

  it('returns the URL parsed as the sender will call it', () => {
    expect(checkWebhookUrl('https://Hooks.Example.com:443/in?x=1', 'url').href).toBe(
      'https://hooks.example.com/in?x=1',
    );
  });

  it('refuses a value that is not a string, naming the field', () => {
    for (const value of [undefined, null, 42, {}, ['https://hooks.example.com/']]) {
      expect(refusedField(() => checkWebhookUrl(value, 'endpoint.url'))).toBe('endpoint.url');
    }
  });

  it('says why, for a person reading the 400', () => {
    expect(webhookUrlProblem('https://u:p@hooks.example.com/')).toContain('password');
    expect(webhookUrlProblem('https://hooks.example.com/a b')).toContain('whitespace');
    expect(webhookUrlProblem('https://hooks.example.com/\ud800')).toContain('lone surrogate');
    expect(webhookUrlProblem('ftp://hooks.example.com/')).toContain('ftp:');
  });
});
