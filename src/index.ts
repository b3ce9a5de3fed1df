// The public API of outbox-relay. Everything a user imports comes from here.
export {
  defineConfig,
  type OutboxCliConfig,
  type OutboxCliContext,
  type OutboxCliDrainConfig,
} from './cli/config.js';
export {
  DEFAULT_BATCH_SIZE,
  DEFAULT_CONCURRENCY,
  DEFAULT_LEASE_MS,
  DEFAULT_PREFETCH,
  DEFAULT_ROUND_TRIP_RESERVE_MS,
  DEFAULT_SEND_TIMEOUT_MS,
  type DrainOptions,
  type DrainReport,
  drainOnce,
  type StopReason,
} from './core/drain.js';
export {
  ConfigurationError,
  describeError,
  isOutboxError,
  isPermanentDeliveryError,
  isRetryableDeliveryError,
  isValidationError,
  OutboxError,
  type OutboxErrorCode,
  PermanentDeliveryError,
  RetryableDeliveryError,
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
export type {
  ClaimedMessage,
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
export type { OutboundMessage, Sender, SenderRegistry } from './core/sender.js';
export { dead, delivered, release, retry, type Settlement } from './core/settlement.js';
export { type NeonHttpLike, neonHttpExecutor, neonHttpQuery } from './drivers/neon-http.js';
export { neonWsExecutor } from './drivers/neon-ws.js';
export { type PgPoolLike, type PgQueryableLike, pgExecutor } from './drivers/node-pg.js';
export { isRetryableDatabaseError, RETRYABLE_SQLSTATES } from './drivers/postgres-errors.js';
export {
  BUILT_IN_KINDS,
  createOutbox,
  type EnqueueStatement,
  type Outbox,
  type OutboxOptions,
} from './outbox.js';
export {
  type MigrateOptions,
  type MigrateResult,
  type Migration,
  migrate,
} from './store/migrate.js';
export type { ListPage, ListRequest } from './store/postgres-store.js';
export { PostgresOutboxStore } from './store/postgres-store.js';
