/**
 * README's code excerpts are the code that runs: every block marked
 * `<!-- excerpt: PATH -->` must appear word for word, as whole lines, in PATH, a file that the
 * typecheck compiles and a test runs. Edit the file, then the README, never one alone.
 */
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const root = fileURLToPath(new URL('..', import.meta.url));
const readme = readFileSync(`${root}README.md`, 'utf8');
const EXCERPT = /<!-- excerpt: (\S+) -->\n```ts\n([\s\S]*?)```/g;
const excerpts = [...readme.matchAll(EXCERPT)].map(([, path, code]) => ({
  path: path!,
  code: code!,
}));

describe('README excerpts', () => {
  it('are there to check', () => {
    expect(excerpts.length).toBeGreaterThanOrEqual(4);
  });

  it.each(excerpts)('the excerpt of $path is in that file, line for line', ({ path, code }) => {
    const source = readFileSync(`${root}${path}`, 'utf8');
    expect(`\n${source}`).toContain(`\n${code}`);
  });
});
