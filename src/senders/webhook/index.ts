// `outbox-relay/webhook`: signed webhooks (Standard Webhooks) over fetch, on every runtime. The
// DNS check for Node and Lambda, `nodeHostResolver`, is on `outbox-relay/node` and
// `outbox-relay/aws-lambda`: it needs Node's resolver, which Workers do not have.
export {
  type DestinationPolicyOptions,
  forbiddenAddressReason,
  type HostResolver,
} from './destination-policy.js';
export { retryAfterMs } from './retry-after.js';
export {
  type EndpointSecretLookup,
  type WebhookSenderFromEnvOptions,
  webhookSenderFromEnv,
} from './webhook-from-env.js';
export {
  type ParsedWebhook,
  parseWebhookPayload,
  type WebhookPayload,
  webhookPayloadValidator,
} from './webhook-payload.js';
export {
  DEFAULT_SECRET_LOOKUP_SUBREQUESTS,
  DEFAULT_WEBHOOK_USER_AGENT,
  RESPONSE_SNIPPET_CHARACTERS,
  type WebhookSecretLookup,
  type WebhookSenderConfig,
  webhookSender,
} from './webhook-sender.js';
export {
  decodeWebhookSecret,
  generateWebhookSecret,
  signWebhook,
  WEBHOOK_SECRET_PREFIX,
  type WebhookSignatureHeaders,
  type WebhookSigner,
  webhookSigner,
} from './webhook-signature.js';
export {
  checkWebhookUrl,
  MAX_WEBHOOK_URL_LENGTH,
  webhookUrlProblem,
} from './webhook-url.js';
