// The public API of outbox-relay. Everything a user imports comes from here.
export {
  defineConfig,
  type OutboxCliConfig,
  type OutboxCliContext,
  type OutboxCliDrainConfig,
} from './cli/config.js';
export { drainOnce } from './core/drain.js';
export {
  DEFAULT_BATCH_SIZE,
  DEFAULT_CONCURRENCY,
  DEFAULT_LEASE_MS,
  DEFAULT_PREFETCH,
  DEFAULT_ROUND_TRIP_RESERVE_MS,
  DEFAULT_SEND_TIMEOUT_MS,
  DEFAULT_SETTLE_GROUP_MS,
  DEFAULT_SETTLE_GROUP_SIZE,
  type DrainOptions,
  type DrainReport,
  type DrainTuning,
  type StopReason,
} from './core/drain-settings.js';
export {
  ConfigurationError,
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
export {
  DEFAULT_MAX_ATTEMPTS,
  type JsonValue,
  MAX_KEY_LENGTH,
  MAX_MESSAGES_PER_ENQUEUE,
  MAX_PAYLOAD_BYTES,
  type NewMessage,
  type PayloadValidator,
} from './core/message.js';
export { isMessageId, MAX_MESSAGE_ID } from './core/message-id.js';
export type {
  ClaimedMessage,
  ExhaustedMessage,
  MessageRecord,
  MessageState,
  OutboxStats,
} from './core/outbox-store.js';
export {
  type BatchSqlExecutor,
  type Clock,
  type IdGenerator,
  type Logger,
  type QueryResult,
  randomId,
  type SqlExecutor,
  type Statement,
  silentLogger,
  systemClock,
  timeOrderedId,
} from './core/ports.js';
export {
  DEFAULT_KEEP_DEAD_MS,
  DEFAULT_KEEP_DELIVERED_MS,
  DEFAULT_PURGE_LIMIT,
  type PurgeOptions,
  type PurgeReport,
  type PurgeRequest,
  purgeOnce,
} from './core/purge.js';
export {
  type BackoffOptions,
  DEFAULT_BACKOFF_BASE_MS,
  DEFAULT_BACKOFF_CAP_MS,
} from './core/retry-policy.js';
export type { OutboundMessage, SendContext, Sender, SenderRegistry } from './core/sender.js';
export { dead, delivered, release, retry, type Settlement } from './core/settlement.js';
export { checkStorableText, storableTextProblem } from './core/storable-text.js';
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
  FOREIGN_KEY_VIOLATION,
  isRetryableDatabaseError,
  RETRYABLE_SQLSTATES,
  UNIQUE_VIOLATION,
  violates,
} from './drivers/postgres-errors.js';
export { type ErrorBody, errorResponse, type Issue, pathOfField } from './http/json-errors.js';
export {
  BUILT_IN_KINDS,
  createOutbox,
  type EnqueueStatement,
  type Outbox,
  type OutboxOptions,
} from './outbox.js';
export {
  budgetedTimeouts,
  createDrainer,
  type Drainer,
  type DrainerOptions,
  type DrainRequest,
  MIN_DRAIN_BUDGET_MS,
  runScheduledDrain,
  type ScheduledRunOptions,
  type ScheduledRunResult,
} from './runtime/drainer.js';
export {
  type EnvLike,
  integerFromEnv,
  type PostgresUrlOptions,
  postgresUrlFromEnv,
  readEnv,
  switchFromEnv,
} from './runtime/env.js';
export { type JsonLoggerOptions, jsonLogger, logFailure, logReport } from './runtime/json-log.js';
export { DEFAULT_KICK_BUDGET_MS, type KickOptions, kickAfterCommit } from './runtime/kick.js';
export {
  type EndpointSecretLookup,
  type SendersFromEnv,
  type SendersFromEnvOptions,
  sendersFromEnv,
} from './runtime/senders-from-env.js';
export * from './senders/index.js';
export {
  type MigrateOptions,
  type MigrateResult,
  type Migration,
  migrate,
} from './store/migrate.js';
export type { ListPage, ListRequest } from './store/postgres-store.js';
export { PostgresOutboxStore } from './store/postgres-store.js';
export { quoteSchema } from './store/schema-name.js';
