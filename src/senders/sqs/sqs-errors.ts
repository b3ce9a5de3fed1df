/**
 * How an Amazon SQS failure becomes an outbox outcome: a whole `SendMessageBatch` call that
 * failed (every message of it alike), or one entry SQS refused in an answer that took the
 * others. We read the error's `name` (the SQS error code; the SDK names modelled errors after
 * it), `$metadata.httpStatusCode` and `$fault`, never its class.
 *
 * The table is docs/senders.md's "SQS errors" table; keep the two in step.
 */
import type { PermanentDeliveryError, RetryableDeliveryError } from '../../core/errors.js';
import {
  type AwsBatchService,
  awsBatchCallError,
  awsBatchEntryError,
  classifyAwsBatchError,
  type AwsBatchFailureClass as SqsFailureClass,
} from '../aws-batch-errors.js';

/** SQS's waits: throttled `SQS_THROTTLED_RETRY_AFTER_MS`, blocked `SQS_BLOCKED_RETRY_AFTER_MS`. */
export type { SqsFailureClass };

/** Ten seconds: SQS's own throttling clears within seconds, unlike SES's send rate. */
export const SQS_THROTTLED_RETRY_AFTER_MS = 10 * 1000;

/**
 * An hour, for failures only an operator can clear (credentials, permissions, a queue that does
 * not exist or is being deleted): ten attempts an hour apart give an operator most of a working
 * day before anything goes dead, instead of dead-lettering every message of a misconfigured
 * queue within minutes.
 */
export const SQS_BLOCKED_RETRY_AFTER_MS = 60 * 60 * 1000;

/**
 * SQS error codes by class, as the SDK names them (the JSON protocol's short codes, and the
 * query protocol's `AWS.SimpleQueueService.*` ones some endpoints still send).
 */
export const SQS_ERROR_CODES: Readonly<Record<string, SqsFailureClass>> = {
  ThrottlingException: 'throttled',
  RequestThrottled: 'throttled',
  'AWS.SimpleQueueService.RequestThrottled': 'throttled',
  KmsThrottled: 'throttled',
  'KMS.ThrottlingException': 'throttled',

  QueueDoesNotExist: 'blocked',
  'AWS.SimpleQueueService.NonExistentQueue': 'blocked',
  QueueDeletedRecently: 'blocked',
  KmsAccessDenied: 'blocked',
  KmsDisabled: 'blocked',
  KmsNotFound: 'blocked',
  KmsInvalidState: 'blocked',
  KmsInvalidKeyUsage: 'blocked',
  KmsOptInRequired: 'blocked',
  InvalidSecurity: 'blocked',
  InvalidClientTokenId: 'blocked',
  UnrecognizedClientException: 'blocked',
  SignatureDoesNotMatch: 'blocked',
  IncompleteSignature: 'blocked',
  MissingAuthenticationToken: 'blocked',
  ExpiredToken: 'blocked',
  ExpiredTokenException: 'blocked',
  AccessDenied: 'blocked',
  AccessDeniedException: 'blocked',
  UnsupportedOperation: 'blocked',

  InternalError: 'transient',
  InternalFailure: 'transient',
  ServiceUnavailable: 'transient',
  RequestTimeout: 'transient',
  TimeoutError: 'transient',
  AbortError: 'transient',
  // The sender keeps each call within the queue's limit by the bodies' sizes: a call SQS still
  // finds too long (attributes it counts differently) is tried again in a later batch.
  BatchRequestTooLong: 'transient',
  'AWS.SimpleQueueService.BatchRequestTooLong': 'transient',

  InvalidMessageContents: 'rejected',
  InvalidParameterValue: 'rejected',
  MessageTooLong: 'rejected',
  InvalidAttributeName: 'rejected',
  InvalidAttributeValue: 'rejected',
};

/** SQS's words and waits for the errors both AWS batch senders word alike. */
const SQS: AwsBatchService = {
  name: 'SQS',
  verb: 'send',
  operatorFixes: 'the queue URL, the credentials, or their sqs:SendMessage and KMS permissions',
  codes: SQS_ERROR_CODES,
  throttledRetryAfterMs: SQS_THROTTLED_RETRY_AFTER_MS,
  blockedRetryAfterMs: SQS_BLOCKED_RETRY_AFTER_MS,
};

/**
 * Sorts a failed call: by error code first, then throttling as the SDK marks it or a 429, then
 * HTTP status and `$fault` (408, 5xx and server faults transient; other 4xx rejected); an error
 * with no HTTP status at all (connection refused, reset, DNS, timeout, abort) is transient.
 */
export function classifySqsError(error: unknown): SqsFailureClass {
  return classifyAwsBatchError(error, SQS_ERROR_CODES);
}

/** One entry of `SendMessageBatch`'s `Failed` list. */
export interface SqsEntryFailure {
  Code?: string;
  Message?: string;
  SenderFault?: boolean;
}

/**
 * The outbox error for a failed call, or (`entry`) for one entry SQS refused in an answer that
 * took others: an entry refused for the sender's fault is rejected (or throttled, or blocked, by
 * its code), one refused for SQS's own is transient. The message names the code, the HTTP
 * status and SQS's text, and says when an operator has to act; the code, status and destination
 * go into attempt history.
 */
export function sqsDeliveryError(
  error: unknown,
  destination: string,
  signal?: AbortSignal,
): PermanentDeliveryError | RetryableDeliveryError {
  return awsBatchCallError(SQS, error, destination, signal);
}

/** The outbox error for one entry of a batch that SQS refused. */
export function sqsEntryError(
  failure: SqsEntryFailure,
  destination: string,
): PermanentDeliveryError | RetryableDeliveryError {
  return awsBatchEntryError(SQS, failure, destination);
}
