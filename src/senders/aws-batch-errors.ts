/**
 * The errors of the two AWS batch senders (SQS `SendMessageBatch`, SNS `PublishBatch`): one way
 * to sort a failed call or a refused entry into four classes, and one way to word the outbox
 * error for each, each service with its own table of codes and its own words.
 */
import { PermanentDeliveryError, RetryableDeliveryError } from '../core/errors.js';
import { readSdkError } from './aws-sdk-errors.js';

/**
 * What to do about one kind of failure, in either service: the classes its table of codes sorts
 * into (`SqsFailureClass`, `SnsFailureClass`; each module names its own codes and waits).
 */
export type AwsBatchFailureClass =
  /** The service or KMS is throttling the account: retry after the service's throttled wait. */
  | 'throttled'
  /**
   * Only an operator can clear it (credentials, permissions, the queue or topic, its KMS key):
   * retry after the service's blocked wait.
   */
  | 'blocked'
  /** A blip (5xx, timeout, dropped connection, a call too long): retry with backoff. */
  | 'transient'
  /** The service refused the message for good (too long, an invalid parameter): dead letter. */
  | 'rejected';

/** One entry of an answer's `Failed` list, as both services write it. */
export interface AwsBatchEntryFailure {
  Code?: string;
  Message?: string;
  SenderFault?: boolean;
}

/** What a service's errors say: its name, its verb, its table and its waits. */
export interface AwsBatchService {
  /** As an operator reads it: `SQS`, `SNS`. */
  name: string;
  /** What a call does, for an abandoned one: `send`, `publish`. */
  verb: string;
  /** What only an operator can fix, for a blocked call. */
  operatorFixes: string;
  codes: Readonly<Record<string, AwsBatchFailureClass>>;
  throttledRetryAfterMs: number;
  blockedRetryAfterMs: number;
}

/**
 * Sorts a failed call: by error code first, then throttling as the SDK marks it or a 429, then
 * HTTP status and `$fault` (408, 5xx and server faults transient; other 4xx rejected); an error
 * with no HTTP status at all (connection refused, reset, DNS, timeout, abort) is transient.
 */
export function classifyAwsBatchError(
  error: unknown,
  codes: Readonly<Record<string, AwsBatchFailureClass>>,
): AwsBatchFailureClass {
  const { name, status, fault, throttling } = readSdkError(error);
  const listed = codes[name];
  if (listed !== undefined) return listed;
  if (throttling || status === 429) return 'throttled';
  if (status === undefined) return 'transient';
  if (status === 408 || status >= 500 || fault === 'server') return 'transient';
  return 'rejected';
}

/**
 * The outbox error for a failed call. The message names the code, the HTTP status and the
 * service's text, and says when an operator has to act; the code, status and destination go
 * into attempt history.
 */
export function awsBatchCallError(
  service: AwsBatchService,
  error: unknown,
  destination: string,
  signal?: AbortSignal,
): PermanentDeliveryError | RetryableDeliveryError {
  const { name, message, status } = readSdkError(error);
  return deliveryError(
    service,
    classifyAwsBatchError(error, service.codes),
    { name, message, status, destination },
    error,
    signal,
  );
}

/**
 * The outbox error for one entry the service refused in an answer that may have taken others:
 * by its code when the table lists it, else rejected when the service says it was the sender's
 * fault and transient when it was its own.
 */
export function awsBatchEntryError(
  service: AwsBatchService,
  failure: AwsBatchEntryFailure,
  destination: string,
): PermanentDeliveryError | RetryableDeliveryError {
  const name = failure.Code ?? 'EntryFailed';
  const listed = service.codes[name];
  const kind = listed ?? (failure.SenderFault === false ? 'transient' : 'rejected');
  const message = failure.Message ?? 'no reason given';
  return deliveryError(service, kind, { name, message, status: undefined, destination }, failure);
}

function deliveryError(
  service: AwsBatchService,
  kind: AwsBatchFailureClass,
  facts: { name: string; message: string; status: number | undefined; destination: string },
  cause: unknown,
  signal?: AbortSignal,
): PermanentDeliveryError | RetryableDeliveryError {
  const { name, message, status, destination } = facts;
  const details = { providerCode: name || undefined, status, destination };
  const detail = message === name ? '' : `: ${message}`;
  const what = `${service.name} ${name || 'error'}${status === undefined ? '' : ` (HTTP ${status})`}${detail}`;
  const sentence = what.endsWith('.') ? what : `${what}.`;
  if (signal?.aborted) {
    return new RetryableDeliveryError(
      `${service.name} ${service.verb} abandoned: the send's time was up (${what})`,
      { cause, ...details },
    );
  }
  switch (kind) {
    case 'throttled':
      return new RetryableDeliveryError(
        `${sentence} ${service.name} is throttling the account; retrying in ${service.throttledRetryAfterMs / 1000} s.`,
        { cause, ...details, retryAfterMs: service.throttledRetryAfterMs },
      );
    case 'blocked':
      return new RetryableDeliveryError(
        `${sentence} An operator must act (${service.operatorFixes}). Retrying in ${service.blockedRetryAfterMs / 3_600_000} h.`,
        { cause, ...details, retryAfterMs: service.blockedRetryAfterMs },
      );
    case 'transient':
      return new RetryableDeliveryError(what, { cause, ...details });
    case 'rejected':
      return new PermanentDeliveryError(what, { cause, ...details });
  }
}
