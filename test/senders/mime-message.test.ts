import { describe, expect, it } from 'vitest';
import { parseEmailPayload } from '../../src/senders/ses/index.js';
import { buildMimeMessage, quotedPrintable } from '../../src/senders/ses/mime-message.js';

const KEY = '0b0e8a52-3f7e-4a43-9a52-6f3c1f1e9d10';
const DATE = new Date(Date.UTC(2025, 0, 2, 3, 4, 5));

function build(payload: Parameters<typeof parseEmailPayload>[0]) {
  const email = parseEmailPayload(payload, 'payload');
  return buildMimeMessage({
    email,
    from: email.from ?? { address: 'sender@acme.example' },
    messageKey: KEY,
    date: DATE,
  });
}

/** Decodes quoted-printable the way a mail client does (RFC 2045 6.7), to check round trips. */
function decodeQuotedPrintable(encoded: string): string {
  const bytes: number[] = [];
  const unfolded = encoded.replace(/=\r\n/g, '');
  for (let i = 0; i < unfolded.length; i++) {
    if (unfolded[i] === '=') {
      bytes.push(Number.parseInt(unfolded.slice(i + 1, i + 3), 16));
      i += 2;
    } else {
      bytes.push(unfolded.charCodeAt(i));
    }
  }
  return new TextDecoder().decode(new Uint8Array(bytes));
}

/** Decodes RFC 2047 B encoded-words in an unfolded header value. */
function decodeEncodedWords(value: string): string {
  return value
    .replace(/\?= =\?/g, '?==?')
    .replace(/=\?UTF-8\?B\?([^?]*)\?=/g, (_match, base64: string) =>
      Buffer.from(base64, 'base64').toString('utf8'),
    );
}

/** A header's value, unfolded (RFC 5322 2.2.3: remove each CRLF that precedes whitespace). */
function headerValue(message: string, name: string): string | undefined {
  const head = message.slice(0, message.indexOf('\r\n\r\n')).replace(/\r\n(?=[ \t])/g, '');
  const match = new RegExp(`^${name}: (.*)$`, 'im').exec(head);
  return match?.[1];
}

describe('quotedPrintable', () => {
  it('escapes "=", non-ASCII bytes and whitespace before a line end', () => {
    expect(quotedPrintable('a=b café')).toBe('a=3Db caf=C3=A9');
    expect(quotedPrintable('trailing space \nand tab\t')).toBe('trailing space=20\r\nand tab=09');
  });

  it('turns every line-break style into CRLF', () => {
    expect(quotedPrintable('a\nb\r\nc\rd')).toBe('a\r\nb\r\nc\r\nd');
  });

  it('keeps lines within 76 characters with soft breaks that never split an escape', () => {
    const text = `${'é'.repeat(60)} ${'x'.repeat(200)}`;
    const encoded = quotedPrintable(text);
    for (const line of encoded.split('\r\n')) {
      expect(line.length).toBeLessThanOrEqual(76);
      // An escape cut by a soft break would leave "=X" at the end of a line.
      expect(line).not.toMatch(/=[0-9A-F]$/);
    }
    expect(decodeQuotedPrintable(encoded)).toBe(text);
  });

  it('round-trips arbitrary Unicode text', () => {
    const text = 'Grüße, 世界! 🎉\n\n= not an escape =\n. leading dot\nFrom the start';
    expect(decodeQuotedPrintable(quotedPrintable(text)).replace(/\r\n/g, '\n')).toBe(text);
  });
});

