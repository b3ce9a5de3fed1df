/**
 * How an SES failure becomes an outbox outcome. The SDK (with `maxAttempts: 1`) throws one
 * error per failed send; we read its `name` (the SES error code), `$metadata.httpStatusCode`
 * and `$fault`, never its class, since the class is only there for modelled errors.
 *
 * The table is docs/senders.md's "SES errors" table; keep the two in step.
 */
import { PermanentDeliveryError, RetryableDeliveryError } from '../../core/errors.js';
import { readSdkError } from '../aws-sdk-errors.js';

/** What to do about one kind of SES failure. */
export type SesFailureClass =
  /** The account's send rate is spent: retry after {@link SES_THROTTLED_RETRY_AFTER_MS}. */
  | 'throttled'
  /** The 24-hour quota is spent: retry after {@link SES_BLOCKED_RETRY_AFTER_MS}. */
  | 'quota-exhausted'
  /** Sending is paused for the account or configuration set: an operator must act. */
  | 'sending-paused'
  /** SES does not accept our credentials: an operator must fix them; the message is fine. */
  | 'credentials'
  /** A blip (5xx, timeout, dropped connection): retry with the drain's backoff. */
  | 'transient'
  /** SES refused this message for good: dead letter. */
  | 'rejected';

/**
 * A minute: throttling means the account-wide rate (shared by every overlapping drain) is
 * spent right now. Retrying within the drain's one-second backoff would only add to the burst
 * that caused it; a minute lets the other drains finish and the rate window roll over.
 */
export const SES_THROTTLED_RETRY_AFTER_MS = 60 * 1000;

/**
 * An hour, for failures only an operator or the clock can clear (paused sending, spent daily
 * quota, bad credentials). Frequent retries cannot help and would burn the message's attempts;
 * ten attempts an hour apart give an operator most of a working day before anything goes dead.
 */
export const SES_BLOCKED_RETRY_AFTER_MS = 60 * 60 * 1000;

/**
 * SES error codes by class. The SDK names an error after its code; for a few modelled errors it
 * appends `Exception` to the wire code (`ConfigurationSetDoesNotExist` arrives as
 * `ConfigurationSetDoesNotExistException`), so both spellings are listed.
 */
export const SES_ERROR_CODES: Readonly<Record<string, SesFailureClass>> = {
  Throttling: 'throttled',
  ThrottlingException: 'throttled',
  TooManyRequestsException: 'throttled',

  AccountSendingPausedException: 'sending-paused',
  ConfigurationSetSendingPausedException: 'sending-paused',

  // A wrong, expired or unauthorised key fails every message alike. Dead-lettering would empty
  // the whole outbox into dead letter within hours, so these wait for an operator instead.
  InvalidClientTokenId: 'credentials',
  UnrecognizedClientException: 'credentials',
  SignatureDoesNotMatch: 'credentials',
  IncompleteSignature: 'credentials',
  InvalidSignatureException: 'credentials',
  MissingAuthenticationToken: 'credentials',
  ExpiredToken: 'credentials',
  ExpiredTokenException: 'credentials',
  AccessDenied: 'credentials',
  AccessDeniedException: 'credentials',

  ServiceUnavailable: 'transient',
  ServiceUnavailableException: 'transient',
  InternalFailure: 'transient',
  InternalError: 'transient',
  RequestTimeout: 'transient',
  RequestTimeoutException: 'transient',
  TimeoutError: 'transient',
  AbortError: 'transient',

  MessageRejected: 'rejected',
  MailFromDomainNotVerifiedException: 'rejected',
  FromEmailAddressNotVerified: 'rejected',
  FromEmailAddressNotVerifiedException: 'rejected',
  ConfigurationSetDoesNotExist: 'rejected',
  ConfigurationSetDoesNotExistException: 'rejected',
  InvalidParameterValue: 'rejected',
};

/** SES answers a spent send rate with `Throttling` and this text. */
const SEND_RATE_EXCEEDED = /maximum sending rate exceeded/i;

/** ... and a spent 24-hour quota with `Throttling` and this (worded both ways in AWS's docs). */
const DAILY_QUOTA_EXCEEDED = /daily (message|sending) quota exceeded/i;

