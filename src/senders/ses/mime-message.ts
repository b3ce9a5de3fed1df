/**
 * Builds the raw RFC 5322 / MIME message that `sesSender` hands to SES SendRawEmail. Raw
 * rather than SES's structured SendEmail because only a raw message can carry our own header
 * (`X-Outbox-Message-Key`), which receivers and support staff use to deduplicate.
 *
 * The output is 7-bit ASCII with CRLF line endings and no line over 78 characters: bodies are
 * quoted-printable UTF-8, and non-ASCII subjects and display names are RFC 2047 encoded-words.
 * Runs on any runtime: TextEncoder and btoa only.
 */
import { hasControlCharacter } from '../payload-checks.js';
import type { Mailbox, ParsedEmail } from './email-payload.js';

/** The header that carries the outbox message key: the receiver's deduplication ID. */
export const MESSAGE_KEY_HEADER = 'X-Outbox-Message-Key';

export interface MimeMessageInput {
  email: ParsedEmail;
  /** The payload's `from`, or the sender's default. */
  from: Mailbox;
  /** The outbox message key: goes into `X-Outbox-Message-Key` and the `Message-ID`. */
  messageKey: string;
  /** The `Date` header. */
  date: Date;
  /**
   * The message's W3C traceparent, as a `Traceparent` header (55 characters: one line). Not its
   * tracestate, up to 512 characters, which a header line cannot hold unfolded.
   */
  traceparent?: string;
}

const CRLF = '\r\n';

/** RFC 5322 asks that lines stay within 78 characters; quoted-printable caps them at 76. */
const MAX_HEADER_LINE = 78;
const MAX_QUOTED_PRINTABLE_LINE = 76;

/**
 * 42 bytes become 56 base64 characters; with the `=?UTF-8?B?...?=` wrapper (12 characters) an
 * encoded-word is 68 characters: within RFC 2047's limit of 75, and short enough to follow
 * our longest header name (`Reply-To: `) on the first line without passing 78.
 */
const ENCODED_WORD_MAX_BYTES = 42;

/** Longer plain names are encoded instead, since encoded-words can fold and a name cannot. */
const MAX_PLAIN_DISPLAY_NAME = 40;

