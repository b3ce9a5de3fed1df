import type { BenchConfig } from '../lib/config.js';
import type { BenchPostgres } from '../lib/postgres.js';
import type { Measurement } from '../lib/stats.js';
import type { QueueHandle, QueueSystem, SystemId } from '../systems/types.js';

/** One line of the results table: one case, a value per system that ran it. */
export interface ResultRow {
  scenario: string;
  /** What was measured, with its sizes, e.g. "no-op drain of 50,000". */
  label: string;
  unit: 'msg/s' | 'msgs' | 'ms' | 'µs' | 'MiB' | 'bytes' | 'x';
  better: 'higher' | 'lower';
  values: Partial<Record<SystemId, Measurement>>;
  /** Why a system has no value in this row, shown in its cell. */
  absent?: Partial<Record<SystemId, string>>;
  /**
   * Every system's run i ran in the same round, the systems taking turns within it: its ratios
   * may be read run by run (pairedRatioRows, bench/lib/table.ts).
   */
  runsPaired?: boolean;
}

/** The cells of a row that only outbox-relay runs (an option or mechanism the peers lack). */
export const OURS_ONLY: Readonly<Partial<Record<SystemId, string>>> = {
  'pg-boss': 'ours only',
  'graphile-worker': 'ours only',
  'sql-floor': 'ours only',
};

/** A database cloned from a system's migrated template, with the system open on it. */
export interface FreshDatabase {
  name: string;
  url: string;
  handle: QueueHandle;
  /** Closes the handle and drops the database. */
  dispose(): Promise<void>;
}

export interface ScenarioContext {
  config: BenchConfig;
  postgres: BenchPostgres;
  /** Writes one progress line (stderr). */
  progress(message: string): void;
  /** A new database for `system`, cloned from its template (made on first use). */
  freshDatabase(system: QueueSystem): Promise<FreshDatabase>;
  /**
   * Drains a small batch once per system per process, so the first measured run does not pay
   * for module loading, JIT and cold caches.
   */
  warmUp(system: QueueSystem): Promise<void>;
  /** `VACUUM ANALYZE` on the tables, as autovacuum would leave them after a burst of inserts. */
  vacuumAnalyze(url: string, tables: readonly string[]): Promise<void>;
}

export interface ScenarioOutput {
  rows: ResultRow[];
  /** Anything else worth keeping in the results file (plans, per-cycle sizes). */
  details?: Record<string, unknown>;
  /** Short lines printed under the table. */
  notes?: string[];
}

export interface Scenario {
  /** What BENCH_ONLY selects it by. */
  id: string;
  /** Other names BENCH_ONLY accepts. */
  aliases?: string[];
  title: string;
  /** Present when the scenario cannot run yet; says what it waits for. */
  notYetRun?: string;
  run?(context: ScenarioContext): Promise<ScenarioOutput>;
}
