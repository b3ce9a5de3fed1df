/**
 * The table `npm run test:mutations` prints, and the copy of it kept in docs/invariants.md
 * between markers, so the doc always says what the last full run showed.
 */
import type { Mutation, NamedTest } from './mutation.js';

export type Verdict = 'killed' | 'survived' | 'not run';

export const TABLE_BEGIN =
  '<!-- mutations:begin (written by npm run test:mutations -- --write-doc) -->';
export const TABLE_END = '<!-- mutations:end -->';

function describeTest(test: NamedTest): string {
  const file = test.file.replace(/^test\//, '');
  return `\`${file}\` "${test.name}"${test.driver ? ` (${test.driver})` : ''}`;
}

function describeEdits(mutation: Mutation): string {
  return [...new Set(mutation.edits.map((edit) => `\`${edit.file}\``))].join(', ');
}

/** Markdown, one line per mutation, in the order of the list. */
export function renderTable(
  mutations: readonly Mutation[],
  verdicts: ReadonlyMap<string, Verdict>,
): string {
  const lines = [
    '| mutation | row | edits | tests run | result |',
    '|---|---|---|---|---|',
    ...mutations.map(
      (mutation) =>
        `| ${mutation.name} | ${mutation.row} | ${describeEdits(mutation)} | ${mutation.tests
          .map(describeTest)
          .join('<br>')} | ${verdicts.get(mutation.name) ?? 'not run'} |`,
    ),
  ];
  return lines.join('\n');
}

/** The table between the markers of `doc`, or undefined when the markers are missing. */
export function tableInDoc(doc: string): string | undefined {
  const begin = doc.indexOf(TABLE_BEGIN);
  const end = doc.indexOf(TABLE_END);
  if (begin < 0 || end < begin) return undefined;
  return doc.slice(begin + TABLE_BEGIN.length, end).trim();
}

export function withTable(doc: string, table: string): string {
  const begin = doc.indexOf(TABLE_BEGIN);
  const end = doc.indexOf(TABLE_END);
  if (begin < 0 || end < begin) {
    throw new Error(`docs/invariants.md has no ${TABLE_BEGIN} ... ${TABLE_END} markers`);
  }
  return `${doc.slice(0, begin + TABLE_BEGIN.length)}\n${table}\n${doc.slice(end)}`;
}

/** Row numbers of the guarantee table: lines starting `| <n> |`. */
export function invariantRows(doc: string): number[] {
  return [...doc.matchAll(/^\| (\d+) \|/gm)].map((match) => Number(match[1]));
}
