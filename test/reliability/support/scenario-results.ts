/**
 * What each reliability scenario reports for the summary table: written by the test (in a
 * vitest worker) as one JSON file per scenario, read by the summary reporter at the end.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

/** Where scenario files go; the reporter empties it when a run starts. */
export const RESULTS_DIR = join(process.cwd(), 'test-artifacts', 'reliability');

export interface ScenarioResult {
  /** One short line: what ran, over what. */
  scenario: string;
  runs: number;
  /** Messages committed (the ones that must be delivered). */
  messages: number;
  /** Faults injected, in total. */
  faults: number;
  /** What the faults were, in a few words. */
  injected: string;
  /** Committed messages never delivered. */
  lost: number;
  /** Deliveries beyond the first, by key. */
  duplicated: number;
  /** Messages from rolled-back transactions that went out (must be 0). */
  rolledBackSent: number;
  /** Highest subrequests one drain made, and its budget, where budgets apply. */
  subrequests?: { most: number; budget: number };
  /** Why each duplicate was allowed ('' when there were none). */
  duplicatesAllowed: string;
  /** Duplicates per kill, by kill point, where kills apply. */
  duplicatesPerKill?: Record<string, { kills: number; duplicates: number }>;
}

export function recordScenario(id: string, result: ScenarioResult): void {
  mkdirSync(RESULTS_DIR, { recursive: true });
  writeFileSync(join(RESULTS_DIR, `${id}.json`), `${JSON.stringify(result, null, 2)}\n`);
}
