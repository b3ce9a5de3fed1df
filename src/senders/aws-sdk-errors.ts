/**
 * What the AWS SDK's errors say, read structurally (no SDK type, no class check), for the SES,
 * SQS and SNS senders' error tables.
 */

/** The fields of an SDK error we read. */
interface SdkErrorLike {
  name?: unknown;
  message?: unknown;
  $fault?: unknown;
  $metadata?: { httpStatusCode?: unknown };
  $retryable?: { throttling?: unknown };
}

/**
 * An SDK error's code (its `name`, or a Node network error's own code such as ECONNREFUSED),
 * text, HTTP status (undefined when no response came), fault side, and whether the SDK marked
 * it throttling.
 */
export function readSdkError(error: unknown) {
  const fields: SdkErrorLike = typeof error === 'object' && error !== null ? error : {};
  const status = fields.$metadata?.httpStatusCode;
  const code = typeof fields.name === 'string' ? fields.name : '';
  // Node's network errors carry their code (ECONNREFUSED) apart from the message.
  const systemCode =
    typeof error === 'object' && error !== null && 'code' in error && typeof error.code === 'string'
      ? error.code
      : undefined;
  const text =
    typeof fields.message === 'string' && fields.message !== '' ? fields.message : String(error);
  return {
    name: code === 'Error' && systemCode ? systemCode : code,
    message: text,
    status: typeof status === 'number' ? status : undefined,
    fault: fields.$fault,
    throttling: fields.$retryable?.throttling === true,
  };
}
