/**
 * The shape of `outbox.config.ts`: what a project tells the `outbox` command beyond the
 * environment. Types only and `defineConfig`, so a config file imports nothing heavy. Import
 * from `outbox-relay/cli`.
 */
import type { DrainTuning } from '../core/drain-settings.js';
import type { SqlExecutor } from '../core/ports.js';
import type { SenderRegistry } from '../core/sender.js';
import type { OutboxOptions } from '../outbox.js';

/**
 * What the CLI hands a config's functions when they run: its database connection (the
 * `DATABASE_URL` pool, so a lookup reads your own tables), and its environment.
 */
export interface OutboxCliContext {
  db: SqlExecutor;
  env: Readonly<Record<string, string | undefined>>;
}

/**
 * Drain settings: the fields `drainOnce` and `createDrainer` take by the same names
 * ({@link DrainTuning}), which reach the drain as set (a `--budget-ms` or tick budget may only
 * lower `sendTimeoutMs` and `roundTripReserveMs` to fit), and the loop's own two.
 * `--batch-size`, `--concurrency`, `--interval` and `--budget-ms` win over these.
 */
export interface OutboxCliDrainConfig extends DrainTuning {
  /** Rest between drains when one found nothing left (`--interval`). */
  intervalMs?: number;
  /** Each drain's deadline (`--budget-ms`); default 60 s per continuous tick, none with `--once`. */
  budgetMs?: number;
}

/** How the CLI talks to the database; each field wins over its environment variable. */
export interface OutboxCliDatabaseConfig {
  /**
   * Named prepared statements (`OUTBOX_PREPARE`). Default true. `false` behind a pooler in
   * transaction mode that does not keep them (PgBouncer before 1.21 or with
   * `max_prepared_statements = 0`, Supavisor's transaction mode): left on, the first statement
   * that fails for it is run again unnamed and the command goes on unnamed, with one warning.
   * See docs/deploy.md, "Behind a pooler".
   */
  prepare?: boolean;
}

/**
 * The default export of `outbox.config.ts` (or `.mjs`, `.js`). Every field is optional; a field
 * left out keeps the environment-based default.
 *
 * @example
 * // outbox.config.ts
 * import { defineConfig } from 'outbox-relay/cli';
 *
 * export default defineConfig({
 *   endpointSecret: async (endpointId, { db }) => {
 *     const { rows } = await db.query(
 *       'SELECT secret FROM my_hooks WHERE id = $1 AND enabled',
 *       [endpointId],
 *     );
 *     return rows[0]?.secret as string | undefined;
 *   },
 *   drain: { batchSize: 50 },
 * });
 */
export interface OutboxCliConfig {
  /** Schema of the outbox tables; wins over `OUTBOX_SCHEMA`. */
  schema?: string;
  /** Your own kinds and their payload checks, as `createOutbox({ kinds })` takes them. */
  kinds?: OutboxOptions['kinds'];
  /** As `createOutbox({ keepDelivered })`: set it as your app and functions do. Default true. */
  keepDelivered?: boolean;
  /** Your kinds' destination functions, as `createOutbox({ destinations })` takes them. */
  destinations?: OutboxOptions['destinations'];
  /**
   * Senders by kind, replacing the environment-built one of the same kind (email from SES
   * variables, webhook from `OUTBOX_WEBHOOK_*`). A function is called once the database is
   * connected.
   */
  senders?:
    | SenderRegistry
    | ((context: OutboxCliContext) => SenderRegistry | Promise<SenderRegistry>);
  /**
   * The signing secret of the webhook endpoint a payload names by `endpointId`, for the
   * environment-built webhook sender. `undefined` means the endpoint is gone or disabled: the
   * message fails permanently. A throw is retried. Without this, webhooks naming an endpoint
   * fail permanently.
   */
  endpointSecret?: (endpointId: string, context: OutboxCliContext) => Promise<string | undefined>;
  drain?: OutboxCliDrainConfig;
  database?: OutboxCliDatabaseConfig;
}

/**
 * Types an `outbox.config.ts` default export; returns it unchanged.
 *
 * @example
 * export default defineConfig({ schema: 'jobs', drain: { concurrency: 4 } });
 */
export function defineConfig(config: OutboxCliConfig): OutboxCliConfig {
  return config;
}
