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
    const child = spawn(process.execPath, ['--import', 'tsx', file], {
      cwd,
      env: { ...process.env, ...env },
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    running.add(child);
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
    child.once('close', (code, signal) => {
      running.delete(child);
      resolve({ stdout, code, signal });
    });
  });
}

/** Ends every child still running. */
export function killChildren(): void {
  for (const child of running) {
    if (child.pid !== undefined && child.exitCode === null) child.kill('SIGTERM');
  }
}
