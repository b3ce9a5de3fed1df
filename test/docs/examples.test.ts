/**
 * Every TypeScript example a reader is shown (README.md, docs/*.md, and the `@example`s of doc
 * comments in src/ and examples/) type-checks strictly against the package, in one program.
 * What the examples take as given is in test/docs/given-names.ts; example-types.ts has the rule.
 */
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { beforeAll, describe, expect, it } from 'vitest';
import { type CodeExample, repositoryExamples } from './code-examples.js';
import { type ExampleError, exampleTypeErrors } from './example-types.js';

const root = fileURLToPath(new URL('../..', import.meta.url));
const examples = repositoryExamples(root);

/** Mistakes the check must catch, checked in the same program as the real examples. */
const PROBES = 'probes.md';
const probes: CodeExample[] = [
  // A function that does not exist.
  'await drainOnse({ store, senders });',
  // Imports from the package that leave one out: the reader's copy would not compile.
  "import { createOutbox } from 'outbox-relay';\nawait drainOnce({ store, senders });",
  // A number where the option takes a Date or a function.
  'await drainOnce({ store, senders, deadline: Date.now() + 25_000 });',
  // An optional parameter used as if always there.
  "const sender: Sender = async (message, signal, context) => {\n  context.spend(1, 'x');\n};",
].map((code, index) => ({ file: PROBES, line: index * 10 + 1, code: `${code}\n` }));

let errors: ExampleError[];
beforeAll(() => {
  errors = exampleTypeErrors(root, [...examples, ...probes]);
}, 60_000);

describe('documentation examples', () => {
  it('are found in README.md, docs/ and the doc comments of src/', () => {
    const files = new Set(examples.map((example) => example.file));
    expect(files).toContain('README.md');
    expect([...files].some((file) => file.startsWith('docs/'))).toBe(true);
    expect([...files].some((file) => file.startsWith('src/'))).toBe(true);
    expect(examples.length).toBeGreaterThanOrEqual(60);
    expect(examples.filter((example) => example.excerptOf).length).toBeGreaterThanOrEqual(4);
  });

  it('type-check strictly against the package, with only the given names supplied', () => {
    expect(errors.filter((error) => !error.startsWith(`${PROBES}:`))).toEqual([]);
  });

  it('fail the check for a missing function, a missing import, a wrong type and a missing ?.', () => {
    expect(errors.filter((error) => error.startsWith(`${PROBES}:`))).toEqual([
      "probes.md:1:7 TS2304: Cannot find name 'drainOnse'.",
      "probes.md:12:7 TS2304: Cannot find name 'drainOnce'.",
      "probes.md:21:35 TS2322: Type 'number' is not assignable to type 'Date | (() => number) | undefined'.",
      "probes.md:32:3 TS18048: 'context' is possibly 'undefined'.",
    ]);
  });

  // An excerpt is the code that runs: edit the file, then the document, never one alone.
  it.each(examples.filter((example) => example.excerptOf))(
    'the excerpt at $file:$line is in $excerptOf, line for line',
    ({ code, excerptOf }) => {
      const source = readFileSync(`${root}${excerptOf}`, 'utf8');
      expect(`\n${source}`).toContain(`\n${code}`);
    },
  );
});
