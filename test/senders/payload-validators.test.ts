import { describe, expect, it } from 'vitest';
import { isValidationError } from '../../src/core/errors.js';
import type { JsonValue } from '../../src/core/message.js';
import { emailPayloadValidator, parseEmailPayload } from '../../src/senders/ses/index.js';
import { parseWebhookPayload, webhookPayloadValidator } from '../../src/senders/webhook/index.js';

const FIELD = 'message.payload';

/** The field a validator names when it rejects `payload`, or undefined if it accepts it. */
function rejectedField(
  validator: (payload: JsonValue, field: string) => void,
  payload: JsonValue,
): string | undefined {
  try {
    validator(payload, FIELD);
    return undefined;
  } catch (error) {
    if (!isValidationError(error)) throw error;
    return error.field;
  }
}

const validEmail = { to: ['ada@example.com'], subject: 'Hello', text: 'Hi Ada' };

describe('emailPayloadValidator', () => {
  it('accepts a minimal email and the full set of fields', () => {
    expect(rejectedField(emailPayloadValidator, validEmail)).toBeUndefined();
    expect(
      rejectedField(emailPayloadValidator, {
        to: 'Ada Lovelace <ada@example.com>',
        cc: ['"Babbage, Charles" <charles@example.co.uk>'],
        bcc: ['audit@example.com'],
        from: 'Acme Billing <billing@acme.example>',
        replyTo: 'support@acme.example',
        subject: 'Ünïcödé subject ✓',
        text: 'plain',
        html: '<p>rich</p>',
        tags: { campaign: 'spring_2025', tenant: 't-42' },
        configurationSet: 'transactional',
      }),
    ).toBeUndefined();
  });

  it.each<[string, JsonValue, string]>([
    ['a payload that is not an object', 'ada@example.com', FIELD],
    [
      'an unknown property (a typo)',
      { ...validEmail, replyto: 'x@example.com' },
      `${FIELD}.replyto`,
    ],
    ['no recipients at all', { subject: 'Hello', text: 'Hi' }, `${FIELD}.to`],
    ['an empty recipient list', { ...validEmail, to: [] }, `${FIELD}.to`],
    [
      'an implausible address, named by index',
      { ...validEmail, to: ['a@example.com', 'b@example.com', 'c@example.com', 'not an address'] },
      `${FIELD}.to[3]`,
    ],
    ['an address with no domain dot', { ...validEmail, cc: ['ada@localhost'] }, `${FIELD}.cc[0]`],
    ['a recipient that is not a string', { ...validEmail, bcc: [42] }, `${FIELD}.bcc[0]`],
    [
      'an address with a newline (header injection)',
      { ...validEmail, to: ['ada@example.com\r\nBcc: victim@example.com'] },
      `${FIELD}.to[0]`,
    ],
    [
      'more than 50 recipients across to, cc and bcc',
      {
        ...validEmail,
        to: Array.from({ length: 30 }, (_, i) => `to${i}@example.com`),
        bcc: Array.from({ length: 21 }, (_, i) => `bcc${i}@example.com`),
      },
      `${FIELD}.to`,
    ],
    ['a missing subject', { to: ['ada@example.com'], text: 'Hi' }, `${FIELD}.subject`],
    ['an empty subject', { ...validEmail, subject: '' }, `${FIELD}.subject`],
    [
      'a subject with CR/LF (header injection)',
      { ...validEmail, subject: 'Hello\r\nBcc: victim@example.com' },
      `${FIELD}.subject`,
    ],
    [
      'a subject longer than a header line allows',
      { ...validEmail, subject: 'x'.repeat(999) },
      `${FIELD}.subject`,
    ],
    ['neither text nor html', { to: ['ada@example.com'], subject: 'Hello' }, `${FIELD}.text`],
    ['an html body that is not a string', { ...validEmail, html: { p: 1 } }, `${FIELD}.html`],
    ['a from that is a list', { ...validEmail, from: ['a@example.com'] }, `${FIELD}.from`],
    [
      'a bad reply-to address',
      { ...validEmail, replyTo: ['ok@example.com', 'nope'] },
      `${FIELD}.replyTo[1]`,
    ],
    ['tags as a list', { ...validEmail, tags: ['a'] }, `${FIELD}.tags`],
    [
      'a tag name SES refuses',
      { ...validEmail, tags: { 'has space': 'v' } },
      `${FIELD}.tags.has space`,
    ],
    [
      'a tag value SES refuses',
      { ...validEmail, tags: { campaign: 'spring/2025' } },
      `${FIELD}.tags.campaign`,
    ],
    [
      'the reserved message-key tag',
      { ...validEmail, tags: { 'outbox-message-key': 'mine' } },
      `${FIELD}.tags.outbox-message-key`,
    ],
    [
      'a configuration set name SES refuses',
      { ...validEmail, configurationSet: 'a b' },
      `${FIELD}.configurationSet`,
    ],
  ])('rejects %s, naming the field', (_case, payload, field) => {
    expect(rejectedField(emailPayloadValidator, payload)).toBe(field);
  });

  it('normalises names and addresses for the sender', () => {
    const parsed = parseEmailPayload(
      {
        to: ['"Lovelace, Ada" <ada@example.com>', 'plain@example.com'],
        subject: 'Hi',
        html: '<p>x</p>',
        tags: { a: 'b' },
      },
      FIELD,
    );
    expect(parsed.to).toEqual([
      { name: 'Lovelace, Ada', address: 'ada@example.com' },
      { address: 'plain@example.com' },
    ]);
    expect(parsed.text).toBeUndefined();
    expect(parsed.tags).toEqual([{ name: 'a', value: 'b' }]);
  });
});

