/**
 * `outbox-relay/sql`: for the tables you write beside the outbox, in the same transactions:
 * your own migrations run the way the outbox's are, the schema-name rule, the text rule the
 * outbox applies to every message, and the SQLSTATE checks that turn a constraint into a clear
 * answer. The outbox's own schema is migrated by `outbox.migrate(db)` alone.
 */
import type { BatchSqlExecutor } from '../core/ports.js';
import { type MigrateResult, type Migration, migrate as runMigrations } from './migrate.js';

export { checkStorableText, storableTextProblem } from '../core/storable-text.js';
export {
  FOREIGN_KEY_VIOLATION,
  isRetryableDatabaseError,
  UNIQUE_VIOLATION,
  violates,
} from '../drivers/postgres-errors.js';
export type { MigrateResult, Migration } from './migrate.js';
export { quoteSchema } from './schema-name.js';

export interface OwnMigrateOptions {
  /** The schema your migrations create and write (`{{schema}}` in their SQL), e.g. `shop`. */
  schema: string;
  /** Your migrations, in version order; bundle them as modules where there is no filesystem. */
  migrations: readonly Migration[];
}

/**
 * Brings your own schema up to date with your migrations: what `outbox.migrate(db)` does for
 * the outbox. Idempotent, and safe when several processes (or Workers) run it at once: ONE
 * transaction that first takes an advisory lock on the schema name, so a second caller waits,
 * then finds every version recorded (in `<schema>.schema_migrations`) and does nothing. A single
 * batch, so it works over Neon's HTTP driver as over pg and Neon WebSocket connections.
 *
 * @example
 * await migrate(pgExecutor(pool), {
 *   schema: 'shop',
 *   migrations: [{ version: 1, name: 'orders', sql: 'CREATE TABLE {{schema}}.orders (id bigint PRIMARY KEY);' }],
 * });
 */
export function migrate(db: BatchSqlExecutor, options: OwnMigrateOptions): Promise<MigrateResult> {
  return runMigrations(db, { schema: options.schema, migrations: options.migrations });
}
