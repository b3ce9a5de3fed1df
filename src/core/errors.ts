/**
 * Typed errors with stable `name` and `code` values.
 *
 * Check errors with {@link isOutboxError} or by `code`, not with `instanceof`: two copies of this
 * package in one bundle (or an error crossing a Worker boundary) break `instanceof`, while the
 * `code` string survives both.
 */

export type OutboxErrorCode =
  | 'OUTBOX_VALIDATION'
  | 'OUTBOX_PERMANENT_DELIVERY'
  | 'OUTBOX_RETRYABLE_DELIVERY'
  | 'OUTBOX_CONFIGURATION'
  | 'OUTBOX_DATABASE'
  | 'OUTBOX_SUBREQUEST_BUDGET';

/** Base class of every error this library throws on purpose. */
export class OutboxError extends Error {
  readonly code: OutboxErrorCode;

  constructor(code: OutboxErrorCode, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'OutboxError';
    this.code = code;
  }
}

/**
 * Input was rejected before anything was written. `field` names the offending input, as a path
 * such as `messages[2].payload.to`, so an HTTP edge can turn it into a 400 that names the field.
 */
export class ValidationError extends OutboxError {
  readonly field: string;

  constructor(field: string, message: string, options?: { cause?: unknown }) {
    super('OUTBOX_VALIDATION', `${field}: ${message}`, options);
    this.name = 'ValidationError';
    this.field = field;
  }
}

/**
 * What a sender may say about one attempt, besides its outcome: the drain records it in the
 * message's attempt history (with the time and duration it measured itself) and shows it to
 * operators. Every field is optional, and what is not storable is repaired or left out, never
 * refused (see `attemptFacts` in attempt-facts.ts).
 */
export interface DeliveryDetails {
  /** The HTTP status the provider answered, 100 to 599; any other value is not recorded. */
  status?: number;
  /** The provider's own error or result code, such as SES's `Throttling` or `ECONNREFUSED`. */
  providerCode?: string;
  /**
   * Where the attempt went: for HTTP, the URL (recorded as scheme, host and path: a user name,
   * password, query or fragment is dropped); otherwise a name such as `ses:eu-west-1`.
   */
  destination?: string;
}

/** The options every delivery error takes: a cause, and what the attempt found. */
export interface DeliveryErrorOptions extends DeliveryDetails {
  cause?: unknown;
}

/**
 * The provider refused the message for good: retrying cannot help, so it goes to dead letter.
 * The {@link DeliveryDetails} given are recorded with the attempt.
 *
 * @example
 * throw new PermanentDeliveryError('notify answered HTTP 410', {
 *   status: 410,
 *   destination: 'https://api.example.com/notify',
 * });
 */
export class PermanentDeliveryError extends OutboxError {
  readonly status: number | undefined;
  readonly providerCode: string | undefined;
  readonly destination: string | undefined;

  constructor(message: string, options?: DeliveryErrorOptions) {
    super('OUTBOX_PERMANENT_DELIVERY', message, options);
    this.name = 'PermanentDeliveryError';
    this.status = options?.status;
    this.providerCode = options?.providerCode;
    this.destination = options?.destination;
  }
}

/**
 * The send failed in a way that may pass: the message is retried after backoff. `retryAfterMs`
 * carries a provider hint (HTTP `Retry-After`, throttling); it wins when it is later than backoff.
 * The {@link DeliveryDetails} given are recorded with the attempt.
 */
export class RetryableDeliveryError extends OutboxError {
  readonly retryAfterMs: number | undefined;
  readonly status: number | undefined;
  readonly providerCode: string | undefined;
  readonly destination: string | undefined;

  constructor(message: string, options?: DeliveryErrorOptions & { retryAfterMs?: number }) {
    super('OUTBOX_RETRYABLE_DELIVERY', message, options);
    this.name = 'RetryableDeliveryError';
    this.retryAfterMs = options?.retryAfterMs;
    this.status = options?.status;
    this.providerCode = options?.providerCode;
    this.destination = options?.destination;
  }
}

/** The library was set up wrongly (bad option, missing sender, unmigrated schema). */
export class ConfigurationError extends OutboxError {
  constructor(message: string, options?: { cause?: unknown }) {
    super('OUTBOX_CONFIGURATION', message, options);
    this.name = 'ConfigurationError';
  }
}

/**
 * A sender asked for a subrequest the drain's budget cannot cover, before making it. Nothing
 * was sent: the drain hands the message back (due now, no attempt counted) and stops claiming.
 */
export class SubrequestBudgetError extends OutboxError {
  constructor(message: string) {
    super('OUTBOX_SUBREQUEST_BUDGET', message);
    this.name = 'SubrequestBudgetError';
  }
}

export function isSubrequestBudgetError(error: unknown): error is SubrequestBudgetError {
  return isOutboxError(error) && error.code === 'OUTBOX_SUBREQUEST_BUDGET';
}

/** True for any error this library raised on purpose, across package copies. */
export function isOutboxError(error: unknown): error is OutboxError {
  return (
    typeof error === 'object' &&
    error !== null &&
    'code' in error &&
    typeof error.code === 'string' &&
    error.code.startsWith('OUTBOX_')
  );
}

export function isValidationError(error: unknown): error is ValidationError {
  return isOutboxError(error) && error.code === 'OUTBOX_VALIDATION';
}

export function isPermanentDeliveryError(error: unknown): error is PermanentDeliveryError {
  return isOutboxError(error) && error.code === 'OUTBOX_PERMANENT_DELIVERY';
}

export function isRetryableDeliveryError(error: unknown): error is RetryableDeliveryError {
  return isOutboxError(error) && error.code === 'OUTBOX_RETRYABLE_DELIVERY';
}

/**
 * A description of any thrown value, for logs and the `last_error` column (where settlement.ts
 * makes it storable). Never throws: a sender may reject with anything, even a value whose
 * `message` getter or string conversion throws, and its message must still be settled.
 */
export function describeError(error: unknown): string {
  try {
    if (error instanceof Error) {
      return error.message ? `${error.name}: ${error.message}` : String(error.name);
    }
    return String(error);
  } catch {
    return 'a thrown value that cannot be turned into text';
  }
}