describe('webhookPayloadValidator', () => {
  const validWebhook = { url: 'https://hooks.example.com/in', body: { id: 1 } };

  it('accepts a url and any JSON body, with an optional event and endpoint ID', () => {
    expect(rejectedField(webhookPayloadValidator, validWebhook)).toBeUndefined();
    expect(rejectedField(webhookPayloadValidator, { ...validWebhook, body: null })).toBeUndefined();
    expect(
      rejectedField(webhookPayloadValidator, {
        ...validWebhook,
        event: 'invoice.paid',
        endpointId: 'ep_1',
      }),
    ).toBeUndefined();
  });

  it.each<[string, JsonValue, string]>([
    [
      'a signing secret in the payload',
      { ...validWebhook, secret: 'whsec_abc' },
      `${FIELD}.secret`,
    ],
    ['an unknown property', { ...validWebhook, headers: {} }, `${FIELD}.headers`],
    ['a missing url', { body: {} }, `${FIELD}.url`],
    ['a relative url', { ...validWebhook, url: '/hooks' }, `${FIELD}.url`],
    ['a non-http scheme', { ...validWebhook, url: 'file:///etc/passwd' }, `${FIELD}.url`],
    [
      'credentials in the url',
      { ...validWebhook, url: 'https://user:pw@example.com/' },
      `${FIELD}.url`,
    ],
    ['a missing body', { url: 'https://hooks.example.com/' }, `${FIELD}.body`],
    ['an event with a newline', { ...validWebhook, event: 'a\nb' }, `${FIELD}.event`],
    ['an empty endpoint ID', { ...validWebhook, endpointId: '' }, `${FIELD}.endpointId`],
  ])('rejects %s, naming the field', (_case, payload, field) => {
    expect(rejectedField(webhookPayloadValidator, payload)).toBe(field);
  });

  it('returns the parsed URL the sender will check and call', () => {
    const { url, payload } = parseWebhookPayload(
      { url: 'https://Hooks.Example.com:443/in?x=1', body: 1 },
      FIELD,
    );
    expect(url.href).toBe('https://hooks.example.com/in?x=1');
    expect(payload.body).toBe(1);
  });
});
