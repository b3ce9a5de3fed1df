/**
 * The four numbers every throughput case reports per system: delivered messages per second,
 * the server's CPU and WAL per delivered message (bench/lib/server-cost.ts), and the CPU of the
 * process running the drain per delivered message, collected run by run and turned into four
 * table rows. On a busy machine the two CPU rows say what the rate would be on a quiet one.
 */
import { median, RunsBySystem } from '../lib/stats.js';
import type { SystemId } from '../systems/types.js';
import type { DrainMeasurement } from './harness.js';
import type { ResultRow } from './types.js';

export class DrainCosts {
  readonly rates = new RunsBySystem<SystemId>();
  readonly cpu = new RunsBySystem<SystemId>();
  readonly wal = new RunsBySystem<SystemId>();
  readonly clientCpu = new RunsBySystem<SystemId>();

  add(id: SystemId, result: DrainMeasurement): void {
    this.rates.add(id, result.drainRate);
    if (Number.isFinite(result.serverCpuMicrosPerMessage)) {
      this.cpu.add(id, result.serverCpuMicrosPerMessage);
    }
    this.wal.add(id, result.walBytesPerMessage);
    if (Number.isFinite(result.clientCpuMicrosPerMessage)) {
      this.clientCpu.add(id, result.clientCpuMicrosPerMessage);
    }
  }

  /**
   * The rate row labelled `label`, then CPU (server, client) and WAL rows for the same runs. Its
   * users take the systems in turns within each run, so the rows' runs pair up (runsPaired).
   */
  rows(scenario: string, label: string, absent?: ResultRow['absent']): ResultRow[] {
    const row = (
      label: string,
      unit: ResultRow['unit'],
      better: ResultRow['better'],
      runs: RunsBySystem<SystemId>,
    ): ResultRow => ({
      scenario,
      label,
      unit,
      better,
      values: runs.measurements(),
      absent,
      runsPaired: true,
    });
    return [
      row(label, 'msg/s', 'higher', this.rates),
      row(
        'same: PostgreSQL CPU (all server processes) per delivered message',
        'µs',
        'lower',
        this.cpu,
      ),
      row(
        'same: CPU of the process running the drain, per delivered message',
        'µs',
        'lower',
        this.clientCpu,
      ),
      row('same: WAL written per delivered message', 'bytes', 'lower', this.wal),
    ];
  }
}

/**
 * This build's drains against another build's (BENCH_BASELINE), both as outbox-relay: each figure
 * (rate, server CPU, WAL and drain process CPU per message) as this build / the baseline, from
 * the medians of their runs and, steadier on a shared machine, as the median of the run-by-run
 * ratios (each run drains the two builds one right after the other). A rate above 1 is better;
 * CPU and WAL below 1.
 */
export function againstBaseline(ours: DrainCosts, baseline: DrainCosts): string {
  const ratios = (runs: RunsBySystem<SystemId>, other: RunsBySystem<SystemId>) => {
    const mine = runs.get('outbox-relay');
    const theirs = other.get('outbox-relay');
    if (!mine || !theirs || mine.length !== theirs.length) return 'n/a';
    const paired = mine.map((value, run) => value / theirs[run]!);
    return `${(median(mine) / median(theirs)).toFixed(3)}x (run by run ${median(paired).toFixed(3)}x)`;
  };
  return `rate ${ratios(ours.rates, baseline.rates)}, PostgreSQL CPU per message ${ratios(ours.cpu, baseline.cpu)}, WAL per message ${ratios(ours.wal, baseline.wal)}, drain process CPU per message ${ratios(ours.clientCpu, baseline.clientCpu)}`;
}
