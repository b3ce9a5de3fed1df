import { SESClient, SendRawEmailCommand } from '@aws-sdk/client-ses';
import {
  ConfigurationError,
  describeError,
  isValidationError,
  PermanentDeliveryError,
} from '../../core/errors.js';
import { systemClock } from '../../core/ports.js';
import type { Sender } from '../../core/sender.js';
import {
  type Mailbox,
  MESSAGE_KEY_TAG,
  type ParsedEmail,
  parseEmailPayload,
  parseMailbox,
} from './email-payload.js';
import { buildMimeMessage } from './mime-message.js';
import type { SesSenderConfig } from './ses-config.js';
import { sesDeliveryError } from './ses-errors.js';

/** SES tag values allow only these characters; a UUID key always fits. */
const SES_TAG_VALUE = /^[A-Za-z0-9_-]{1,256}$/;

const CONFIGURATION_SET_NAME = /^[A-Za-z0-9_-]{1,64}$/;

/**
 * A sender for `kind: "email"` through Amazon SES SendRawEmail.
 *
 * Each message goes out as a MIME message built here, carrying the outbox message key twice:
 * in the `X-Outbox-Message-Key` header (for whoever reads the mail) and as the SES message tag
 * `outbox-message-key` (in SES sending events: delivery, bounce, complaint). A retry after a
 * timeout sends the same key again, so duplicates are recognisable, not prevented: SES has no
 * idempotency key.
 *
 * The SDK makes one attempt per send (`maxAttempts: 1`): retries and their timing belong to the
 * outbox, whose drain knows the lease and the deadline. The per-send AbortSignal is passed to
 * the SDK, so a slow SES call is cut off when the drain's send timeout fires. Failures become
 * `RetryableDeliveryError` or `PermanentDeliveryError` by the table in `ses-errors.ts`. Each
 * attempt reports SES's HTTP status, its error code and the destination (`ses:<region>`, or
 * the endpoint when one is set) to attempt history.
 *
 * A payload that fails validation here (a row written without `emailPayloadValidator`) is a
 * permanent failure: resending cannot fix it.
 *
 * @example
 * const email = sesSender({ ...sesConfigFromEnv(env), defaultFrom: 'Acme <no-reply@acme.example>' });
 * await drainOnce({ store, senders: { email: limitSender(email, { perSecond: 14 }) } });
 */
export function sesSender(config: SesSenderConfig): Sender {
  const defaultFrom = checkConfig(config);
  const clock = config.clock ?? systemClock;
  const client = new SESClient({
    region: config.region,
    credentials: config.credentials,
    endpoint: config.endpoint,
    // Our config is the only source of the endpoint: the SDK would otherwise also read
    // AWS_ENDPOINT_URL* and ~/.aws/config on Node, which Workers do not have.
    ignoreConfiguredEndpointUrls: true,
    maxAttempts: 1,
  });
  // Attempt history's destination: the endpoint when one is set (local SES, a VPC endpoint),
  // else the region SES is called in.
  const destination = config.endpoint ?? `ses:${config.region}`;

  return async (message, signal) => {
    let email: ParsedEmail;
    try {
      email = parseEmailPayload(message.payload, 'payload');
    } catch (error) {
      if (!isValidationError(error)) throw error;
      throw new PermanentDeliveryError(`invalid email payload: ${error.message}`, { cause: error });
    }
    const from = email.from ?? defaultFrom;
    if (from === undefined) {
      throw new PermanentDeliveryError(
        'the email has no from, and the SES sender has no defaultFrom to use instead',
      );
    }
    if (!SES_TAG_VALUE.test(message.key)) {
      throw new PermanentDeliveryError(
        `message key ${JSON.stringify(message.key)} cannot be an SES tag value (letters, digits, _ and - only)`,
      );
    }
    const raw = buildMimeMessage({
      email,
      from,
      messageKey: message.key,
      date: clock.now(),
      traceparent: message.traceContext?.traceparent,
    });
    const command = new SendRawEmailCommand({
      RawMessage: { Data: new TextEncoder().encode(raw) },
      // Listing destinations is what delivers to Bcc, which the headers leave out.
      Destinations: uniqueAddresses([...email.to, ...email.cc, ...email.bcc]),
      ConfigurationSetName: email.configurationSet ?? config.defaultConfigurationSet,
      Tags: [
        { Name: MESSAGE_KEY_TAG, Value: message.key },
        ...email.tags.map(({ name, value }) => ({ Name: name, Value: value })),
      ],
    });
    try {
      const output = await client.send(command, { abortSignal: signal });
      return { status: output.$metadata.httpStatusCode, destination };
    } catch (error) {
      // SES answered 2xx: it accepted the email. Only reading its reply failed (a runtime whose
      // XML parser the SDK cannot use, a truncated body). Calling that a failure would send the
      // email again, or set it aside as dead after it went out.
      if (acceptedBySes(error)) return { destination };
      throw sesDeliveryError(error, signal, destination);
    }
  };
}

function acceptedBySes(error: unknown): boolean {
  const status =
    typeof error === 'object' && error !== null && '$metadata' in error
      ? (error.$metadata as { httpStatusCode?: unknown } | undefined)?.httpStatusCode
      : undefined;
  return typeof status === 'number' && status >= 200 && status < 300;
}

/** Fails at startup, not on the first send, and returns the parsed default sender. */
function checkConfig(config: SesSenderConfig): Mailbox | undefined {
  if (typeof config.region !== 'string' || config.region.trim() === '') {
    throw new ConfigurationError('SES sender: region is required');
  }
  const { accessKeyId, secretAccessKey } = config.credentials ?? {};
  if (!accessKeyId || !secretAccessKey) {
    throw new ConfigurationError(
      'SES sender: credentials.accessKeyId and credentials.secretAccessKey are required',
    );
  }
  if (config.endpoint !== undefined && !URL.canParse(config.endpoint)) {
    throw new ConfigurationError(
      `SES sender: endpoint ${JSON.stringify(config.endpoint)} is not a URL`,
    );
  }
  if (
    config.defaultConfigurationSet !== undefined &&
    !CONFIGURATION_SET_NAME.test(config.defaultConfigurationSet)
  ) {
    throw new ConfigurationError(
      'SES sender: defaultConfigurationSet must be 1 to 64 ASCII letters, digits, _ or -',
    );
  }
  if (config.defaultFrom === undefined) return undefined;
  try {
    return parseMailbox(config.defaultFrom, 'defaultFrom');
  } catch (error) {
    throw new ConfigurationError(`SES sender: ${describeError(error)}`, { cause: error });
  }
}

/** SES counts every destination, and delivers twice to an address listed twice. */
function uniqueAddresses(mailboxes: readonly Mailbox[]): string[] {
  const seen = new Map<string, string>();
  for (const { address } of mailboxes) {
    const normalised = address.toLowerCase();
    if (!seen.has(normalised)) seen.set(normalised, address);
  }
  return [...seen.values()];
}
