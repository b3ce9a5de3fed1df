/**
 * The real Worker in the real runtime: `wrangler dev` (workerd) on loopback, with the repo's
 * wrangler.toml and the test's settings in an env file, and `/__scheduled` to fire crons. No
 * network beyond loopback, no login, no metrics.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { offlineWranglerEnv, wranglerBin } from '../../scripts/build-worker.js';

/** wrangler plus workerd start in 3 to 20 s here; beyond a minute something is wrong. */
const READY_TIMEOUT_MS = 60_000;

/** After SIGTERM to the process group, the time before SIGKILL. */
const STOP_GRACE_MS = 5_000;

export interface WranglerDev {
  url: string;
  /** Everything wrangler and the Worker printed so far (console.log lands on stdout). */
  output(): string;
  /** The Worker's JSON log lines so far. */
  jsonLines(): Record<string, unknown>[];
  /** Fires a Cron Trigger as the platform would, and resolves when the handler finished. */
  scheduled(cron: string): Promise<Response>;
  /** Stops wrangler and workerd (the whole process group), and removes the temp files. */
  stop(): Promise<void>;
  /**
   * SIGKILLs wrangler and workerd (the whole process group) at once, with no grace: a crash,
   * wherever the Worker was. Removes the temp files, as stop() does; wrangler's own bundle
   * folders (`.wrangler/tmp` beside the config, gitignored) stay, since a crash skips the exit
   * hook that removes them, and which are this run's cannot be told from a neighbour's.
   */
  kill(): Promise<void>;
}

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      const port = typeof address === 'object' && address ? address.port : 0;
      server.close(() => resolve(port));
    });
  });
}

/** Starts tried before a port taken between freePort and workerd's bind fails the test. */
const START_ATTEMPTS = 3;

/**
 * Starts `wrangler dev` with `vars` and waits until it answers: on the repo's wrangler.toml (the
 * reference service) unless `config` names another. A start that finds its port taken (freePort
 * closes the port before workerd binds it, and another process on the machine may take it in
 * between) is tried again on new ports.
 */
export interface WranglerDevOptions {
  /** The Worker's wrangler.toml; default the repo's (the reference service). */
  config?: string;
  /**
   * More Workers run in the same `wrangler dev` (each one more `--config`), sharing its local
   * queues and given the same vars; `url` serves the first.
   */
  alongside?: readonly string[];
}

export async function startWranglerDev(
  vars: Record<string, string>,
  options: WranglerDevOptions = {},
): Promise<WranglerDev> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await startOnce(vars, options);
    } catch (error) {
      const taken = error instanceof Error && error.message.includes('Address already in use');
      if (!taken || attempt >= START_ATTEMPTS) throw error;
    }
  }
}

async function startOnce(
  vars: Record<string, string>,
  options: WranglerDevOptions,
): Promise<WranglerDev> {
  const dir = await mkdtemp(join(tmpdir(), 'outbox-relay-wrangler-'));
  const envFile = join(dir, 'test.env');
  await writeFile(
    envFile,
    Object.entries(vars)
      .map(([name, value]) => `${name}=${JSON.stringify(value)}`)
      .join('\n'),
  );
  const [port, inspectorPort] = [await freePort(), await freePort()];
  const url = `http://127.0.0.1:${port}`;

  const child: ChildProcess = spawn(
    process.execPath,
    [
      wranglerBin(),
      'dev',
      '--config',
      options.config ?? join(process.cwd(), 'wrangler.toml'),
      ...(options.alongside ?? []).flatMap((config) => ['--config', config]),
      '--env-file',
      envFile,
      '--ip',
      '127.0.0.1',
      '--port',
      String(port),
      '--inspector-port',
      String(inspectorPort),
      '--persist-to',
      join(dir, 'state'),
      '--test-scheduled',
      '--show-interactive-dev-session=false',
      '--log-level',
      'log',
    ],
    { env: offlineWranglerEnv(), detached: true, stdio: ['ignore', 'pipe', 'pipe'] },
  );
  let output = '';
  child.stdout?.on('data', (chunk: Buffer) => {
    output += chunk.toString('utf8');
  });
  child.stderr?.on('data', (chunk: Buffer) => {
    output += chunk.toString('utf8');
  });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  let running = true;
  void exited.then(() => {
    running = false;
  });

  const stop = async () => {
    if (running && child.pid !== undefined) {
      try {
        process.kill(-child.pid, 'SIGTERM');
      } catch {
        // Already gone.
      }
      const killed = await Promise.race([
        exited.then(() => true),
        new Promise<false>((resolve) => setTimeout(() => resolve(false), STOP_GRACE_MS)),
      ]);
      if (!killed) {
        try {
          process.kill(-child.pid, 'SIGKILL');
        } catch {
          // Already gone.
        }
        await exited;
      }
    }
    await rm(dir, { recursive: true, force: true });
  };

  const kill = async () => {
    if (running && child.pid !== undefined) {
      try {
        process.kill(-child.pid, 'SIGKILL');
      } catch {
        // Already gone.
      }
      await exited;
    }
    await rm(dir, { recursive: true, force: true });
  };

  // Ready when the Worker itself answers: the app's JSON 404 for a path no route serves.
  const readyBy = Date.now() + READY_TIMEOUT_MS;
  for (;;) {
    if (!running) {
      await stop();
      throw new Error(`wrangler dev exited before it was ready:\n${output}`);
    }
    try {
      const response = await fetch(`${url}/__ready`, { signal: AbortSignal.timeout(2_000) });
      if (response.headers.get('content-type')?.includes('application/json')) break;
    } catch {
      // Not listening yet.
    }
    if (Date.now() > readyBy) {
      await stop();
      throw new Error(`wrangler dev was not ready within ${READY_TIMEOUT_MS} ms:\n${output}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 200));
  }

  return {
    url,
    output: () => output,
    jsonLines: () =>
      output.split('\n').flatMap((line) => {
        const start = line.indexOf('{"level"');
        if (start < 0) return [];
        try {
          return [JSON.parse(line.slice(start)) as Record<string, unknown>];
        } catch {
          return [];
        }
      }),
    scheduled: (cron) =>
      fetch(`${url}/__scheduled?cron=${encodeURIComponent(cron)}`, {
        signal: AbortSignal.timeout(60_000),
      }),
    stop,
    kill,
  };
}
