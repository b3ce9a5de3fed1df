/**
 * Running the `outbox` command in tests: in-process through `runCli` (fast, for fine-grained
 * cases) or as the real process through bin/outbox.mjs (what operators run: tsx, signals, exit
 * codes), each with collected stdout and stderr.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import type pg from 'pg';
import { runCli } from '../../src/cli/run-cli.js';

export const REPO_ROOT = fileURLToPath(new URL('../../', import.meta.url));

/** Nothing listens on port 1: a connection there is refused at once. */
export const UNREACHABLE_DATABASE_URL = 'postgres://postgres:postgres@127.0.0.1:1/nope';

export interface CliResult {
  code: number;
  stdout: string;
  stderr: string;
}

/**
 * The child's environment: only what is passed, plus PATH and HOME, so a DATABASE_URL in the
 * test runner's own environment never leaks into a case about it being missing.
 */
function childEnv(env: Record<string, string>): Record<string, string> {
  const base: Record<string, string> = {};
  for (const name of ['PATH', 'HOME', 'TMPDIR']) {
    const value = process.env[name];
    if (value !== undefined) base[name] = value;
  }
  return { ...base, ...env };
}

/** A run of `outbox <args>` in this process, its output readable while it runs. */
export interface InProcessRun {
  stdout(): string;
  stderr(): string;
  done: Promise<CliResult>;
}

export function startOutboxInProcess(
  args: readonly string[],
  env: Record<string, string>,
  signal?: AbortSignal,
  /** Where the config file is looked for; default this process's directory. */
  cwd?: string,
): InProcessRun {
  let stdout = '';
  let stderr = '';
  const done = runCli(args, {
    stdout: { write: (text: string) => (stdout += text) },
    stderr: { write: (text: string) => (stderr += text) },
    env,
    signal,
    cwd,
  }).then((code) => ({ code, stdout, stderr }));
  return { stdout: () => stdout, stderr: () => stderr, done };
}

/** Runs `outbox <args>` in this process, to completion. */
export function runOutboxInProcess(
  args: readonly string[],
  env: Record<string, string>,
  cwd?: string,
): Promise<CliResult> {
  return startOutboxInProcess(args, env, undefined, cwd).done;
}

/** A running `node bin/outbox.mjs <args>`. */
export interface OutboxProcess {
  child: ChildProcess;
  stdout(): string;
  stderr(): string;
  /** Resolves when the process exits: its code, or 128 + signal number if killed. */
  exited: Promise<CliResult>;
}

export function startOutbox(args: readonly string[], env: Record<string, string>): OutboxProcess {
  const child = spawn(process.execPath, ['bin/outbox.mjs', ...args], {
    cwd: REPO_ROOT,
    env: childEnv(env),
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout!.setEncoding('utf8').on('data', (text: string) => {
    stdout += text;
  });
  child.stderr!.setEncoding('utf8').on('data', (text: string) => {
    stderr += text;
  });
  const exited = new Promise<CliResult>((resolve, reject) => {
    child.once('error', reject);
    child.once('close', (code, signal) => {
      resolve({
        code: code ?? (signal === null ? -1 : 128 + signalNumber(signal)),
        stdout,
        stderr,
      });
    });
  });
  return { child, stdout: () => stdout, stderr: () => stderr, exited };
}

function signalNumber(signal: NodeJS.Signals): number {
  return signal === 'SIGINT' ? 2 : signal === 'SIGTERM' ? 15 : signal === 'SIGKILL' ? 9 : 0;
}

/** Runs `node bin/outbox.mjs <args>` to completion. */
export function runOutbox(
  args: readonly string[],
  env: Record<string, string>,
): Promise<CliResult> {
  return startOutbox(args, env).exited;
}

/** A Standard Webhooks secret: `whsec_` and 32 random bytes in base64. */
export function newWebhookSecret(): string {
  return `whsec_${randomBytes(32).toString('base64')}`;
}

/** The environment a drain needs to deliver webhooks to a loopback receiver on `port`. */
export function webhookDrainEnv(port: number, secret: string): Record<string, string> {
  return {
    OUTBOX_ENV: 'development',
    OUTBOX_WEBHOOK_ALLOW_HOSTS: `127.0.0.1:${port}`,
    OUTBOX_WEBHOOK_SECRET: secret,
  };
}

export async function countRows(pool: pg.Pool, schema = 'outbox'): Promise<number> {
  const { rows } = await pool.query<{ n: number }>(
    `SELECT count(*)::int AS n FROM "${schema}".messages`,
  );
  return rows[0]!.n;
}

export async function messageState(pool: pg.Pool, id: string): Promise<string | undefined> {
  const { rows } = await pool.query<{ state: string }>(
    'SELECT state FROM outbox.all_messages WHERE id = $1',
    [id],
  );
  return rows[0]?.state;
}
