/**
 * One mutation run: a scratch copy of the repository with the edits applied, and a vitest run
 * of only the named tests in it, read back through vitest's JSON reporter.
 */
import { execFileSync, spawn } from 'node:child_process';
import {
  chmodSync,
  cpSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  realpathSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import type { NamedTest, SourceEdit } from './mutation.js';

/** A mutation's `find` no longer occurs exactly once: the source moved under it. */
export class SourceMovedError extends Error {
  constructor(mutation: string, edit: SourceEdit, occurrences: number) {
    super(
      `mutation "${mutation}": source moved: update the mutation (${edit.file}: expected exactly one match of ${String(edit.find)}, found ${occurrences})`,
    );
    this.name = 'SourceMovedError';
  }
}

/**
 * The text of each file under `root` after `edits`, applied in order, without writing anything.
 * Throws {@link SourceMovedError} if a `find` does not match exactly once.
 */
export function editedFiles(
  root: string,
  mutation: string,
  edits: readonly SourceEdit[],
): Map<string, string> {
  const contents = new Map<string, string>();
  for (const edit of edits) {
    const path = join(root, edit.file);
    const before = contents.get(path) ?? (existsSync(path) ? readFileSync(path, 'utf8') : '');
    const occurrences = countMatches(before, edit.find);
    if (occurrences !== 1) throw new SourceMovedError(mutation, edit, occurrences);
    const after =
      typeof edit.find === 'string'
        ? before.replace(edit.find, () => edit.replace)
        : before.replace(edit.find, edit.replace);
    contents.set(path, after);
  }
  return contents;
}

/** Applies `edits` to the files under `root` (a scratch copy, never the repository). */
export function applyEdits(root: string, mutation: string, edits: readonly SourceEdit[]): void {
  for (const [path, text] of editedFiles(root, mutation, edits)) writeFileSync(path, text);
}

function countMatches(text: string, find: string | RegExp): number {
  if (typeof find === 'string') return find === '' ? 0 : text.split(find).length - 1;
  const flags = find.flags.includes('g') ? find.flags : `${find.flags}g`;
  return [...text.matchAll(new RegExp(find.source, flags))].length;
}

/**
 * A copy of the tracked (and new, unignored) files in a fresh directory under the OS temp dir,
 * sharing node_modules. World-readable: as root, embedded PostgreSQL runs as the postgres user.
 */
export function scratchCopy(repo: string): { dir: string; remove(): void } {
  const workspace = mkdtempSync(join(tmpdir(), 'outbox-mutation-'));
  chmodSync(workspace, 0o755);
  const dir = join(workspace, 'repo');
  const files = execFileSync(
    'git',
    ['ls-files', '-z', '--cached', '--others', '--exclude-standard'],
    { cwd: repo, encoding: 'utf8' },
  )
    .split('\0')
    .filter((file) => file && file !== 'node_modules' && existsSync(join(repo, file)));
  for (const file of files) {
    mkdirSync(dirname(join(dir, file)), { recursive: true });
    cpSync(join(repo, file), join(dir, file));
  }
  symlinkSync(realpathSync(join(repo, 'node_modules')), join(dir, 'node_modules'));
  return { dir, remove: () => rmSync(workspace, { recursive: true, force: true }) };
}

/** The vitest `-t` pattern for one named test: its name, literally, after its driver's describe. */
export function testPattern(test: NamedTest): string {
  const name = escapeRegExp(test.name);
  return test.driver ? `\\b${escapeRegExp(test.driver)}\\b.* ${name}$` : ` ${name}$|^${name}$`;
}

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

/** Process groups of the vitest runs in flight, so a failing runner can stop them all. */
const running = new Set<number>();

/**
 * Stops every vitest run still in flight (SIGTERM to its process group: its global setup then
 * stops its PostgreSQL). For a runner about to exit early.
 */
export function stopRunningTests(): void {
  for (const pid of running) {
    try {
      process.kill(-pid, 'SIGTERM');
    } catch {
      // Already gone.
    }
  }
}

export interface TestResult {
  file: string;
  fullName: string;
  status: string;
  failureMessages: string[];
}

export interface VitestRun {
  exitCode: number | null;
  /** Every test vitest reported, the filtered-out ones as skipped. */
  results: TestResult[];
  /** Tests whose file failed before any test ran (an import error, a failed hook). */
  fileErrors: string[];
  log: string;
  durationMs: number;
}

/**
 * Runs `npx vitest run <files> -t <pattern>` in `dir` for the named tests. Resolves (never
 * rejects) once vitest exits or `timeoutMs` passes, when its process group is stopped.
 */
export async function runNamedTests(
  dir: string,
  tests: readonly NamedTest[],
  options: { testTimeoutMs?: number; timeoutMs: number },
): Promise<VitestRun> {
  const files = [...new Set(tests.map((test) => test.file))];
  const pattern = tests.map((test) => `(${testPattern(test)})`).join('|');
  const output = join(dir, '.mutation-result.json');
  const args = [
    join(dir, 'node_modules/vitest/vitest.mjs'),
    'run',
    ...files,
    '-t',
    pattern,
    '--reporter=json',
    // The default reporter too, so the log shows what made vitest fail when every test passed
    // (an unhandled error after a test), which the JSON report does not carry.
    '--reporter=default',
    `--outputFile.json=${output}`,
    ...(options.testTimeoutMs ? [`--testTimeout=${options.testTimeoutMs}`] : []),
  ];
  const startedAt = Date.now();
  const child = spawn(process.execPath, args, {
    cwd: dir,
    detached: true,
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, FORCE_COLOR: '0' },
  });
  let log = '';
  child.stdout.on('data', (chunk) => {
    log += chunk;
  });
  child.stderr.on('data', (chunk) => {
    log += chunk;
  });
  const pid = child.pid;
  if (pid) running.add(pid);
  const timer = setTimeout(() => {
    log += `\n[mutation runner] stopped after ${options.timeoutMs} ms\n`;
    // SIGTERM, not SIGKILL: vitest's global setup stops its PostgreSQL on it.
    if (pid) process.kill(-pid, 'SIGTERM');
  }, options.timeoutMs);
  const exitCode = await new Promise<number | null>((resolve) => {
    child.on('close', (code) => resolve(code));
  });
  clearTimeout(timer);
  if (pid) running.delete(pid);
  const run: VitestRun = {
    exitCode,
    results: [],
    fileErrors: [],
    log,
    durationMs: Date.now() - startedAt,
  };
  if (!existsSync(output)) return run;
  const report = JSON.parse(readFileSync(output, 'utf8')) as VitestJsonReport;
  const root = `${realpathSync(dir)}/`;
  for (const file of report.testResults ?? []) {
    const path = realpathSync(file.name);
    const relative = path.startsWith(root) ? path.slice(root.length) : path;
    if (file.status === 'failed' && file.message) {
      run.fileErrors.push(`${relative}: ${file.message}`);
    }
    for (const result of file.assertionResults ?? []) {
      run.results.push({
        file: relative,
        fullName: result.fullName,
        status: result.status,
        failureMessages: result.failureMessages ?? [],
      });
    }
  }
  return run;
}

interface VitestJsonReport {
  testResults?: {
    name: string;
    status: string;
    message?: string;
    assertionResults?: { fullName: string; status: string; failureMessages?: string[] }[];
  }[];
}

/** The results of `run` that belong to `test` (its file, its name, its driver). */
export function resultsFor(run: VitestRun, test: NamedTest): TestResult[] {
  const pattern = new RegExp(testPattern(test));
  return run.results.filter((result) => result.file === test.file && pattern.test(result.fullName));
}
