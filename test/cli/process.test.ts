/**
 * The real `outbox` process (node bin/outbox.mjs, through tsx) for every command: what an
 * operator sees on stdout and stderr, the exit code, and that refused input writes nothing.
 * Each spawn costs about a second, so fine-grained cases live in commands.test.ts.
 */
import { beforeEach, describe, expect, it } from 'vitest';
import { migrations } from '../../src/store/migrations.generated.js';
import { useTestDatabase } from '../support/database.js';
import { insertMessageIn } from './message-rows.js';
import { countRows, messageState, runOutbox, UNREACHABLE_DATABASE_URL } from './outbox-cli.js';

const database = useTestDatabase();
const DAY = 86_400_000;
const WEBHOOK_PAYLOAD = '{"url":"https://example.com/hook","body":{"order":7}}';

function env(extra: Record<string, string> = {}): Record<string, string> {
  return { DATABASE_URL: database.url, ...extra };
}

beforeEach(async () => {
  await database.pool.query('TRUNCATE outbox.messages, outbox.delivered_groups');
});

describe('outbox (the process)', () => {
  it('--help lists the commands and the exit codes on stdout, exit 0', async () => {
    const result = await runOutbox(['--help'], {});
    expect(result.code).toBe(0);
    expect(result.stderr).toBe('');
    expect(result.stdout).toMatch(/^Usage: outbox <command> \[options\]$/m);
    expect(result.stdout).toMatch(/^ {2}drain +deliver due messages, once or on an interval$/m);
    expect(result.stdout).toMatch(/^ {2}4 {8}could not connect to the database/m);
  });

  it('<command> --help shows that command, even without DATABASE_URL', async () => {
    const result = await runOutbox(['purge', '--help'], {});
    expect(result.code).toBe(0);
    expect(result.stdout).toMatch(/^Usage: outbox purge --older-than 7d/);
    expect(result.stdout).toContain('--dead-older-than DURATION');
  });

  it('without DATABASE_URL exits 3 with one line on stderr', async () => {
    expect(await runOutbox(['stats'], {})).toEqual({
      code: 3,
      stdout: '',
      stderr:
        'outbox: DATABASE_URL is not set: export the postgres:// URL of the database that holds the outbox\n',
    });
  });

  it('with an unreachable database exits 4 with one line on stderr, writing nothing', async () => {
    const before = await countRows(database.pool);
    expect(
      await runOutbox(['enqueue', '--kind', 'webhook', '--payload', WEBHOOK_PAYLOAD], {
        DATABASE_URL: UNREACHABLE_DATABASE_URL,
      }),
    ).toEqual({
      code: 4,
      stdout: '',
      stderr:
        'outbox: cannot connect to the database at 127.0.0.1:1/nope: connection refused (ECONNREFUSED)\n',
    });
    expect(await countRows(database.pool)).toBe(before);
  });
});

describe('outbox migrate (the process)', () => {
  it('creates the schema named by OUTBOX_SCHEMA', async () => {
    const result = await runOutbox(['migrate'], env({ OUTBOX_SCHEMA: 'cli_process' }));
    expect(result).toMatchObject({ code: 0, stderr: '' });
    const versions = migrations.map((m) => m.version);
    expect(result.stdout).toBe(
      `schema cli_process: applied ${versions.join(', ')}; now at version ${versions.at(-1)}\n`,
    );
    expect(await countRows(database.pool, 'cli_process')).toBe(0);
  });
});

describe('outbox enqueue (the process)', () => {
  it('writes the message and prints its key', async () => {
    const result = await runOutbox(
      ['enqueue', '--kind', 'webhook', '--payload', WEBHOOK_PAYLOAD, '--delay', '5m'],
      env(),
    );
    expect(result).toMatchObject({ code: 0, stderr: '' });
    const key = result.stdout.trim();
    const { rows } = await database.pool.query(
      'SELECT payload, due_at > now() + interval $$4 minutes$$ AS delayed FROM outbox.messages WHERE key = $1',
      [key],
    );
    expect(rows).toEqual([{ payload: JSON.parse(WEBHOOK_PAYLOAD), delayed: true }]);
  });

  it.each<[string, string[], string]>([
    [
      'a payload that is not JSON',
      ['--payload', '{"url": '],
      'outbox: --payload: not valid JSON (Unexpected end of JSON input)\n',
    ],
    [
      'a bad duration',
      ['--payload', WEBHOOK_PAYLOAD, '--delay', '30 sec'],
      'outbox: --delay: "30 sec" is not a duration; use a whole number and a unit: 500ms, 30s, 5m, 2h, 7d\n',
    ],
    [
      'a payload the webhook sender would refuse',
      ['--payload', '{"url":"ftp://example.com/","body":{}}'],
      'outbox: --payload: payload.url: must be http or https, not ftp:\n',
    ],
  ])('refuses %s with exit 2, writing nothing', async (_, argv, stderr) => {
    const before = await countRows(database.pool);
    expect(await runOutbox(['enqueue', '--kind', 'webhook', ...argv], env())).toEqual({
      code: 2,
      stdout: '',
      stderr,
    });
    expect(await countRows(database.pool)).toBe(before);
  });
});

