/**
 * How an Amazon SNS failure becomes an outbox outcome: a whole `PublishBatch` call that failed
 * (every message of it alike), or one entry SNS refused in an answer that took the others. We
 * read the error's `name`, `$metadata.httpStatusCode` and `$fault`, never its class.
 *
 * SNS speaks the query protocol: its wire codes are short (`NotFound`, `InvalidParameter`), and
 * the SDK names the errors it models after their shapes (`NotFoundException`), the others after
 * the wire code (`InvalidClientTokenId`). An entry's `Code` in the `Failed` list is the wire code.
 * The table holds both spellings.
 *
 * The table is docs/senders.md's "SNS errors" table; keep the two in step.
 */
import type { PermanentDeliveryError, RetryableDeliveryError } from '../../core/errors.js';
import {
  type AwsBatchService,
  awsBatchCallError,
  awsBatchEntryError,
  classifyAwsBatchError,
  type AwsBatchFailureClass as SnsFailureClass,
} from '../aws-batch-errors.js';

/** SNS's waits: throttled `SNS_THROTTLED_RETRY_AFTER_MS`, blocked `SNS_BLOCKED_RETRY_AFTER_MS`. */
export type { SnsFailureClass };

/**
 * Ten seconds: SNS's publish quotas are per second, so its throttling clears within seconds,
 * unlike SES's daily quota.
 */
export const SNS_THROTTLED_RETRY_AFTER_MS = 10 * 1000;

/**
 * An hour, for failures only an operator can clear (credentials, permissions, a topic that does
 * not exist, its KMS key): ten attempts an hour apart give an operator most of a working day
 * before anything goes dead, instead of dead-lettering every message of a misconfigured topic
 * within minutes.
 */
export const SNS_BLOCKED_RETRY_AFTER_MS = 60 * 60 * 1000;

/** SNS error codes by class: the wire codes, and the SDK's names for those it models. */
export const SNS_ERROR_CODES: Readonly<Record<string, SnsFailureClass>> = {
  Throttled: 'throttled',
  ThrottledException: 'throttled',
  Throttling: 'throttled',
  ThrottlingException: 'throttled',
  KMSThrottling: 'throttled',
  KMSThrottlingException: 'throttled',

  NotFound: 'blocked',
  NotFoundException: 'blocked',
  AuthorizationError: 'blocked',
  AuthorizationErrorException: 'blocked',
  InvalidSecurity: 'blocked',
  InvalidSecurityException: 'blocked',
  KMSAccessDenied: 'blocked',
  KMSAccessDeniedException: 'blocked',
  KMSDisabled: 'blocked',
  KMSDisabledException: 'blocked',
  KMSInvalidState: 'blocked',
  KMSInvalidStateException: 'blocked',
  KMSNotFound: 'blocked',
  KMSNotFoundException: 'blocked',
  KMSOptInRequired: 'blocked',
  InvalidClientTokenId: 'blocked',
  UnrecognizedClientException: 'blocked',
  SignatureDoesNotMatch: 'blocked',
  IncompleteSignature: 'blocked',
  MissingAuthenticationToken: 'blocked',
  ExpiredToken: 'blocked',
  ExpiredTokenException: 'blocked',
  AccessDenied: 'blocked',
  AccessDeniedException: 'blocked',
  OptInRequired: 'blocked',

  InternalError: 'transient',
  InternalErrorException: 'transient',
  InternalFailure: 'transient',
  ServiceUnavailable: 'transient',
  RequestTimeout: 'transient',
  TimeoutError: 'transient',
  AbortError: 'transient',
  // The sender keeps each call within 256 KiB by the entries' sizes: a call SNS still finds
  // too long (a topic whose MaximumMessageSize is lower) is tried again in a later batch.
  BatchRequestTooLong: 'transient',
  BatchRequestTooLongException: 'transient',

  InvalidParameter: 'rejected',
  InvalidParameterException: 'rejected',
  InvalidParameterValue: 'rejected',
  ParameterValueInvalid: 'rejected',
  InvalidParameterValueException: 'rejected',
  ValidationException: 'rejected',
};

/** SNS's words and waits for the errors both AWS batch senders word alike. */
const SNS: AwsBatchService = {
  name: 'SNS',
  verb: 'publish',
  operatorFixes: 'the topic ARN, the credentials, or their sns:Publish and KMS permissions',
  codes: SNS_ERROR_CODES,
  throttledRetryAfterMs: SNS_THROTTLED_RETRY_AFTER_MS,
  blockedRetryAfterMs: SNS_BLOCKED_RETRY_AFTER_MS,
};

/**
 * Sorts a failed call: by error code first, then throttling as the SDK marks it or a 429, then
 * HTTP status and `$fault` (408, 5xx and server faults transient; other 4xx rejected); an error
 * with no HTTP status at all (connection refused, reset, DNS, timeout, abort) is transient.
 */
export function classifySnsError(error: unknown): SnsFailureClass {
  return classifyAwsBatchError(error, SNS_ERROR_CODES);
}

/** One entry of `PublishBatch`'s `Failed` list. */
export interface SnsEntryFailure {
  Code?: string;
  Message?: string;
  SenderFault?: boolean;
}

/**
 * The outbox error for a failed call. The message names the code, the HTTP status and SNS's
 * text, and says when an operator has to act; the code, status and destination go into attempt
 * history.
 */
export function snsDeliveryError(
  error: unknown,
  destination: string,
  signal?: AbortSignal,
): PermanentDeliveryError | RetryableDeliveryError {
  return awsBatchCallError(SNS, error, destination, signal);
}

/**
 * The outbox error for one entry of a batch that SNS refused: by its code when the table lists
 * it, else rejected when SNS says it was the sender's fault and transient when it was SNS's own.
 */
export function snsEntryError(
  failure: SnsEntryFailure,
  destination: string,
): PermanentDeliveryError | RetryableDeliveryError {
  return awsBatchEntryError(SNS, failure, destination);
}
