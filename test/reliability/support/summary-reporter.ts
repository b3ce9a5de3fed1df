/**
 * Prints the reliability summary after the run: one row per scenario, from the files the
 * scenarios wrote (scenario-results.ts), and writes them together to
 * test-artifacts/reliability-summary.json for docs/reliability.md.
 */
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Reporter } from 'vitest/reporters';
import { RESULTS_DIR, type ScenarioResult } from './scenario-results.js';

export default class SummaryReporter implements Reporter {
  onInit(): void {
    rmSync(RESULTS_DIR, { recursive: true, force: true });
  }

  onTestRunEnd(): void {
    if (!existsSync(RESULTS_DIR)) return;
    const results = readdirSync(RESULTS_DIR)
      .filter((name) => name.endsWith('.json'))
      .sort()
      .map((name) => JSON.parse(readFileSync(join(RESULTS_DIR, name), 'utf8')) as ScenarioResult);
    const table = summaryTable(results);
    process.stdout.write(`\nReliability summary\n\n${table}\n`);
    mkdirSync(join(RESULTS_DIR, '..'), { recursive: true });
    writeFileSync(
      join(RESULTS_DIR, '..', 'reliability-summary.json'),
      `${JSON.stringify({ at: new Date().toISOString(), results }, null, 2)}\n`,
    );
    writeFileSync(join(RESULTS_DIR, '..', 'reliability-summary.md'), `${table}\n`);
  }
}

/** A Markdown table, readable in a terminal and pasteable into docs/reliability.md. */
export function summaryTable(results: readonly ScenarioResult[]): string {
  const header = [
    'scenario',
    'runs',
    'messages',
    'faults injected',
    'lost',
    'duplicated',
    'rolled-back sent',
    'subrequests / budget',
    'why each duplicate was allowed',
  ];
  const rows = results.map((result) => [
    result.scenario,
    String(result.runs),
    String(result.messages),
    `${result.faults}: ${result.injected}`,
    String(result.lost),
    String(result.duplicated),
    String(result.rolledBackSent),
    result.subrequests ? `${result.subrequests.most} / ${result.subrequests.budget}` : '-',
    [
      result.duplicatesAllowed || '-',
      ...Object.entries(result.duplicatesPerKill ?? {}).map(
        ([point, { kills, duplicates }]) => `${point}: ${duplicates} dup / ${kills} kills`,
      ),
    ].join('; '),
  ]);
  const line = (cells: string[]) => `| ${cells.join(' | ')} |`;
  return [line(header), line(header.map(() => '---')), ...rows.map(line)].join('\n');
}
