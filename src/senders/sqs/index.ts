// `outbox-relay/sqs`: messages to Amazon SQS queues, standard and FIFO, ten a call. The one
// entry that loads `@aws-sdk/client-sqs` (an optional peer: install it beside outbox-relay to
// send to SQS).
export {
  classifySqsError,
  SQS_BLOCKED_RETRY_AFTER_MS,
  SQS_ERROR_CODES,
  SQS_THROTTLED_RETRY_AFTER_MS,
  type SqsEntryFailure,
  type SqsFailureClass,
  sqsDeliveryError,
  sqsEntryError,
} from './sqs-errors.js';
export { sqsConfigFromEnv, sqsSenderFromEnv } from './sqs-from-env.js';
export {
  SQS_MAX_BATCH,
  SQS_MAX_BATCH_BYTES,
  SQS_MESSAGE_KEY_ATTRIBUTE,
  type SqsCredentials,
  type SqsSenderConfig,
  sqsSender,
} from './sqs-sender.js';
