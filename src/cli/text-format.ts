/** How the CLI writes times, durations and tables for people (JSON output uses none of this). */
import { escapeControlCharacters } from './terminal-text.js';

/**
 * A duration the way an operator reads it: `850ms`, `4.2s`, `3m 12s`, `2h 5m`, `3d 4h`.
 *
 * @example
 * formatDuration(192_000); // '3m 12s'
 */
export function formatDuration(ms: number): string {
  if (ms <= 0) return '0s';
  if (ms < 1_000) return `${Math.round(ms)}ms`;
  if (ms < 60_000) {
    // Tenths rounded down, so 59.99 s reads 59.9s rather than a "60.0s" that is not a minute.
    return `${Math.floor(ms / 100) / 10}s`;
  }
  const units: [string, number][] = [
    ['d', 86_400_000],
    ['h', 3_600_000],
    ['m', 60_000],
    ['s', 1_000],
  ];
  const index = units.findIndex(([, size]) => ms >= size);
  const [bigName, bigSize] = units[index]!;
  const [smallName, smallSize] = units[index + 1]!;
  const big = Math.floor(ms / bigSize);
  const small = Math.floor((ms - big * bigSize) / smallSize);
  return small === 0 ? `${big}${bigName}` : `${big}${bigName} ${small}${smallName}`;
}

/** UTC to the second, `2025-11-30T07:21:05Z`: sortable, and the same on every operator's machine. */
export function formatTime(time: Date | null): string {
  return time === null ? '-' : `${time.toISOString().slice(0, 19)}Z`;
}

/** Cells longer than this are cut, so one long error does not push every row off screen. */
const MAX_CELL_CHARACTERS = 60;

/**
 * Left-aligned columns two spaces apart (pass a header as the first row if you want one); the
 * last column is not padded, and long cells are cut.
 */
export function formatTable(rows: readonly (readonly string[])[]): string {
  const cells = rows.map((row) => row.map(shortCell));
  const columns = Math.max(0, ...cells.map((row) => row.length));
  const widths = Array.from({ length: columns }, (_, column) =>
    Math.max(...cells.map((row) => row[column]?.length ?? 0)),
  );
  return cells
    .map((row) =>
      row
        .map((cell, column) => (column === row.length - 1 ? cell : cell.padEnd(widths[column]!)))
        .join('  ')
        .trimEnd(),
    )
    .join('\n');
}

function shortCell(text: string): string {
  // Escaped here too (the output sink escapes anyway), so columns are measured as printed.
  const flat = escapeControlCharacters(text.replace(/\s+/g, ' '));
  return flat.length > MAX_CELL_CHARACTERS ? `${flat.slice(0, MAX_CELL_CHARACTERS - 1)}…` : flat;
}

/** `1 message`, `3 messages`; `count(2, 'batch', 'batches')`. */
export function count(n: number, noun: string, plural = `${noun}s`): string {
  return `${n} ${n === 1 ? noun : plural}`;
}
