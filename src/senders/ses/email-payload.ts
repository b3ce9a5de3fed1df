import { ValidationError } from '../../core/errors.js';
import type { DestinationOf, JsonValue, PayloadValidator } from '../../core/message.js';
import {
  expectHeaderSafeString,
  expectObject,
  type JsonObject,
  rejectUnknownProperties,
} from '../payload-checks.js';

/**
 * The payload of a `kind: "email"` message.
 *
 * Addresses are `ada@example.com` or `Ada Lovelace <ada@example.com>` (display names may be any
 * Unicode; they are encoded for the header). Addresses themselves are ASCII: SES does not accept
 * internationalised local parts, and domains go in punycode (`xn--...`).
 *
 * @example
 * const payload: EmailPayload = {
 *   to: ['Ada Lovelace <ada@example.com>'],
 *   subject: 'Your invoice',
 *   text: 'Hello Ada,\n\nYour invoice is attached.',
 *   html: '<p>Hello Ada,</p><p>Your invoice is attached.</p>',
 *   tags: { campaign: 'invoices' },
 * };
 */
export type EmailPayload = {
  /** One address or a list. `to`, `cc` and `bcc` together hold 1 to {@link MAX_EMAIL_RECIPIENTS}. */
  to?: string | string[];
  cc?: string | string[];
  /** Delivered to, but never written into the message headers. */
  bcc?: string | string[];
  /** Defaults to the sender's `defaultFrom`. The address (or its domain) must be verified in SES. */
  from?: string;
  replyTo?: string | string[];
  /** Required; one line, at most {@link MAX_SUBJECT_LENGTH} characters. */
  subject: string;
  /** Plain-text body. Give `text`, `html` or both (sent as multipart/alternative). */
  text?: string;
  html?: string;
  /**
   * SES message tags, published with sending events. Names and values: ASCII letters, digits,
   * `_` and `-`, up to 256 characters. `outbox-message-key` is reserved: the sender sets it.
   */
  tags?: Record<string, string>;
  /** SES configuration set; overrides the sender's `defaultConfigurationSet`. */
  configurationSet?: string;
};

/** One address with its optional display name, as written into a header. */
export interface Mailbox {
  address: string;
  name?: string;
}

/** An email payload after validation: lists normalised, tags as SES wants them. */
export interface ParsedEmail {
  to: Mailbox[];
  cc: Mailbox[];
  bcc: Mailbox[];
  from: Mailbox | undefined;
  replyTo: Mailbox[];
  subject: string;
  text: string | undefined;
  html: string | undefined;
  tags: { name: string; value: string }[];
  configurationSet: string | undefined;
}

/** SES refuses a SendRawEmail with more than 50 destinations in all. */
export const MAX_EMAIL_RECIPIENTS = 50;

/**
 * 998 characters: RFC 5322's hard limit on one header line. Longer subjects are cut off by mail
 * clients anyway; a longer value is almost certainly a body put in the wrong field.
 */
export const MAX_SUBJECT_LENGTH = 998;

/**
 * 49 tags of the payload's own, 50 with `outbox-message-key`: generous for event-publishing
 * dimensions (campaign, tenant, template) while keeping each request small. The SES API
 * reference states the format of a tag but no count; this bound is ours.
 */
export const MAX_EMAIL_TAGS = 49;

/** The SES message tag that carries the outbox message key into SES sending events. */
export const MESSAGE_KEY_TAG = 'outbox-message-key';

/** RFC 5321 caps a path at 256 octets including the angle brackets. */
const MAX_ADDRESS_LENGTH = 254;

/** RFC 5321 caps the local part at 64 octets. */
const MAX_LOCAL_PART_LENGTH = 64;

/** A display name plus an address; generous, but bounded so a header stays sane. */
const MAX_MAILBOX_LENGTH = 500;

/** SES tag names and values: "256 characters or fewer" of letters, digits, `_` and `-`. */
const SES_TAG_PATTERN = /^[A-Za-z0-9_-]{1,256}$/;

/** SES configuration set names: letters, digits, `_` and `-`, at most 64 characters. */
const CONFIGURATION_SET_PATTERN = /^[A-Za-z0-9_-]{1,64}$/;

/**
 * A plausible ASCII address: a dot-atom local part and a domain of at least two labels. Not a
 * full RFC 5322 parser: quoted local parts and address literals are legal but SES and real
 * mailboxes do not use them, and accepting them would widen what reaches a header.
 */