/**
 * Sorts a failure from `client.send(...)`: by error code first, then the message text SES uses
 * for throttling, then HTTP status and `$fault` (429 throttled; 408, 5xx and server faults
 * transient; other 4xx rejected), and an error with no HTTP status at all (connection refused,
 * reset, DNS, timeout, abort) is transient.
 */
export function classifySesError(error: unknown): SesFailureClass {
  const { name, message, status, fault, throttling } = readSdkError(error);
  if (name === 'Throttling' && DAILY_QUOTA_EXCEEDED.test(message)) return 'quota-exhausted';
  const listed = SES_ERROR_CODES[name];
  if (listed !== undefined) return listed;
  if (SEND_RATE_EXCEEDED.test(message) || throttling || status === 429) return 'throttled';
  if (DAILY_QUOTA_EXCEEDED.test(message)) return 'quota-exhausted';
  // No response at all: the network, a timeout, or the client's own setup. None of these is
  // about this message, so none may dead-letter it.
  if (status === undefined) return 'transient';
  if (status === 408 || status >= 500 || fault === 'server') return 'transient';
  return 'rejected';
}

/**
 * The outbox error for a failed SES send: `RetryableDeliveryError` (with `retryAfterMs` where
 * the table sets one) or `PermanentDeliveryError`, its message naming the code, the HTTP status
 * and SES's own text, and saying when an operator has to act. That message is what operators
 * see in `last_error`; the code, the status and `destination` go into attempt history.
 */
export function sesDeliveryError(
  error: unknown,
  signal?: AbortSignal,
  destination?: string,
): PermanentDeliveryError | RetryableDeliveryError {
  const { name, message, status } = readSdkError(error);
  // What attempt history records besides the text: the code, the HTTP status, where it went.
  const details = { providerCode: name || undefined, status, destination };
  // A body the SDK could not read leaves name and message both "Unknown": say that once.
  const detail = message === name ? '' : `: ${message}`;
  const what = `SES ${name || 'error'}${status === undefined ? '' : ` (HTTP ${status})`}${detail}`;
  // SES's text usually ends its sentence; advice follows as sentences of its own.
  const sentence = what.endsWith('.') ? what : `${what}.`;
  if (signal?.aborted) {
    return new RetryableDeliveryError(`SES send abandoned: the send's time was up (${what})`, {
      cause: error,
      ...details,
    });
  }
  switch (classifySesError(error)) {
    case 'throttled':
      return new RetryableDeliveryError(
        `${sentence} The account's send rate is spent; retrying in ${minutes(SES_THROTTLED_RETRY_AFTER_MS)}.`,
        { cause: error, ...details, retryAfterMs: SES_THROTTLED_RETRY_AFTER_MS },
      );
    case 'quota-exhausted':
      return new RetryableDeliveryError(
        `${sentence} The 24-hour sending quota is spent: it refills over the day, or an operator can request a higher quota. Retrying in ${minutes(SES_BLOCKED_RETRY_AFTER_MS)}.`,
        { cause: error, ...details, retryAfterMs: SES_BLOCKED_RETRY_AFTER_MS },
      );
    case 'sending-paused':
      return new RetryableDeliveryError(
        `${sentence} Sending is paused: an operator must act (find why SES paused it, then re-enable sending for the account or the configuration set). Retrying in ${minutes(SES_BLOCKED_RETRY_AFTER_MS)}.`,
        { cause: error, ...details, retryAfterMs: SES_BLOCKED_RETRY_AFTER_MS },
      );
    case 'credentials':
      return new RetryableDeliveryError(
        `${sentence} SES refused the sender's credentials: an operator must fix the access key or its permissions (ses:SendRawEmail). Retrying in ${minutes(SES_BLOCKED_RETRY_AFTER_MS)}.`,
        { cause: error, ...details, retryAfterMs: SES_BLOCKED_RETRY_AFTER_MS },
      );
    case 'transient':
      return new RetryableDeliveryError(what, { cause: error, ...details });
    case 'rejected':
      return new PermanentDeliveryError(what, { cause: error, ...details });
  }
}

function minutes(ms: number): string {
  return ms >= 60 * 60 * 1000 ? `${ms / (60 * 60 * 1000)} h` : `${ms / (60 * 1000)} min`;
}
