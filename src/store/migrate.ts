import type { BatchSqlExecutor } from '../core/ports.js';
import { migrations as bundledMigrations } from './migrations.generated.js';
import { DEFAULT_SCHEMA, quoteSchema } from './schema-name.js';

/**
 * One migration: a file of migrations/ (the outbox's) or one of yours, bundled as a module so
 * Workers can migrate without a filesystem.
 */
export interface Migration {
  version: number;
  name: string;
  /** DDL with `{{schema}}` where the quoted schema goes. Runs inside a PL/pgSQL block. */
  sql: string;
}

export interface MigrateOptions {
  /** Schema holding the outbox tables. Default `outbox`. */
  schema?: string;
  /** Override the bundled migrations (tests). */
  migrations?: readonly Migration[];
}

export interface MigrateResult {
  schema: string;
  /** Versions this call applied; empty when the schema was already current. */
  applied: number[];
  /** The newest version now in place. */
  version: number;
}

/**
 * Brings a schema up to date: the outbox's (`outbox.migrate(db)` calls this) or, with your own
 * `migrations`, yours (`migrate` of `outbox-relay/sql`). Idempotent, and safe when several
 * processes (or Workers) run it at once: the whole migration is ONE transaction that first takes
 * a transaction-scoped advisory lock on the schema name, so a second caller waits, then finds
 * every version recorded and does nothing. Because it is a single batch with no logic between statements, it works over
 * Neon's HTTP driver (`sql.transaction`) as well as over pg and Neon WebSocket connections.
 */
export async function migrate(
  db: BatchSqlExecutor,
  options: MigrateOptions = {},
): Promise<MigrateResult> {
  const schema = options.schema ?? DEFAULT_SCHEMA;
  const quoted = quoteSchema(schema);
  const migrations = options.migrations ?? bundledMigrations;
  for (const migration of migrations) {
    if (!Number.isInteger(migration.version) || migration.version < 1) {
      throw new Error(`migration ${migration.name}: version must be a positive integer`);
    }
  }

  const results = await db.batch([
    {
      name: 'lockMigrations',
      // hashtext gives a stable int4 per schema name, so migrations of different schemas in one
      // database do not wait on each other.
      text: 'SELECT pg_advisory_xact_lock(hashtext($1))',
      params: [`outbox-relay:migrate:${schema}`],
    },
    { name: 'createSchema', text: `CREATE SCHEMA IF NOT EXISTS ${quoted}`, params: [] },
    {
      name: 'createMigrationsTable',
      text: `CREATE TABLE IF NOT EXISTS ${quoted}.schema_migrations (
        version integer PRIMARY KEY,
        name text NOT NULL,
        applied_at timestamptz NOT NULL DEFAULT now()
      )`,
      params: [],
    },
    {
      name: 'readAppliedMigrations',
      text: `SELECT version FROM ${quoted}.schema_migrations ORDER BY version`,
      params: [],
    },
    ...migrations.map((migration) => ({
      name: `applyMigration${migration.version}`,
      // A DO block, because a batch cannot branch between statements: the version check and the
      // DDL must travel together. The version is an integer we checked above, not user input.
      text: `DO $outbox_migration$ BEGIN
        IF NOT EXISTS (SELECT 1 FROM ${quoted}.schema_migrations WHERE version = ${migration.version}) THEN
          ${asPlpgsqlStatements(migration.sql.replaceAll('{{schema}}', quoted))}
        END IF;
      END $outbox_migration$`,
      params: [],
    })),
    {
      name: 'recordMigrations',
      text: `INSERT INTO ${quoted}.schema_migrations (version, name)
        SELECT * FROM unnest($1::integer[], $2::text[])
        ON CONFLICT (version) DO NOTHING`,
      params: [migrations.map((m) => m.version), migrations.map((m) => m.name)],
    },
  ]);

  const before = new Set(
    (results[3]?.rows ?? []).map((row) => Number((row as { version: unknown }).version)),
  );
  const applied = migrations.map((m) => m.version).filter((version) => !before.has(version));
  const version = Math.max(0, ...before, ...migrations.map((m) => m.version));
  return { schema, applied, version };
}

/**
 * Migration SQL runs as statements of a PL/pgSQL block, where each must end in `;`. A last
 * statement written without one (as it would be fine in psql) gets its `;` here rather than
 * failing with a syntax error "at or near END" that points at SQL nobody wrote.
 */
function asPlpgsqlStatements(sql: string): string {
  const trimmed = sql.trimEnd();
  return trimmed.endsWith(';') ? trimmed : `${trimmed};`;
}
