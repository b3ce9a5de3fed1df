/**
 * `npm run bench`: outbox-relay side by side with pg-boss, graphile-worker and a raw-SQL floor,
 * on an embedded PostgreSQL of its own. Prints one table (stdout) and progress (stderr), and
 * writes bench/results/<date>.json. See docs/benchmarks.md for what each case means.
 *
 *   npm run bench                          # everything, about nine minutes on two cores
 *   BENCH_SCALE=0.1 npm run bench          # everything, a tenth of the messages: a smoke run
 *   BENCH_ONLY=1,3 npm run bench           # only scenarios 1 and 3 (ids or aliases)
 *   BENCH_RUNS=3 npm run bench             # three measured runs per case instead of five
 *   BENCH_BASELINE=../old BENCH_ONLY=1 npm run bench   # scenario 1 beside another checkout's build
 */
import { killChildren } from './lib/children.js';
import { readBenchConfig } from './lib/config.js';
import { loadAverage, machineInfo } from './lib/machine.js';
import { type BenchPostgres, startBenchPostgres } from './lib/postgres.js';
import { elapsedSeconds, progress } from './lib/progress.js';
import { type ScenarioRecord, writeResults } from './lib/results.js';
import { INTERVAL_CONFIDENCE } from './lib/stats.js';
import { pairedRatioRows, renderPairedRatios, renderTable } from './lib/table.js';
import { createScenarioContext } from './scenarios/harness.js';
import { isSelected, SCENARIOS } from './scenarios/index.js';
import { SYSTEMS } from './systems/index.js';
import { SYSTEM_IDS } from './systems/types.js';

const config = readBenchConfig();
const startedAt = new Date();
const machine = machineInfo();
progress(
  `outbox-relay bench: scale ${config.scale}, ${config.runs} measured run(s) per case, scenarios ${
    config.only ? [...config.only].join(',') : 'all'
  }; ${machine.cores} cores, ${machine.cpuModel}`,
);

let postgres: BenchPostgres | undefined;
let stopping: Promise<void> | undefined;
/** Set on Ctrl-C: no further scenario starts and no results file is written. */
let interrupted = false;
const shutdown = () => {
  stopping ??= (async () => {
    killChildren();
    await postgres?.stop();
  })();
  return stopping;
};
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => {
    interrupted = true;
    progress(`${signal}: stopping PostgreSQL and child processes`);
    shutdown().finally(() => process.exit(130));
  });
}

let failed = false;
try {
  progress('starting embedded PostgreSQL');
  postgres = await startBenchPostgres();
  progress(`PostgreSQL ${postgres.version} is up`);
  const context = createScenarioContext(config, postgres, progress);

  const records: ScenarioRecord[] = [];
  for (const scenario of SCENARIOS) {
    if (interrupted) break;
    const record: ScenarioRecord = {
      id: scenario.id,
      title: scenario.title,
      status: 'ran',
      rows: [],
    };
    records.push(record);
    if (!isSelected(scenario, config.only)) {
      record.status = 'not selected';
      continue;
    }
    if (scenario.notYetRun || !scenario.run) {
      record.status = 'not yet run';
      record.reason = scenario.notYetRun;
      progress(`${scenario.id} ${scenario.title}: not yet run, ${scenario.notYetRun}`);
      continue;
    }
    record.loadAverageAtStart = loadAverage();
    progress(
      `${scenario.id} ${scenario.title}: starting (load average ${record.loadAverageAtStart})`,
    );
    const scenarioStartedAt = elapsedSeconds();
    try {
      const output = await scenario.run(context);
      record.rows = output.rows;
      record.details = output.details;
      record.notes = output.notes;
    } catch (error) {
      failed = true;
      record.status = 'failed';
      record.reason = error instanceof Error ? (error.stack ?? error.message) : String(error);
      progress(`${scenario.id} FAILED: ${record.reason}`);
    }
    record.durationSeconds = Math.round((elapsedSeconds() - scenarioStartedAt) * 10) / 10;
    progress(`${scenario.id} done in ${record.durationSeconds} s`);
  }

  if (interrupted) throw new Error('interrupted: no results written');
  const columns = SYSTEM_IDS.map((id) => ({ id, title: SYSTEMS[id].label }));
  const rows = records.flatMap((record) => record.rows);
  const table = renderTable(rows, columns);
  const paired = pairedRatioRows(rows, columns);
  const pairedTable = renderPairedRatios(paired);
  const lines = [
    '',
    table,
    '',
    'ours vs X: how many times better outbox-relay is (above 1: ours better; below 1: X better).',
    'spread: the noisiest system in the row, half its range of runs (half the interquartile range for 10+ samples) over its median.',
    ...(pairedTable
      ? [
          '',
          pairedTable,
          '',
          `run by run: the median of ours / X per run (the systems take turns within a run), and the interval the median lies in with ${Math.round(INTERVAL_CONFIDENCE * 100)}% confidence (the sign test's; no assumption on the runs' distribution). A target ratio is shown when the interval's low end meets it.`,
        ]
      : []),
    ...records.flatMap((record) => record.notes ?? []),
    ...records
      .filter((record) => record.status === 'not yet run' || record.status === 'failed')
      .map((record) => `${record.id} ${record.title}: ${record.status} (${record.reason})`),
    '',
  ];
  process.stdout.write(lines.join('\n'));

  const durationSeconds = Math.round(elapsedSeconds());
  machine.loadAverageAtEnd = loadAverage();
  const file = await writeResults({
    startedAt: startedAt.toISOString(),
    durationSeconds,
    command: 'npm run bench',
    environment: {
      BENCH_SCALE: process.env.BENCH_SCALE,
      BENCH_ONLY: process.env.BENCH_ONLY,
      BENCH_RUNS: process.env.BENCH_RUNS,
      BENCH_BASELINE: process.env.BENCH_BASELINE,
    },
    machine,
    postgres: { version: postgres.version, settings: postgres.settings },
    systems: Object.fromEntries(
      SYSTEM_IDS.map((id) => [
        id,
        { label: SYSTEMS[id].label, version: SYSTEMS[id].version, settings: SYSTEMS[id].settings },
      ]),
    ),
    scenarios: records,
    table,
    paired,
  });
  progress(`wrote ${file}; total ${durationSeconds} s`);
} catch (error) {
  failed = true;
  progress(`bench failed: ${error instanceof Error ? (error.stack ?? error.message) : error}`);
} finally {
  await shutdown();
}
process.exitCode = failed ? 1 : 0;
