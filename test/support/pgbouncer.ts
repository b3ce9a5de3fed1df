/**
 * A real PgBouncer in front of the test PostgreSQL, for the tests about poolers: the system's
 * `pgbouncer` (Debian's 1.18 here and in CI: `apt-get install pgbouncer`), started on a free
 * loopback port with a generated ini and auth file in a temp dir, stopped and cleaned up after.
 *
 * Transaction mode by default: each transaction gets whichever server connection is free, and
 * 1.18 keeps no track of prepared statements (as 1.21+ with `max_prepared_statements = 0`).
 */
import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { chmod, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { connect, createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';
import { promisify } from 'node:util';
import { waitFor } from './wait-for.js';

const run = promisify(execFile);

/** Where Debian and most distributions put it; then PATH. */
const KNOWN_LOCATIONS = ['/usr/sbin/pgbouncer', '/usr/bin/pgbouncer', '/usr/local/bin/pgbouncer'];

/** A cold start is a fraction of a second; a loaded CI machine gets ample room. */
const START_TIMEOUT_MS = 20_000;
/** SIGTERM closes every connection at once; past this it is killed. */
const STOP_TIMEOUT_MS = 5_000;

export interface PgBouncerOptions {
  /** The PostgreSQL it pools for. */
  postgres: { host: string; port: number };
  /** The one login it accepts and uses on the server (the test database's). */
  user: string;
  password: string;
  /** Default `transaction`. */
  poolMode?: 'session' | 'transaction' | 'statement';
  /**
   * Server connections per database and user. Default 4: fewer server connections than
   * clients, so clients share them as they would in production.
   */
  poolSize?: number;
  /** More `[pgbouncer]` settings, as written in the ini (`server_reset_query`: `DEALLOCATE ALL`). */
  settings?: Readonly<Record<string, string>>;
}

export interface PgBouncer {
  host: string;
  port: number;
  /** `url` with its host and port replaced by PgBouncer's: the same database, through the pooler. */
  urlFor(url: string): string;
  /** What PgBouncer wrote (its log goes to stderr in the foreground). */
  log(): string;
  /** Stops it and removes its files. Safe to call twice. */
  stop(): Promise<void>;
}

/** The installed `pgbouncer` (in `locations`, then on `path`), or an error saying how to install it. */
export function pgBouncerBinary(
  locations: readonly string[] = KNOWN_LOCATIONS,
  path = process.env.PATH ?? '',
): string {
  const onPath = path.split(delimiter).map((dir) => join(dir, 'pgbouncer'));
  const found = [...locations, ...onPath].find((candidate) => existsSync(candidate));
  if (found === undefined) {
    throw new Error(
      'pgbouncer is not installed, and the pooler tests run a real one: apt-get install pgbouncer ' +
        `(looked in ${[...locations, 'PATH'].join(', ')})`,
    );
  }
  return found;
}

export async function startPgBouncer(options: PgBouncerOptions): Promise<PgBouncer> {
  const binary = pgBouncerBinary();
  const dir = await mkdtemp(join(tmpdir(), 'outbox-relay-pgbouncer-'));
  // PgBouncer refuses to run as root: as root, run it as `nobody`, which must read its files.
  const owner = process.getuid?.() === 0 ? await nobody() : undefined;
  await chmod(dir, 0o755);
  const port = await freePort();
  const ini = join(dir, 'pgbouncer.ini');
  const authFile = join(dir, 'userlist.txt');
  await writeFile(authFile, `${quoted(options.user)} ${quoted(options.password)}\n`, {
    mode: 0o644,
  });
  await writeFile(
    ini,
    [
      '[databases]',
      // Any database name the client asks for, on the one server.
      `* = host=${options.postgres.host} port=${options.postgres.port}`,
      '',
      '[pgbouncer]',
      'listen_addr = 127.0.0.1',
      `listen_port = ${port}`,
      // No Unix socket: its default directory may not exist or be writable here.
      'unix_socket_dir =',
      // SCRAM with the client, and with the server from the plain password in the auth file.
      'auth_type = scram-sha-256',
      `auth_file = ${authFile}`,
      `pool_mode = ${options.poolMode ?? 'transaction'}`,
      `default_pool_size = ${options.poolSize ?? 4}`,
      'max_client_conn = 1000',
      ...Object.entries(options.settings ?? {}).map(([name, value]) => `${name} = ${value}`),
      '',
    ].join('\n'),
    { mode: 0o644 },
  );

  const child = spawn(binary, [ini], { ...owner, stdio: ['ignore', 'pipe', 'pipe'] });
  let log = '';
  const collect = (chunk: Buffer) => {
    log += chunk.toString();
  };
  child.stdout?.on('data', collect);
  child.stderr?.on('data', collect);
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  // If the test process dies, take PgBouncer with it.
  const killOnExit = () => child.kill('SIGKILL');
  process.on('exit', killOnExit);

  let stopping: Promise<void> | undefined;
  const stop = () => {
    stopping ??= (async () => {
      await terminate(child, exited);
      process.off('exit', killOnExit);
      await rm(dir, { recursive: true, force: true });
    })();
    return stopping;
  };

  try {
    await waitFor(
      `pgbouncer to listen on 127.0.0.1:${port}`,
      async () => {
        if (child.exitCode !== null) {
          throw new Error(`pgbouncer exited with code ${child.exitCode}:\n${log}`);
        }
        return accepts(port);
      },
      START_TIMEOUT_MS,
    );
  } catch (error) {
    await stop();
    throw error;
  }
  return {
    host: '127.0.0.1',
    port,
    urlFor(url) {
      const parsed = new URL(url);
      parsed.hostname = '127.0.0.1';
      parsed.port = String(port);
      return parsed.toString();
    },
    log: () => log,
    stop,
  };
}

/**
 * A PgBouncer in front of a test database (test/support/database.ts), logging in as its URL
 * does: what the pooler tests start in `beforeAll`.
 */
export function startPgBouncerFor(
  database: { url: string; host: string; port: number },
  options: Omit<PgBouncerOptions, 'postgres' | 'user' | 'password'> = {},
): Promise<PgBouncer> {
  const { username, password } = new URL(database.url);
  return startPgBouncer({
    ...options,
    postgres: { host: database.host, port: database.port },
    user: decodeURIComponent(username),
    password: decodeURIComponent(password),
  });
}

/** The auth file's quoting: double quotes, a quote inside doubled. */
function quoted(value: string): string {
  return `"${value.replaceAll('"', '""')}"`;
}

async function nobody(): Promise<{ uid: number; gid: number }> {
  return {
    uid: Number((await run('id', ['-u', 'nobody'])).stdout.trim()),
    gid: Number((await run('id', ['-g', 'nobody'])).stdout.trim()),
  };
}

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

function accepts(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect({ host: '127.0.0.1', port });
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}

async function terminate(child: ChildProcess, exited: Promise<void>): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  child.kill('SIGTERM');
  const timer = setTimeout(() => child.kill('SIGKILL'), STOP_TIMEOUT_MS);
  await exited;
  clearTimeout(timer);
}
