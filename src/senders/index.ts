// The senders' public API: re-exported from src/index.ts. Runtime-neutral (fetch, WebCrypto and
// the AWS SDK only); the Node-only resolver lives in ./webhook/node-host-resolver.ts.
export { limitSender, type SendLimits } from './rate-limit.js';
export {
  type EmailPayload,
  emailPayloadValidator,
  MAX_EMAIL_RECIPIENTS,
  MAX_EMAIL_TAGS,
  MAX_SUBJECT_LENGTH,
  type Mailbox,
  MESSAGE_KEY_TAG,
  type ParsedEmail,
  parseEmailPayload,
} from './ses/email-payload.js';
export { MESSAGE_KEY_HEADER } from './ses/mime-message.js';
export {
  classifySesError,
  SES_BLOCKED_RETRY_AFTER_MS,
  SES_ERROR_CODES,
  SES_THROTTLED_RETRY_AFTER_MS,
  type SesFailureClass,
  sesDeliveryError,
} from './ses/ses-errors.js';
export {
  type SesCredentials,
  type SesSenderConfig,
  sesConfigFromEnv,
  sesSender,
} from './ses/ses-sender.js';
export {
  type DestinationPolicyOptions,
  forbiddenAddressReason,
  type HostResolver,
} from './webhook/destination-policy.js';
export { retryAfterMs } from './webhook/retry-after.js';
export {
  type ParsedWebhook,
  parseWebhookPayload,
  type WebhookPayload,
  webhookPayloadValidator,
} from './webhook/webhook-payload.js';
export {
  DEFAULT_SECRET_LOOKUP_SUBREQUESTS,
  DEFAULT_WEBHOOK_USER_AGENT,
  RESPONSE_SNIPPET_CHARACTERS,
  type WebhookSecretLookup,
  type WebhookSenderConfig,
  webhookSender,
} from './webhook/webhook-sender.js';
export {
  decodeWebhookSecret,
  generateWebhookSecret,
  signWebhook,
  WEBHOOK_SECRET_PREFIX,
  type WebhookSignatureHeaders,
} from './webhook/webhook-signature.js';
export {
  checkWebhookUrl,
  MAX_WEBHOOK_URL_LENGTH,
  webhookUrlProblem,
} from './webhook/webhook-url.js';
