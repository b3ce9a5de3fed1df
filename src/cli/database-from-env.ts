/**
 * The CLI's database and outbox, from the environment and the config file: `DATABASE_URL`
 * (required), the schema from the config's `schema`, else `OUTBOX_SCHEMA` (default `outbox`),
 * and named prepared statements from the config's `database.prepare`, else `OUTBOX_PREPARE`
 * (default on), over a `pg` Pool.
 */
import type pg from 'pg';
import type { BatchSqlExecutor } from '../core/ports.js';
import { pgExecutor } from '../drivers/node-pg.js';
import { createOutbox, type Outbox } from '../outbox.js';
import { switchFromEnv } from '../runtime/env.js';
import { emailPayloadValidator } from '../senders/ses/email-payload.js';
import { webhookPayloadValidator } from '../senders/webhook/webhook-payload.js';
import type { PostgresOutboxStore } from '../store/postgres-store.js';
import { DEFAULT_SCHEMA } from '../store/schema-name.js';
import { CliError, connectionFailureReason } from './cli-errors.js';
import { type CliIo, writeNote } from './cli-io.js';
import type { CommandContext } from './command.js';
import type { OutboxCliConfig, OutboxCliDatabaseConfig } from './config.js';
import { configError } from './config-file.js';
import { cliLogger } from './drain-output.js';

/**
 * Ten seconds to connect: a Neon compute waking from suspend answers in a second or few, and
 * without a limit pg waits forever on an address that drops packets.
 */
export const CONNECT_TIMEOUT_MS = 10_000;

/** How the CLI's sessions appear in `pg_stat_activity`, unless the URL names one. */
const APPLICATION_NAME = 'outbox-cli';

/**
 * The outbox the CLI operates on. The built-in kinds get their payload checks, so
 * `outbox enqueue` refuses a malformed email or webhook before writing it, instead of the
 * drain sending it to dead letter later; the config's `kinds` add to (or replace) them.
 * Throws `ConfigurationError` for a bad schema name.
 */
export function outboxFromEnv(env: CliIo['env'], config: OutboxCliConfig = {}): Outbox {
  const schema = config.schema ?? (env.OUTBOX_SCHEMA?.trim() || DEFAULT_SCHEMA);
  return createOutbox({
    schema,
    kinds: { email: emailPayloadValidator, webhook: webhookPayloadValidator, ...config.kinds },
    keepDelivered: config.keepDelivered,
    destinations: config.destinations,
  });
}

export interface CliDatabase {
  pool: pg.Pool;
  db: BatchSqlExecutor;
  outbox: Outbox;
  store: PostgresOutboxStore;
}

/** What the database settings come from: the command's I/O and its config file. */
export type DatabaseContext = Pick<CommandContext, 'io' | 'config'> &
  Partial<Pick<CommandContext, 'configPath'>>;

/** The fields a config's `database` may set; anything else is refused. */
const DATABASE_CONFIG_FIELDS: ReadonlySet<string> = new Set<keyof OutboxCliDatabaseConfig>([
  'prepare',
]);

/**
 * Whether the CLI's executor runs repeated statements as named prepared statements: the
 * config's `database.prepare`, else `OUTBOX_PREPARE` (on/off), else on. A malformed value
 * either way is a configuration error (exit 3).
 */
export function prepareSetting(context: DatabaseContext): boolean {
  const database = context.config.database ?? {};
  const where = context.configPath ?? 'outbox.config';
  for (const field of Object.keys(database)) {
    if (!DATABASE_CONFIG_FIELDS.has(field)) {
      throw configError(
        where,
        `unknown field "database.${field}"; expected ${[...DATABASE_CONFIG_FIELDS].join(', ')}`,
      );
    }
  }
  if (database.prepare !== undefined) {
    if (typeof database.prepare !== 'boolean') {
      throw configError(where, 'database.prepare must be a boolean');
    }
    return database.prepare;
  }
  return switchFromEnv(context.io.env, 'OUTBOX_PREPARE', true);
}

/**
 * Connects (proving the database is reachable before any command runs), hands the database to
 * `use`, and always closes the pool after. A missing or malformed DATABASE_URL is a
 * configuration error (exit 3); a failed connection is "unreachable" (exit 4), named by
 * host, port and database, never by the password. Behind a pooler that loses named statements
 * the executor goes unnamed and `io.stderr` gets one `warn:` line saying so.
 */
export async function withDatabase<T>(
  context: DatabaseContext,
  outbox: Outbox,
  use: (database: CliDatabase) => Promise<T>,
): Promise<T> {
  const { io } = context;
  const prepare = prepareSetting(context);
  const url = io.env.DATABASE_URL?.trim();
  if (!url) {
    throw new CliError(
      'CLI_CONFIGURATION',
      'DATABASE_URL is not set: export the postgres:// URL of the database that holds the outbox',
    );
  }
  const where = describeServer(url);
  const { Pool } = await loadPg();
  const pool = new Pool({
    connectionString: url,
    connectionTimeoutMillis: CONNECT_TIMEOUT_MS,
    fallback_application_name: APPLICATION_NAME,
  });
  // An idle connection the server drops must not crash the process (pg emits 'error' on the
  // pool); the next query opens a fresh connection.
  pool.on('error', (error) => {
    writeNote(io, `database connection dropped: ${connectionFailureReason(error)}`);
  });
  try {
    try {
      const client = await pool.connect();
      client.release();
    } catch (error) {
      throw new CliError(
        'CLI_UNREACHABLE',
        `cannot connect to the database at ${where}: ${connectionFailureReason(error)}`,
        { cause: error },
      );
    }
    const db = pgExecutor(pool, { prepare, logger: cliLogger(io) });
    return await use({ pool, db, outbox, store: outbox.store(db) });
  } finally {
    await pool.end().catch(() => {});
  }
}

/**
 * `pg` is an optional peer (a Workers user never needs it): loaded when a command first needs
 * the database, so `outbox --help` works without it and its absence is a clear exit 3.
 */
async function loadPg(): Promise<typeof pg> {
  try {
    return (await import('pg')).default;
  } catch (error) {
    throw new CliError(
      'CLI_CONFIGURATION',
      'the outbox CLI talks to PostgreSQL through the pg package: npm install pg',
      { cause: error },
    );
  }
}

/** `host:port/database` of a postgres URL: enough to tell servers apart, no credentials. */
function describeServer(url: string): string {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new CliError(
      'CLI_CONFIGURATION',
      'DATABASE_URL is not a URL: expected postgres://user:password@host:port/database',
    );
  }
  if (parsed.protocol !== 'postgres:' && parsed.protocol !== 'postgresql:') {
    throw new CliError(
      'CLI_CONFIGURATION',
      `DATABASE_URL must start with postgres:// or postgresql://, not ${parsed.protocol}//`,
    );
  }
  return `${parsed.hostname || 'localhost'}:${parsed.port || '5432'}${parsed.pathname}`;
}
