/**
 * Child processes the reliability scenarios kill: started as `node --import tsx file.ts` so the
 * pid is the script's own (killing a `tsx` wrapper would orphan the script), read line by line.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { createInterface } from 'node:readline';

export interface ScriptProcess {
  pid: number;
  /** Every stdout line so far. */
  lines: string[];
  /** Calls `listener` on every stdout line from now on. */
  onLine(listener: (line: string) => void): void;
  /** Resolves with the exit signal (`SIGKILL` when killed) or code. */
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  stderr(): string;
  kill(): void;
}

/** Starts a TypeScript file under Node with tsx's loader, with `env` added. */
export function startScript(file: string, env: Record<string, string>): ScriptProcess {
  const child: ChildProcess = spawn(process.execPath, ['--import', 'tsx', file], {
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const lines: string[] = [];
  const listeners: ((line: string) => void)[] = [];
  let stderr = '';
  child.stderr?.on('data', (chunk) => {
    stderr += chunk;
  });
  createInterface({ input: child.stdout! }).on('line', (line) => {
    lines.push(line);
    for (const listener of listeners) listener(line);
  });
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => {
    child.on('exit', (code, signal) => resolve({ code, signal }));
  });
  return {
    pid: child.pid!,
    lines,
    onLine: (listener) => listeners.push(listener),
    exited,
    stderr: () => stderr,
    kill: () => child.kill('SIGKILL'),
  };
}
