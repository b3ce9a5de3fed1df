/** The results file: everything needed to read, compare and reproduce one run. */
import { mkdir, writeFile } from 'node:fs/promises';
import type { ResultRow } from '../scenarios/types.js';
import type { MachineInfo } from './machine.js';
import type { PairedRatio } from './table.js';

export interface ScenarioRecord {
  id: string;
  title: string;
  status: 'ran' | 'failed' | 'not yet run' | 'not selected';
  reason?: string;
  durationSeconds?: number;
  /** 1-minute load average as the scenario started: above the core count means contention. */
  loadAverageAtStart?: number;
  rows: ResultRow[];
  details?: Record<string, unknown>;
  notes?: string[];
}

export interface ResultsFile {
  startedAt: string;
  durationSeconds: number;
  command: string;
  environment: {
    BENCH_SCALE?: string;
    BENCH_ONLY?: string;
    BENCH_RUNS?: string;
    BENCH_BASELINE?: string;
  };
  machine: MachineInfo;
  postgres: { version: string; settings: Record<string, string> };
  systems: Record<string, { label: string; version: string; settings: Record<string, string> }>;
  scenarios: ScenarioRecord[];
  /** The printed table, Markdown. */
  table: string;
  /** Its ratios read run by run, with intervals (pairedRatioRows; none below 6 runs). */
  paired?: PairedRatio[];
}

/** Writes `bench/results/<UTC date and time>.json` and returns its path. */
export async function writeResults(results: ResultsFile): Promise<string> {
  const directory = new URL('../results/', import.meta.url);
  await mkdir(directory, { recursive: true });
  const stamp = results.startedAt.slice(0, 19).replaceAll(':', '-');
  const file = new URL(`${stamp}Z.json`, directory);
  await writeFile(file, `${JSON.stringify(results, null, 2)}\n`);
  return file.pathname;
}