/** Characters that may stand unquoted in a display name (RFC 5322 atext, plus spaces). */
const PLAIN_PHRASE = /^[A-Za-z0-9!#$%&'*+/=?^_`{|}~ -]+$/;

/** Printable ASCII: anything else in a header must be encoded. */
const PRINTABLE_ASCII = /^[\x20-\x7e]*$/;

const WEEKDAYS = ['Sun', 'Mon', 'Tue', 'Wed', 'Thu', 'Fri', 'Sat'];
const MONTHS = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec'];

/**
 * The complete message as an ASCII string. Bcc recipients are deliberately absent from the
 * headers: SES delivers to them because they are listed as destinations, and a Bcc header
 * would reveal them to the other recipients.
 */
export function buildMimeMessage({
  email,
  from,
  messageKey,
  date,
  traceparent,
}: MimeMessageInput): string {
  if (hasControlCharacter(messageKey) || /[<>@\s]/.test(messageKey)) {
    throw new Error(`message key ${JSON.stringify(messageKey)} cannot go into a header`);
  }
  const headers: string[] = [foldedHeader('From', mailboxTokens([from]))];
  if (email.to.length > 0) headers.push(foldedHeader('To', mailboxTokens(email.to)));
  if (email.cc.length > 0) headers.push(foldedHeader('Cc', mailboxTokens(email.cc)));
  if (email.replyTo.length > 0) {
    headers.push(foldedHeader('Reply-To', mailboxTokens(email.replyTo)));
  }
  headers.push(
    foldedHeader('Subject', unstructuredTokens('Subject', email.subject)),
    header('Date', rfc5322Date(date)),
    // Stable across retries, so a client that sees two copies can tell they are one message.
    header('Message-ID', `<${messageKey}@${domainOf(from.address)}>`),
    header('MIME-Version', '1.0'),
    header(MESSAGE_KEY_HEADER, messageKey),
  );
  if (traceparent !== undefined) headers.push(header('Traceparent', traceparent));

  const parts: { type: 'text/plain' | 'text/html'; content: string }[] = [];
  if (email.text !== undefined) parts.push({ type: 'text/plain', content: email.text });
  if (email.html !== undefined) parts.push({ type: 'text/html', content: email.html });

  if (parts.length === 1) {
    const [part] = parts as [(typeof parts)[number]];
    return [...headers, ...textPartHeaders(part.type), '', quotedPrintable(part.content), ''].join(
      CRLF,
    );
  }

  // "=_" can appear in neither quoted-printable output (every "=" there is followed by two hex
  // digits or a line break) nor base64, so this boundary can never collide with a body.
  const boundary = `=_outbox_${messageKey.replace(/[^A-Za-z0-9]/g, '')}`;
  const lines = [
    ...headers,
    foldedHeader('Content-Type', ['multipart/alternative;', `boundary="${boundary}"`]),
    '',
  ];
  // Least preferred first: clients show the last alternative they can render (RFC 2046 5.1.4).
  for (const part of parts) {
    lines.push(`--${boundary}`, ...textPartHeaders(part.type), '', quotedPrintable(part.content));
  }
  lines.push(`--${boundary}--`, '');
  return lines.join(CRLF);
}

function header(name: string, value: string): string {
  return `${name}: ${value}`;
}

/**
 * A header whose value is a sequence of tokens separated by single spaces, folded (CRLF plus
 * a space, which unfolding turns back into the space) before any token that would take the
 * line past {@link MAX_HEADER_LINE}. Tokens are never split.
 */
function foldedHeader(name: string, tokens: readonly string[]): string {
  const lines: string[] = [];
  let line = `${name}:`;
  for (const token of tokens) {
    if (line.length + 1 + token.length > MAX_HEADER_LINE && line.trim() !== `${name}:`) {
      lines.push(line);
      line = '';
    }
    line += ` ${token}`;
  }
  lines.push(line);
  return lines.join(CRLF);
}

function textPartHeaders(type: 'text/plain' | 'text/html'): string[] {
  return [
    header('Content-Type', `${type}; charset=UTF-8`),
    header('Content-Transfer-Encoding', 'quoted-printable'),
  ];
}

/** `Name <address>, <other>`: name tokens, then the address, a comma after all but the last. */
function mailboxTokens(mailboxes: readonly Mailbox[]): string[] {
  return mailboxes.flatMap(({ name, address }, index) => {
    const tokens = name === undefined ? [] : displayNameTokens(name);
    tokens.push(index < mailboxes.length - 1 ? `<${address}>,` : `<${address}>`);
    return tokens;
  });
}

/**
 * A display name as a phrase: plain when it is atext, quoted when it is other printable ASCII,
 * and encoded-words when it is not ASCII or is long (encoded-words can fold between them).
 */
function displayNameTokens(name: string): string[] {
  if (PRINTABLE_ASCII.test(name) && !name.includes('=?')) {
    const phrase =
      PLAIN_PHRASE.test(name) && name.trim() === name
        ? name
        : `"${name.replace(/(["\\])/g, '\\$1')}"`;
    if (phrase.length <= MAX_PLAIN_DISPLAY_NAME) return [phrase];
  }
  return encodedWords(name);
}

/**
 * An unstructured header value (Subject): as is when it is printable ASCII and fits on the
 * header line, otherwise encoded-words. Encoding long ASCII too keeps one code path that
 * always honours the line limit without having to preserve runs of spaces across folds.
 */
function unstructuredTokens(headerName: string, value: string): string[] {
  const fits = headerName.length + 2 + value.length <= MAX_HEADER_LINE;
  if (fits && PRINTABLE_ASCII.test(value) && !value.includes('=?')) return [value];
  return encodedWords(value);
}

/**
 * RFC 2047 "B" encoded-words of at most {@link ENCODED_WORD_MAX_BYTES} bytes each, split on
 * character boundaries: an encoded-word must hold whole characters (RFC 2047 section 5).
 * Whitespace between adjacent encoded-words is dropped by decoders, so the folds between them
 * add nothing to the text.
 */
function encodedWords(text: string): string[] {
  const encoder = new TextEncoder();
  const words: string[] = [];
  let chunk = '';
  let chunkBytes = 0;
  for (const character of text) {
    const bytes = encoder.encode(character).byteLength;
    if (chunkBytes + bytes > ENCODED_WORD_MAX_BYTES) {
      words.push(chunk);
      chunk = '';
      chunkBytes = 0;
    }
    chunk += character;
    chunkBytes += bytes;
  }
  if (chunk !== '') words.push(chunk);
  return words.map((word) => `=?UTF-8?B?${base64(encoder.encode(word))}?=`);
}

/**
 * Quoted-printable (RFC 2045 section 6.7) of the UTF-8 bytes of `text`. Line breaks of any
 * style become CRLF hard breaks; long lines get soft breaks (`=` at the end) so no line passes
 * 76 characters; `=`, non-ASCII bytes, controls and whitespace before a line end are escaped.
 */
export function quotedPrintable(text: string): string {
  const encoder = new TextEncoder();
  return text
    .split(/\r\n|\r|\n/)
    .map((line) => quotedPrintableLine(encoder.encode(line)))
    .join(CRLF);
}

function quotedPrintableLine(bytes: Uint8Array): string {
  const output: string[] = [];
  let current = '';
  bytes.forEach((byte, index) => {
    const isLast = index === bytes.length - 1;
    const isWhitespace = byte === 0x20 || byte === 0x09;
    const literal = (byte >= 0x21 && byte <= 0x7e && byte !== 0x3d) || (isWhitespace && !isLast);
    const token = literal ? String.fromCharCode(byte) : `=${hex(byte)}`;
    // Leave room for the soft break's "=" on every line but the last.
    if (current.length + token.length > MAX_QUOTED_PRINTABLE_LINE - 1) {
      output.push(`${current}=`);
      current = '';
    }
    current += token;
  });
  output.push(current);
  return output.join(CRLF);
}

function hex(byte: number): string {
  return byte.toString(16).toUpperCase().padStart(2, '0');
}

function base64(bytes: Uint8Array): string {
  let binary = '';
  for (const byte of bytes) binary += String.fromCharCode(byte);
  return btoa(binary);
}

function domainOf(address: string): string {
  return address.slice(address.lastIndexOf('@') + 1);
}

/** `Tue, 02 Jan 2024 03:04:05 +0000`, the form RFC 5322 section 3.3 asks for (not `GMT`). */
function rfc5322Date(date: Date): string {
  const two = (value: number) => String(value).padStart(2, '0');
  return (
    `${WEEKDAYS[date.getUTCDay()]}, ${two(date.getUTCDate())} ${MONTHS[date.getUTCMonth()]} ` +
    `${date.getUTCFullYear()} ${two(date.getUTCHours())}:${two(date.getUTCMinutes())}:` +
    `${two(date.getUTCSeconds())} +0000`
  );
}