const ADDRESS_PATTERN =
  /^[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+(?:\.[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+)*@(?:[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?\.)+[A-Za-z](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?$/;

/** `Display Name <address>`, the name optional and possibly quoted. */
const NAME_AND_ADDRESS_PATTERN = /^(.*?)\s*<([^<>]*)>$/;

const EMAIL_PROPERTIES = new Set([
  'to',
  'cc',
  'bcc',
  'from',
  'replyTo',
  'subject',
  'text',
  'html',
  'tags',
  'configurationSet',
]);

/**
 * Checks an email payload at enqueue, throwing `ValidationError` naming the field
 * (`message.payload.to[3]`). Register it as the `email` kind's validator; `sesSender` runs the
 * same checks again before sending, so a row written without it still cannot inject headers.
 */
export const emailPayloadValidator: PayloadValidator = (payload, field) => {
  parseEmailPayload(payload, field);
};

/** Validates an email payload and returns it normalised; throws `ValidationError` on the first problem. */
export function parseEmailPayload(payload: JsonValue, field: string): ParsedEmail {
  const email = expectObject(
    payload,
    field,
    'an email payload object with to, subject and text or html',
  );
  rejectUnknownProperties(email, field, EMAIL_PROPERTIES);

  const to = mailboxList(email, 'to', field);
  const cc = mailboxList(email, 'cc', field);
  const bcc = mailboxList(email, 'bcc', field);
  const recipients = to.length + cc.length + bcc.length;
  if (recipients === 0) {
    throw new ValidationError(`${field}.to`, 'give at least one recipient in to, cc or bcc');
  }
  if (recipients > MAX_EMAIL_RECIPIENTS) {
    throw new ValidationError(
      `${field}.to`,
      `to, cc and bcc hold ${recipients} recipients together; SES accepts at most ${MAX_EMAIL_RECIPIENTS}`,
    );
  }

  if (!('subject' in email)) throw new ValidationError(`${field}.subject`, 'is required');
  const subject = expectHeaderSafeString(email.subject!, `${field}.subject`, MAX_SUBJECT_LENGTH);

  const text = optionalBody(email, 'text', field);
  const html = optionalBody(email, 'html', field);
  if (text === undefined && html === undefined) {
    throw new ValidationError(`${field}.text`, 'give text, html or both');
  }

  return {
    to,
    cc,
    bcc,
    from: email.from === undefined ? undefined : parseMailbox(email.from, `${field}.from`),
    replyTo: mailboxList(email, 'replyTo', field),
    subject,
    text,
    html,
    tags: messageTags(email.tags, `${field}.tags`),
    configurationSet: configurationSetName(email.configurationSet, `${field}.configurationSet`),
  };
}

/**
 * Parses `ada@example.com` or `Ada Lovelace <ada@example.com>` (the name may be quoted). Throws
 * `ValidationError` naming `field` when it is not a plausible address.
 */
export function parseMailbox(value: JsonValue, field: string): Mailbox {
  const text = expectHeaderSafeString(value, field, MAX_MAILBOX_LENGTH).trim();
  const match = NAME_AND_ADDRESS_PATTERN.exec(text);
  const address = match ? match[2]! : text;
  if (!isPlausibleAddress(address)) {
    throw new ValidationError(
      field,
      `"${text}" is not an email address such as ada@example.com or Ada Lovelace <ada@example.com>`,
    );
  }
  const name = match ? unquote(match[1]!.trim()) : '';
  return name === '' ? { address } : { address, name };
}

function isPlausibleAddress(address: string): boolean {
  if (address.length > MAX_ADDRESS_LENGTH || !ADDRESS_PATTERN.test(address)) return false;
  return address.indexOf('@') <= MAX_LOCAL_PART_LENGTH;
}

/** `"Lovelace, Ada"` -> `Lovelace, Ada`; the header writer re-quotes as needed. */
function unquote(name: string): string {
  if (name.length >= 2 && name.startsWith('"') && name.endsWith('"')) {
    return name.slice(1, -1).replace(/\\(.)/g, '$1');
  }
  return name;
}

function mailboxList(email: JsonObject, property: string, field: string): Mailbox[] {
  const value = email[property];
  if (value === undefined) return [];
  if (typeof value === 'string') return [parseMailbox(value, `${field}.${property}`)];
  if (!Array.isArray(value)) {
    throw new ValidationError(`${field}.${property}`, 'expected an address or a list of addresses');
  }
  if (value.length > MAX_EMAIL_RECIPIENTS) {
    throw new ValidationError(
      `${field}.${property}`,
      `has ${value.length} addresses; at most ${MAX_EMAIL_RECIPIENTS}`,
    );
  }
  return value.map((item, index) => parseMailbox(item, `${field}.${property}[${index}]`));
}

function optionalBody(email: JsonObject, property: 'text' | 'html', field: string) {
  const value = email[property];
  if (value === undefined) return undefined;
  if (typeof value !== 'string' || value.length === 0) {
    throw new ValidationError(`${field}.${property}`, 'expected a non-empty string');
  }
  return value;
}

function messageTags(value: JsonValue | undefined, field: string) {
  if (value === undefined) return [];
  const tags = expectObject(value, field, 'an object of tag names to values');
  const entries = Object.entries(tags);
  if (entries.length > MAX_EMAIL_TAGS) {
    throw new ValidationError(field, `has ${entries.length} tags; at most ${MAX_EMAIL_TAGS}`);
  }
  return entries.map(([name, tagValue]) => {
    if (name === MESSAGE_KEY_TAG) {
      throw new ValidationError(
        `${field}.${name}`,
        'is reserved: the sender sets it to the message key',
      );
    }
    if (!SES_TAG_PATTERN.test(name)) {
      throw new ValidationError(
        `${field}.${name}`,
        'tag names are 1 to 256 ASCII letters, digits, _ or -',
      );
    }
    if (typeof tagValue !== 'string' || !SES_TAG_PATTERN.test(tagValue)) {
      throw new ValidationError(
        `${field}.${name}`,
        'tag values are strings of 1 to 256 ASCII letters, digits, _ or -',
      );
    }
    return { name, value: tagValue };
  });
}

function configurationSetName(value: JsonValue | undefined, field: string): string | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== 'string' || !CONFIGURATION_SET_PATTERN.test(value)) {
    throw new ValidationError(
      field,
      'expected a configuration set name: 1 to 64 ASCII letters, digits, _ or -',
    );
  }
  return value;
}

/**
 * An email's destination, for destination health: SES and the sending identity's domain
 * (`ses:example.com`), or `ses` for mail sent from the sender's default address. One SES
 * account and region sends every email a drain sends, so a throttled or failing SES pauses one
 * destination per sending domain, never a webhook. Called after {@link emailPayloadValidator}.
 */
export const emailDestination: DestinationOf = (payload) => {
  const from = (payload as { from?: JsonValue }).from;
  if (typeof from !== 'string') return 'ses';
  const { address } = parseMailbox(from, 'from');
  return `ses:${address.slice(address.lastIndexOf('@') + 1).toLowerCase()}`;
};
