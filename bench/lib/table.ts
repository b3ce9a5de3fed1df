/**
 * The one results table, as Markdown: readable in a terminal and pasted as is into
 * docs/benchmarks.md. Ratios say how many times better outbox-relay is than each peer (above
 * 1: outbox-relay better; below 1: the peer is), whichever way the unit points.
 */
import type { ResultRow } from '../scenarios/types.js';
import type { SystemId } from '../systems/types.js';
import type { Measurement } from './stats.js';
import { spreadPercent } from './stats.js';

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
      const advantage =
        row.better === 'higher' ? ours.median / theirs.median : theirs.median / ours.median;
      return `${advantage.toFixed(2)}×`;
    });
    return [row.scenario, row.label, row.unit, ...cells, ...ratios, spread(row)];
  });
  const align = header.map((_, index) => (index >= 3 ? '---:' : '---'));
  return [header, align, ...lines].map((cells) => `| ${cells.join(' | ')} |`).join('\n');
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
