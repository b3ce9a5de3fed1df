/**
 * README's promises that a test can hold it to: the CI command it gives, and "The short version"
 * running as written. Its code excerpts (`<!-- excerpt: PATH -->`, word for word in PATH) and
 * every other TypeScript block are checked by test/docs/examples.test.ts.
 */
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { useTestDatabase } from './support/database.js';

const root = fileURLToPath(new URL('..', import.meta.url));
const readme = readFileSync(`${root}README.md`, 'utf8');

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
