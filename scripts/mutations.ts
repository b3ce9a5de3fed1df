/**
 * `npm run test:mutations`: proves each invariant in docs/invariants.md by removing its
 * mechanism. For every mutation in scripts/mutation-list.ts: copy the repository to a scratch
 * directory, apply the edit, run only the tests named for it, and require one to fail.
 *
 * Fails (exit 1) when a mutation's source moved, when a named test fails or is missing before
 * any mutation (the baseline), when a mutation survives, or when the doc's table differs from
 * the one this run printed (`--write-doc` rewrites it).
 *
 *   npm run test:mutations                       all mutations, check the doc
 *   npm run test:mutations -- --write-doc        all mutations, rewrite the doc's table
 *   npm run test:mutations -- --only "drop SKIP LOCKED"   one mutation (repeatable), no doc check
 *   npm run test:mutations -- --check            no tests: sources match, doc names every row
 */
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import type { NamedTest } from './mutation.js';
import { MUTATIONS, type Mutation } from './mutation-list.js';
import {
  applyEdits,
  editedFiles,
  resultsFor,
  runNamedTests,
  scratchCopy,
  stopRunningTests,
  type VitestRun,
} from './mutation-run.js';
import {
  invariantRows,
  renderTable,
  tableInDoc,
  type Verdict,
  withTable,
} from './mutation-table.js';

const REPO = fileURLToPath(new URL('..', import.meta.url));
const DOC = fileURLToPath(new URL('../docs/invariants.md', import.meta.url));

/** Two at a time: each run starts its own PostgreSQL, and CI machines here have two cores. */
const DEFAULT_JOBS = 2;
/** A run that takes longer than this is hung (the slowest named test takes about 30 s). */
const RUN_TIMEOUT_MS = 5 * 60_000;

const { values } = parseArgs({
  options: {
    only: { type: 'string', multiple: true },
    jobs: { type: 'string', default: String(DEFAULT_JOBS) },
    'write-doc': { type: 'boolean', default: false },
    check: { type: 'boolean', default: false },
  },
  strict: true,
});

function fail(message: string): never {
  stopRunningTests();
  console.error(`\ntest:mutations FAILED: ${message}`);
  process.exit(1);
}

process.once('SIGINT', () => fail('interrupted'));

function selected(): readonly Mutation[] {
  if (!values.only) return MUTATIONS;
  const unknown = values.only.filter((name) => !MUTATIONS.some((m) => m.name === name));
  if (unknown.length > 0) fail(`no mutation named ${unknown.map((n) => `"${n}"`).join(', ')}`);
  return MUTATIONS.filter((mutation) => values.only?.includes(mutation.name));
}

/** Every mutation's edits apply to the current sources, and every doc row has a mutation. */
function checkStatically(mutations: readonly Mutation[]): void {
  const names = new Set<string>();
  for (const mutation of MUTATIONS) {
    if (names.has(mutation.name)) fail(`two mutations are named "${mutation.name}"`);
    names.add(mutation.name);
  }
  for (const mutation of mutations) {
    const missing = mutation.tests.filter((test) => !existsSync(`${REPO}/${test.file}`));
    if (missing.length > 0) {
      fail(
        `mutation "${mutation.name}" names missing test files: ${missing.map((t) => t.file).join(', ')}`,
      );
    }
    try {
      editedFiles(REPO, mutation.name, mutation.edits);
    } catch (error) {
      fail((error as Error).message);
    }
  }
  const rows = invariantRows(readFileSync(DOC, 'utf8'));
  const unproven = rows.filter((row) => !MUTATIONS.some((mutation) => mutation.row === row));
  if (unproven.length > 0)
    fail(`docs/invariants.md rows without a mutation: ${unproven.join(', ')}`);
  const unknownRows = MUTATIONS.filter((mutation) => !rows.includes(mutation.row));
  if (unknownRows.length > 0) {
    fail(
      `mutations naming no row of docs/invariants.md: ${unknownRows.map((m) => m.name).join(', ')}`,
    );
  }
}

function seconds(ms: number): string {
  return `${(ms / 1000).toFixed(1)} s`;
}

function tail(log: string, lines = 40): string {
  return log.trimEnd().split('\n').slice(-lines).join('\n');
}

async function runBaseline(mutations: readonly Mutation[]): Promise<void> {
  // Several mutations may name one test: run and check it once.
  const byKey = new Map(
    mutations.flatMap((m) => m.tests).map((test) => [JSON.stringify(test), test] as const),
  );
  const tests = [...byKey.values()];
  console.log(`baseline: ${tests.length} named tests, unmutated ...`);
  let run = await runBaselineOnce(tests);
  if (run.exitCode !== 0 && everyNamedTestPassed(run, tests)) {
    // Every named test passed, yet vitest failed: an unhandled error outside them (a pool's
    // connection torn down with its database, on a loaded machine). Show it, and run once more:
    // a baseline that fails again stops the command.
    console.error(
      `${tail(run.log)}\nbaseline: vitest exited ${run.exitCode} with every named test passed; once more ...`,
    );
    run = await runBaselineOnce(tests);
  }
  const problems: string[] = [...run.fileErrors];
  for (const test of tests) {
    const results = resultsFor(run, test);
    if (results.length === 0) problems.push(`no test matches ${test.file} "${test.name}"`);
    for (const result of results) {
      if (result.status !== 'passed') problems.push(`${result.status}: ${result.fullName}`);
    }
  }
  if (problems.length > 0 || run.exitCode !== 0) {
    console.error(tail(run.log));
    fail(`baseline (no mutation):\n  ${problems.join('\n  ') || `vitest exited ${run.exitCode}`}`);
  }
  console.log(`baseline: passed (${seconds(run.durationMs)})`);
}