describe('outbox stats and list (the process)', () => {
  it('stats --json prints one JSON object', async () => {
    await insertMessageIn(database.pool, 'pending');
    await insertMessageIn(database.pool, 'dead');
    const result = await runOutbox(['stats', '--json'], env());
    expect(result).toMatchObject({ code: 0, stderr: '' });
    expect(JSON.parse(result.stdout)).toMatchObject({ pending: 1, dead: 1, delivered: 0 });
  });

  it('list shows a table of the state asked for', async () => {
    const id = await insertMessageIn(database.pool, 'dead');
    await insertMessageIn(database.pool, 'pending');
    const result = await runOutbox(['list', '--state', 'dead'], env());
    expect(result).toMatchObject({ code: 0, stderr: '' });
    const lines = result.stdout.trimEnd().split('\n');
    expect(lines).toHaveLength(2);
    expect(lines[0]).toMatch(
      /^ID\s+KIND\s+KEY\s+ATTEMPTS\s+DEAD SINCE\s+ORDERING KEY\s+LAST ERROR$/,
    );
    expect(lines[1]).toMatch(
      new RegExp(
        `^${id}\\s+webhook\\s+[0-9a-f-]{36}\\s+1/10\\s+\\S+Z\\s+-\\s+permanent failure: test$`,
      ),
    );
  });

  it('list with an unknown state exits 2', async () => {
    expect(await runOutbox(['list', '--state', 'failed'], env())).toEqual({
      code: 2,
      stdout: '',
      stderr:
        'outbox: --state: unknown state "failed"; expected one of pending, claimed, delivered, dead\n',
    });
  });
});

describe('outbox retry and discard (the process)', () => {
  it('retry makes a dead message pending; retrying a pending one exits 1', async () => {
    const id = await insertMessageIn(database.pool, 'dead');
    expect(await runOutbox(['retry', id], env())).toEqual({
      code: 0,
      stdout: `message ${id} is pending again, due now\n`,
      stderr: '',
    });
    expect(await messageState(database.pool, id)).toBe('pending');
    expect(await runOutbox(['retry', id], env())).toEqual({
      code: 1,
      stdout: '',
      stderr: `outbox: retry: message ${id} is pending, not dead; only dead messages can be retried\n`,
    });
  });

  it('discard deletes a dead message; a claimed one exits 1 and stays', async () => {
    const dead = await insertMessageIn(database.pool, 'dead');
    const claimed = await insertMessageIn(database.pool, 'claimed');
    expect(await runOutbox(['discard', dead], env())).toEqual({
      code: 0,
      stdout: `discarded message ${dead} (was dead)\n`,
      stderr: '',
    });
    const refused = await runOutbox(['discard', claimed], env());
    expect(refused).toMatchObject({ code: 1, stdout: '' });
    expect(refused.stderr).toMatch(/^outbox: discard: message \d+ is claimed: [^\n]+\n$/);
    expect(await messageState(database.pool, claimed)).toBe('claimed');
  });
});

describe('outbox purge (the process)', () => {
  it('deletes finished messages older than --older-than', async () => {
    await insertMessageIn(database.pool, 'delivered', { ageMs: 8 * DAY });
    await insertMessageIn(database.pool, 'dead', { ageMs: 8 * DAY });
    const pending = await insertMessageIn(database.pool, 'pending', { ageMs: 8 * DAY });
    expect(await runOutbox(['purge', '--older-than', '7d'], env())).toEqual({
      code: 0,
      stdout: 'purged 1 delivered and 1 dead messages\n',
      stderr: '',
    });
    expect(await messageState(database.pool, pending)).toBe('pending');
    expect(await countRows(database.pool)).toBe(1);
  });

  it('refuses a bad duration with exit 2, deleting nothing', async () => {
    await insertMessageIn(database.pool, 'delivered', { ageMs: 8 * DAY });
    expect(await runOutbox(['purge', '--older-than', '7x'], env())).toEqual({
      code: 2,
      stdout: '',
      stderr:
        'outbox: --older-than: "7x" is not a duration; use a whole number and a unit: 500ms, 30s, 5m, 2h, 7d\n',
    });
    expect(await countRows(database.pool)).toBe(1);
  });
});
