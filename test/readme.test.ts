/**
 * README's code excerpts are the code that runs: every block marked
 * `<!-- excerpt: PATH -->` must appear word for word, as whole lines, in PATH, a file that the
 * typecheck compiles and a test runs. Edit the file, then the README, never one alone.
 */
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { useTestDatabase } from './support/database.js';

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

describe('CI', () => {
  it('runs exactly the test command the README gives for CI, after npm ci', () => {
    const command = /CI runs, after `npm ci`, exactly this[\s\S]*?```sh\n(.+)\n```/.exec(
      readme,
    )?.[1];
    expect(command).toBeDefined();
    const script = readFileSync(`${root}.ci/run`, 'utf8').trim().split('\n');
    expect(script.slice(-2)).toEqual(['npm ci', command]);
  });
});

describe('README "The short version"', () => {
  const database = useTestDatabase({ migrated: false });

  it('runs as written: the email exists after the commit, and the drain delivers it', async () => {
    process.env.TEN_LINES_DATABASE_URL = database.url;
    const setup = await import('./fixtures/readme/ten-lines-setup.js');
    try {
      await import('./fixtures/readme/ten-lines.js');
      expect(setup.sent).toHaveLength(1);
      expect(setup.sent[0]).toMatchObject({ kind: 'email', payload: { to: [setup.address] } });
      const { rows } = await database.pool.query('SELECT state FROM outbox.all_messages');
      expect(rows).toEqual([{ state: 'delivered' }]);
    } finally {
      await setup.pool.end();
    }
  });
});