interface Outcome {
  verdict: Verdict;
  detail: string;
}

async function runMutation(mutation: Mutation): Promise<Outcome> {
  const copy = scratchCopy(REPO);
  try {
    applyEdits(copy.dir, mutation.name, mutation.edits);
    const run = await runNamedTests(copy.dir, mutation.tests, {
      testTimeoutMs: mutation.testTimeoutMs,
      timeoutMs: RUN_TIMEOUT_MS,
    });
    const named = mutation.tests.flatMap((test) => resultsFor(run, test));
    const failed = named.filter((result) => result.status === 'failed');
    if (failed.length > 0) {
      const first =
        failed[0]!.failureMessages
          .join('\n')
          .split('\n')
          .find((line) => /^\s*\w*error\b/i.test(line) && !line.includes('STACK_TRACE_ERROR')) ??
        'no assertion message (timed out?)';
      return {
        verdict: 'killed',
        detail: `${failed.length} failed, e.g. ${failed[0]!.fullName}: ${first.slice(0, 160)}`,
      };
    }
    const ran = named.filter((result) => result.status === 'passed');
    if (ran.length === 0 || run.fileErrors.length > 0) {
      // Nothing ran, or a file broke before its tests: that proves nothing either way.
      throw new Error(
        `mutation "${mutation.name}" ran no named test (vitest exited ${run.exitCode}):\n${run.fileErrors.join('\n')}\n${tail(run.log)}`,
      );
    }
    return { verdict: 'survived', detail: `${ran.length} passed` };
  } finally {
    copy.remove();
  }
}

async function main(): Promise<void> {
  const mutations = selected();
  checkStatically(mutations);
  const table = (verdicts: ReadonlyMap<string, Verdict>) => renderTable(MUTATIONS, verdicts);
  if (values.check) {
    const assumed = new Map(MUTATIONS.map((m) => [m.name, 'killed' as Verdict]));
    if (tableInDoc(readFileSync(DOC, 'utf8')) !== table(assumed)) {
      fail('the table in docs/invariants.md is not the mutation list; run with --write-doc');
    }
    console.log(`${MUTATIONS.length} mutations apply cleanly; docs/invariants.md lists them all`);
    return;
  }

  const startedAt = Date.now();
  await runBaseline(mutations);
  const verdicts = new Map<string, Verdict>();
  const queue = [...mutations];
  let done = 0;
  const worker = async () => {
    for (let mutation = queue.shift(); mutation; mutation = queue.shift()) {
      const began = Date.now();
      const outcome = await runMutation(mutation).catch((error: unknown) =>
        fail((error as Error).message),
      );
      verdicts.set(mutation.name, outcome.verdict);
      done += 1;
      console.log(
        `[${done}/${mutations.length}] ${outcome.verdict.toUpperCase()} ${mutation.name} (row ${mutation.row}, ${seconds(Date.now() - began)}): ${outcome.detail}`,
      );
    }
  };
  const jobs = Math.max(1, Number(values.jobs) || DEFAULT_JOBS);
  await Promise.all(Array.from({ length: Math.min(jobs, mutations.length) }, worker));

  const printed = renderTable(mutations, verdicts);
  console.log(`\n${printed}\n\n(${seconds(Date.now() - startedAt)})`);
  const survivors = mutations.filter((m) => verdicts.get(m.name) !== 'killed');
  if (survivors.length > 0) {
    fail(`survived (no named test failed): ${survivors.map((m) => `"${m.name}"`).join(', ')}`);
  }
  if (values.only) return;
  const doc = readFileSync(DOC, 'utf8');
  if (values['write-doc']) {
    writeFileSync(DOC, withTable(doc, printed));
    console.log('wrote the table to docs/invariants.md');
  } else if (tableInDoc(doc) !== printed) {
    fail('the table in docs/invariants.md differs from this run; run with --write-doc');
  }
}

await main();

async function runBaselineOnce(tests: readonly NamedTest[]): Promise<VitestRun> {
  const copy = scratchCopy(REPO);
  try {
    return await runNamedTests(copy.dir, tests, { timeoutMs: RUN_TIMEOUT_MS });
  } finally {
    copy.remove();
  }
}

function everyNamedTestPassed(run: VitestRun, tests: readonly NamedTest[]): boolean {
  return (
    run.fileErrors.length === 0 &&
    tests.every((test) => {
      const results = resultsFor(run, test);
      return results.length > 0 && results.every((result) => result.status === 'passed');
    })
  );
}
