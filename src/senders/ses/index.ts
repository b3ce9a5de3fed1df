// `outbox-relay/ses`: email through Amazon SES. The one entry that loads `@aws-sdk/client-ses`
// (an optional peer: install it beside outbox-relay to send email).
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
} from './email-payload.js';
export { MESSAGE_KEY_HEADER } from './mime-message.js';
export { type SesCredentials, type SesSenderConfig, sesConfigFromEnv } from './ses-config.js';
export {
  classifySesError,
  SES_BLOCKED_RETRY_AFTER_MS,
  SES_ERROR_CODES,
  SES_THROTTLED_RETRY_AFTER_MS,
  type SesFailureClass,
  sesDeliveryError,
} from './ses-errors.js';
export { sesSenderFromEnv } from './ses-from-env.js';
export { sesSender } from './ses-sender.js';
