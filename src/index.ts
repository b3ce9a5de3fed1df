// `outbox-relay`: what a user needs to enqueue, to drain, and to type those calls. Everything
// else lives on the subpath it belongs to (docs/api.md lists them all): senders on
// `outbox-relay/ses` and `outbox-relay/webhook`, each runtime's kit on its own, your own tables'
// migrations and SQL helpers on `outbox-relay/sql`, environment readers on `outbox-relay/env`.
// Nothing here loads a provider SDK or a Node built-in.

export type {
  DestinationChange,
  DestinationHealthPolicy,
  DestinationRecord,
  PauseCause,
} from './core/destination-health.js';
export { drainOnce } from './core/drain.js';
export type {
  DrainOptions,
  DrainReport,
  DrainResume,
  DrainTuning,
  StopReason,
} from './core/drain-settings.js';
export {
  ConfigurationError,
  type DeliveryDetails,
  type DeliveryErrorOptions,
  describeError,
  isOutboxError,
  isPermanentDeliveryError,
  isRetryableDeliveryError,
  isSubrequestBudgetError,
  isValidationError,
  OutboxError,
  type OutboxErrorCode,
  PermanentDeliveryError,
  RetryableDeliveryError,
  SubrequestBudgetError,
  ValidationError,
} from './core/errors.js';
export type { DestinationOf, JsonValue, NewMessage, PayloadValidator } from './core/message.js';
export type {
  AttemptRecord,
  ClaimedMessage,
  ExhaustedMessage,
  MessageRecord,
  MessageState,
  OutboxStats,
} from './core/outbox-store.js';
export type {
  BatchSqlExecutor,
  Clock,
  IdGenerator,
  Logger,
  QueryResult,
  SqlExecutor,
  Statement,
} from './core/ports.js';
export { type PurgeOptions, type PurgeReport, purgeOnce } from './core/purge.js';
export type { BackoffOptions } from './core/retry-policy.js';
export type {
  BatchItemResult,
  BatchSender,
  DeliveryReceipt,
  OutboundMessage,
  SendContext,
  Sender,
  SenderRegistry,
} from './core/sender.js';
export type { TraceContext, TraceContextSource } from './core/trace-context.js';
export {
  type NeonHttpLike,
  type NeonTransactionQuery,
  neonHttpExecutor,
  neonHttpQuery,
} from './drivers/neon-http.js';
export { neonWsExecutor } from './drivers/neon-ws.js';
export {
  type PgExecutorOptions,
  type PgPoolLike,
  type PgQueryableLike,
  pgExecutor,
} from './drivers/node-pg.js';
export {
  createOutbox,
  type EnqueueStatement,
  type Outbox,
  type OutboxOptions,
} from './outbox.js';
export {
  createDrainer,
  type Drainer,
  type DrainerOptions,
  type DrainRequest,
} from './runtime/drainer.js';
export { type JsonLoggerOptions, jsonLogger } from './runtime/json-log.js';
export { type KickOptions, kickAfterCommit } from './runtime/kick.js';
export { limitSender, type SendLimits } from './senders/rate-limit.js';
export type { PostgresDestinationStore } from './store/destination-store.js';
export type { MigrateResult } from './store/migrate.js';
// The type of `outbox.store(db)`. A type only: `outbox.store(db)` is the one way to make one.
export type {
  HoldingHead,
  ListPage,
  ListRequest,
  MessageFilter,
  PostgresOutboxStore,
} from './store/postgres-store.js';