describe('buildMimeMessage', () => {
  it('writes multipart/alternative with text before html, both quoted-printable UTF-8', () => {
    const message = build({
      to: 'ada@example.com',
      subject: 'Both',
      text: 'plain ✓',
      html: '<p>rich ✓</p>',
    });
    const boundary = /boundary="([^"]+)"/.exec(message)?.[1];
    expect(boundary).toBeDefined();
    const parts = message.split(`--${boundary}`);
    // preamble, text, html, closing "--"
    expect(parts).toHaveLength(4);
    expect(parts[1]).toContain('Content-Type: text/plain; charset=UTF-8');
    expect(parts[1]).toContain('Content-Transfer-Encoding: quoted-printable');
    expect(parts[1]).toContain('plain =E2=9C=93');
    expect(parts[2]).toContain('Content-Type: text/html; charset=UTF-8');
    expect(parts[2]).toContain('<p>rich =E2=9C=93</p>');
    expect(parts[3]).toBe('--\r\n');
  });

  it('writes a single text part without multipart when only text is given', () => {
    const message = build({ to: 'ada@example.com', subject: 'Text', text: 'only text' });
    expect(headerValue(message, 'Content-Type')).toBe('text/plain; charset=UTF-8');
    expect(message.endsWith('\r\n\r\nonly text\r\n')).toBe(true);
  });

  it('uses CRLF only, 7-bit ASCII only, and no line over 78 characters', () => {
    const message = build({
      to: Array.from({ length: 20 }, (_, i) => `Recipient Number ${i} <recipient${i}@example.com>`),
      cc: 'Zoë Ünïcödé-Ñame With A Rather Long Display Name Indeed <zoe@example.com>',
      subject: `${'A long subject that will not fit on one header line '.repeat(4)}✓`,
      text: `${'long line '.repeat(50)}\nsecond line`,
      html: '<p>ok</p>',
    });
    expect(message).not.toMatch(/(?<!\r)\n/);
    expect(message).not.toMatch(/\r(?!\n)/);
    expect(message).toMatch(/^[\x20-\x7e\r\n]*$/);
    for (const line of message.split('\r\n')) expect(line.length).toBeLessThanOrEqual(78);
  });

  it('encodes non-ASCII subjects and display names as RFC 2047 encoded-words', () => {
    const message = build({
      to: 'Zoë Ünïcödé <zoe@example.com>',
      from: '"Acme, Inc." <billing@acme.example>',
      subject: 'Grüße aus Köln — 你好 🎉',
      text: 'x',
    });
    const subject = headerValue(message, 'Subject')!;
    expect(subject).toMatch(/^=\?UTF-8\?B\?/);
    expect(decodeEncodedWords(subject)).toBe('Grüße aus Köln — 你好 🎉');
    expect(decodeEncodedWords(headerValue(message, 'To')!)).toBe('Zoë Ünïcödé <zoe@example.com>');
    // Printable ASCII with specials is quoted, not encoded.
    expect(headerValue(message, 'From')).toBe('"Acme, Inc." <billing@acme.example>');
  });

  it('writes Date, Message-ID and the message key header, and never a Bcc header', () => {
    const message = build({
      to: 'ada@example.com',
      bcc: 'hidden@example.com',
      subject: 'Headers',
      text: 'x',
    });
    expect(headerValue(message, 'Date')).toBe('Thu, 02 Jan 2025 03:04:05 +0000');
    expect(headerValue(message, 'Message-ID')).toBe(`<${KEY}@acme.example>`);
    expect(headerValue(message, 'X-Outbox-Message-Key')).toBe(KEY);
    expect(headerValue(message, 'MIME-Version')).toBe('1.0');
    expect(message).not.toMatch(/^Bcc:/im);
    expect(message).not.toContain('hidden@example.com');
    expect(message).not.toMatch(/^Traceparent:/im);
  });

  it("writes the message's traceparent as a header of one line when it has one", () => {
    const traceparent = '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01';
    const email = parseEmailPayload({ to: 'ada@example.com', subject: 'x', text: 'x' }, 'p');
    const message = buildMimeMessage({
      email,
      from: { address: 'sender@acme.example' },
      messageKey: KEY,
      date: DATE,
      traceparent,
    });
    expect(headerValue(message, 'Traceparent')).toBe(traceparent);
  });
});
