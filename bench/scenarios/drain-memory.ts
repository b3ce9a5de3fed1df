/**
 * Scenario 6: peak memory of a process that drains 50,000 messages. Each system drains in a
 * child process of its own (`node --import tsx bench/child/drain-process.ts`), so the number is
 * that drain's, not the bench's. The tsx loader is in every child alike.
 */
import { fileURLToPath } from 'node:url';
import type { DrainProcessReport } from '../child/drain-process.js';
import { runTypeScriptChild } from '../lib/children.js';
import { scaled } from '../lib/config.js';
import { RunsBySystem } from '../lib/stats.js';
import { SYSTEMS } from '../systems/index.js';
import { SYSTEM_IDS, type SystemId } from '../systems/types.js';
import { THROUGHPUT_BATCH, THROUGHPUT_CONCURRENCY } from './no-op-drain.js';
import type { ResultRow, Scenario } from './types.js';

const CHILD = fileURLToPath(new URL('../child/drain-process.ts', import.meta.url));
const REPO_ROOT = fileURLToPath(new URL('../..', import.meta.url));
const MIB = 1024 * 1024;

/**
 * One run per system: memory varies far less than throughput, and a second round of four
 * 50,000-message drains does not fit the ten-minute budget.
 */
const MEMORY_RUNS = 1;

export const drainMemoryScenario: Scenario = {
  id: '6',
  aliases: ['memory'],
  title: 'Peak memory of a drain process',
  async run(context) {
    const messages = scaled(context.config, 50_000, 1000);
    const peak = new RunsBySystem<SystemId>();
    const growth = new RunsBySystem<SystemId>();
    const reports: DrainProcessReport[] = [];
    for (let run = 1; run <= MEMORY_RUNS; run++) {
      for (const id of SYSTEM_IDS) {
        const system = SYSTEMS[id];
        const database = await context.freshDatabase(system);
        try {
          await database.handle.enqueue(messages);
          await context.vacuumAnalyze(database.url, await database.handle.tables());
          // The child opens its own connections; ours would only sit idle meanwhile.
          context.progress(
            `6 memory: ${system.label}, child process draining ${messages.toLocaleString('en-US')} messages`,
          );
          const outcome = await runTypeScriptChild(
            CHILD,
            {
              BENCH_SYSTEM: id,
              BENCH_DATABASE_URL: database.url,
              BENCH_EXPECTED: String(messages),
              BENCH_BATCH: String(THROUGHPUT_BATCH),
              BENCH_CONCURRENCY: String(THROUGHPUT_CONCURRENCY),
            },
            REPO_ROOT,
          );
          const line = outcome.stdout.trim().split('\n').at(-1) ?? '';
          if (outcome.code !== 0 || !line.startsWith('{')) {
            throw new Error(`${system.label}: drain process exited ${outcome.code}: ${line}`);
          }
          const report = JSON.parse(line) as DrainProcessReport;
          if (report.delivered !== messages) {
            throw new Error(`${system.label}: child delivered ${report.delivered} of ${messages}`);
          }
          reports.push(report);
          peak.add(id, report.maxRssBytes / MIB);
          growth.add(id, (report.sampledPeakRssBytes - report.baselineRssBytes) / MIB);
        } finally {
          await database.dispose();
        }
      }
    }
    const count = messages.toLocaleString('en-US');
    const rows: ResultRow[] = [
      {
        scenario: '6',
        label: `peak RSS (maxRSS) of a process draining ${count}`,
        unit: 'MiB',
        better: 'lower',
        values: peak.measurements(),
      },
      {
        scenario: '6',
        label: 'RSS growth during that drain (sampled peak - before)',
        unit: 'MiB',
        better: 'lower',
        values: growth.measurements(),
      },
    ];
    return { rows, details: { reports } };
  },
};
