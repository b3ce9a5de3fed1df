/**
 * Each test file gets its own database, cloned from the migrated template the global setup
 * made, so files run in parallel without seeing each other's rows.
 */
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { afterAll, beforeAll, inject } from 'vitest';
import { endIgnoringClosingErrors, watchClosingErrors } from './closing-pool.js';

export const TEMPLATE_DATABASE = 'outbox_relay_template';

export interface TestDatabase {
  name: string;
  /** Connection URL of this file's own database. */
  url: string;
  host: string;
  port: number;
  /** A pg pool on it, for setup and assertions. */
  pool: pg.Pool;
  drop(): Promise<void>;
}

/**
 * Creates a database for this file: migrated (from the template) unless `migrated: false`.
 */
export async function createTestDatabase(
  options: { migrated?: boolean } = {},
): Promise<TestDatabase> {
  const adminUrl = inject('adminDatabaseUrl');
  const name = `test_${randomBytes(6).toString('hex')}`;
  const template = options.migrated === false ? 'template0' : TEMPLATE_DATABASE;
  const admin = new pg.Client({ connectionString: adminUrl });
  await admin.connect();
  try {
    // Concurrent clones of one template are fine; Postgres refuses only while someone is
    // connected to the template, which the global setup is not.
    await admin.query(`CREATE DATABASE ${name} TEMPLATE ${template}`);
  } finally {
    await admin.end();
  }
  const parsed = new URL(adminUrl);
  parsed.pathname = `/${name}`;
  const url = parsed.toString();
  const pool = new pg.Pool({ connectionString: url, max: 20 });
  watchClosingErrors(pool);
  return {
    name,
    url,
    host: parsed.hostname,
    port: Number(parsed.port || 5432),
    pool,
    async drop() {
      await endIgnoringClosingErrors(pool);
      const cleanup = new pg.Client({ connectionString: adminUrl });
      await cleanup.connect();
      try {
        await cleanup.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      } finally {
        await cleanup.end();
      }
    },
  };
}

/** Registers hooks that create this file's database before its tests and drop it after. */
export function useTestDatabase(options: { migrated?: boolean } = {}): TestDatabase {
  const handle = {} as TestDatabase;
  beforeAll(async () => {
    Object.assign(handle, await createTestDatabase(options));
  });
  afterAll(async () => {
    await handle.drop?.();
  });
  return handle;
}
