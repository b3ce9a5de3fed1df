/**
 * The one results table, as Markdown: readable in a terminal and pasted as is into
 * docs/benchmarks.md. Ratios say how many times better outbox-relay is than each peer (above
 * 1: outbox-relay better; below 1: the peer is), whichever way the unit points.
 */
import type { ResultRow } from '../scenarios/types.js';
import type { SystemId } from '../systems/types.js';
import type { Measurement } from './stats.js';
import {
  advantage,
  INTERVAL_CONFIDENCE,
  median,
  medianInterval,
  pairedRatios,
  spreadPercent,
} from './stats.js';

export interface Column {
  id: SystemId;
  title: string;
}

export function renderTable(rows: readonly ResultRow[], columns: readonly Column[]): string {
  const peers = columns.filter((column) => column.id !== 'outbox-relay');
  const header = [
    '#',
    'case',
    'unit',
    ...columns.map((column) => column.title),
    ...peers.map((peer) => `ours vs ${shortName(peer.id)}`),
    'spread',
  ];
  const lines = rows.map((row) => {
    const ours = row.values['outbox-relay'];
    const cells = columns.map((column) => {
      const value = row.values[column.id];
      if (value) return formatValue(value.median, row.unit);
      return row.absent?.[column.id] ?? '';
    });
    const ratios = peers.map((peer) => {
      const theirs = row.values[peer.id];
      if (!ours || !theirs || ours.median === 0 || theirs.median === 0) return '';
      return `${advantage(ours.median, theirs.median, row.better).toFixed(2)}×`;
    });
    return [row.scenario, row.label, row.unit, ...cells, ...ratios, spread(row)];
  });
  return markdownTable(header, lines, 3);
}

/** Rows as a Markdown table, the columns from `rightFrom` on aligned right (the numbers). */
function markdownTable(header: string[], lines: string[][], rightFrom: number): string {
  const align = header.map((_, index) => (index >= rightFrom ? '---:' : '---'));
  return [header, align, ...lines].map((cells) => `| ${cells.join(' | ')} |`).join('\n');
}

/** A row's ratio against one peer read run by run (see pairedRatios), with an interval. */
export interface PairedRatio {
  scenario: string;
  label: string;
  peer: SystemId;
  runs: number;
  /** The median of the run-by-run ratios (above 1: ours better). */
  median: number;
  /** The interval medianInterval gives for it, at INTERVAL_CONFIDENCE. */
  low: number;
  high: number;
}

/**
 * Every row's ratios against each peer run by run, where its runs pair up (ResultRow.runsPaired),
 * both ran as often, and often enough for an interval (6 runs at 95%: `BENCH_RUNS=6` or more). Whether a target ratio holds is read
 * here: a ratio of medians that meets it while the interval reaches below it has not shown it.
 */
export function pairedRatioRows(
  rows: readonly ResultRow[],
  columns: readonly Column[],
): PairedRatio[] {
  const paired: PairedRatio[] = [];
  for (const row of rows) {
    const ours = row.values['outbox-relay'];
    if (!ours || row.runsPaired !== true) continue;
    for (const { id: peer } of columns) {
      const theirs = row.values[peer];
      if (peer === 'outbox-relay' || !theirs) continue;
      const ratios = pairedRatios(ours, theirs, row.better);
      const interval = ratios && medianInterval(ratios);
      if (!ratios || !interval) continue;
      const { scenario, label } = row;
      paired.push({
        scenario,
        label,
        peer,
        runs: ratios.length,
        median: median(ratios),
        ...interval,
      });
    }
  }
  return paired;
}

/** The paired ratios as a Markdown table, like renderTable's; empty when there are none. */
export function renderPairedRatios(paired: readonly PairedRatio[]): string {
  if (paired.length === 0) return '';
  const percent = Math.round(INTERVAL_CONFIDENCE * 100);
  const header = ['#', 'case', 'ours vs', 'run by run', `${percent}% interval`, 'runs'];
  const lines = paired.map((each) => [
    each.scenario,
    each.label,
    shortName(each.peer),
    `${each.median.toFixed(2)}×`,
    `${each.low.toFixed(2)}× to ${each.high.toFixed(2)}×`,
    String(each.runs),
  ]);
  return markdownTable(header, lines, 3);
}

function shortName(id: SystemId): string {
  return id === 'graphile-worker' ? 'graphile' : id === 'sql-floor' ? 'floor' : id;
}

export function formatValue(value: number, unit: ResultRow['unit']): string {
  switch (unit) {
    case 'msg/s':
      return Math.round(value).toLocaleString('en-US');
    case 'ms':
      return value.toFixed(2);
    case 'µs':
      return value.toFixed(1);
    case 'MiB':
      return value.toFixed(1);
    case 'msgs':
    case 'bytes':
      return Math.round(value).toLocaleString('en-US');
    case 'x':
      return `${value.toFixed(2)}×`;
  }
}

/** The widest spread among this row's systems (see `spreadPercent`). */
function spread(row: ResultRow): string {
  const measured = Object.values(row.values).filter(
    (value): value is Measurement => value !== undefined && value.runs.length > 1,
  );
  if (measured.length === 0) return '';
  return `±${Math.round(Math.max(...measured.map(spreadPercent)))}%`;
}
