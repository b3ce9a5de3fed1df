// `outbox-relay/sns`: messages to Amazon SNS topics, standard and FIFO, ten a call. The one
// entry that loads `@aws-sdk/client-sns` (an optional peer: install it beside outbox-relay to
// publish to SNS).
export {
  classifySnsError,
  SNS_BLOCKED_RETRY_AFTER_MS,
  SNS_ERROR_CODES,
  SNS_THROTTLED_RETRY_AFTER_MS,
  type SnsEntryFailure,
  type SnsFailureClass,
  snsDeliveryError,
  snsEntryError,
} from './sns-errors.js';
export { snsConfigFromEnv, snsSenderFromEnv } from './sns-from-env.js';
export {
  SNS_MAX_BATCH,
  SNS_MAX_BATCH_BYTES,
  SNS_MESSAGE_KEY_ATTRIBUTE,
  type SnsCredentials,
  type SnsSenderConfig,
  snsSender,
} from './sns-sender.js';
