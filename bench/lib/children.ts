/**
 * Child processes the bench starts, tracked so Ctrl-C or a failure can end them (by pid, only
 * ours) before PostgreSQL stops.
 */
import { type ChildProcess, spawn } from 'node:child_process';

const running = new Set<ChildProcess>();

export interface ChildOutcome {
  stdout: string;
  code: number | null;
  /** The signal that ended it, e.g. SIGKILL when `killOn` fired. */
  signal: NodeJS.Signals | null;
}

/** A TypeScript file in a fresh `node --import tsx` process, tracked until it closes. */
function spawnTypeScript(file: string, env: Record<string, string>, cwd: string) {
  const child = spawn(process.execPath, ['--import', 'tsx', file], {
    cwd,
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  running.add(child);
  child.once('close', () => running.delete(child));
  return child;
}

/**
 * Runs a TypeScript file in a fresh `node --import tsx` process and collects its stdout. When
 * `killOn` aborts, the child gets SIGKILL: no handler runs, as when a runtime pulls the plug.
 */
export function runTypeScriptChild(
  file: string,
  env: Record<string, string>,
  cwd: string,
  killOn?: AbortSignal,
): Promise<ChildOutcome> {
  return new Promise((resolve, reject) => {
    const child = spawnTypeScript(file, env, cwd);
    killOn?.addEventListener('abort', () => child.kill('SIGKILL'), { once: true });
    let stdout = '';
    child.stdout.setEncoding('utf8');
    child.stdout.on('data', (chunk: string) => {
      stdout += chunk;
    });
    child.once('error', (error) => {
      running.delete(child);
      reject(error);
    });
    child.once('close', (code, signal) => resolve({ stdout, code, signal }));
  });
}

/** Ends every child still running. */
export function killChildren(): void {
  for (const child of running) {
    if (child.pid !== undefined && child.exitCode === null) child.kill('SIGTERM');
  }
}

/** A child that serves until stopped, announcing itself with its first line of output. */
export interface ServingChild {
  /** The first line the child printed (its address). */
  firstLine: string;
  /** SIGTERM, then waits for it to exit. */
  stop(): Promise<void>;
}

/** How long a serving child may take to print its first line. */
const SERVING_START_MS = 30_000;

/** Starts a TypeScript file in a fresh `node --import tsx` process that serves until stopped. */
export function startServingChild(
  file: string,
  env: Record<string, string>,
  cwd: string,
): Promise<ServingChild> {
  return new Promise((resolve, reject) => {
    const child = spawnTypeScript(file, env, cwd);
    const exited = new Promise<void>((done) => child.once('close', () => done()));
    const stop = async () => {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
      await exited;
    };
    const timer = setTimeout(() => {
      void stop();
      reject(new Error(`${file} printed nothing in ${SERVING_START_MS} ms`));
    }, SERVING_START_MS);
    let output = '';
    child.stdout.setEncoding('utf8');
    child.stdout.on('data', (chunk: string) => {
      output += chunk;
      const end = output.indexOf('\n');
      if (end < 0) return;
      clearTimeout(timer);
      resolve({ firstLine: output.slice(0, end), stop });
    });
    child.once('error', (error) => {
      clearTimeout(timer);
      reject(error);
    });
    void exited.then(() => {
      clearTimeout(timer);
      reject(new Error(`${file} exited before printing its address`));
    });
  });
}
