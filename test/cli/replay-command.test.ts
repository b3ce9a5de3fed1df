/**
 * `outbox replay` against real PostgreSQL: in-process for its output and refusals, and as the
 * real process for what SIGINT does to a running replay.
 */
import { userInfo } from 'node:os';
import { beforeEach, describe, expect, it } from 'vitest';
import { useTestDatabase } from '../support/database.js';
import { auditRows, insertDeadMessages, stateCounts } from '../support/replay-fixtures.js';
import { waitFor } from '../support/wait-for.js';
import { runOutboxInProcess, startOutbox } from './outbox-cli.js';

const database = useTestDatabase();

function env(): Record<string, string> {
  return { DATABASE_URL: database.url };
}

beforeEach(async () => {
  await database.pool.query('TRUNCATE outbox.messages, outbox.delivered_groups, outbox.replays');
});

describe('outbox replay', () => {
  it('a dry run prints the exact count and a sample; --execute replays them; each audited once', async () => {
    await insertDeadMessages(database.pool, 'outbox', 7);
    await insertDeadMessages(database.pool, 'outbox', 3, { lastError: "'connection refused'" });
    const dry = await runOutboxInProcess(
      ['replay', '--state', 'dead', '--error', 'HTTP 503'],
      env(),
    );
    expect(dry.code).toBe(0);
    expect(dry.stdout).toContain('7 dead messages match');
    expect(dry.stdout).toMatch(/ID\s+KIND\s+ORDERING KEY\s+KEY\s+LAST ERROR/);
    expect(dry.stdout.match(/HTTP 503 from hooks\.example\.com\/orders/g)).toHaveLength(5);
    expect(dry.stdout).toContain('run again with --execute');
    expect(await stateCounts(database.pool, 'outbox')).toEqual({ dead: 10 });

    const run = await runOutboxInProcess(
      [
        'replay',
        '--state',
        'dead',
        '--error',
        'HTTP 503',
        '--execute',
        '--by',
        'ada',
        '--batch-size',
        '3',
      ],
      env(),
    );
    expect(run).toMatchObject({ code: 0, stderr: '' });
    expect(run.stdout).toContain('replayed 7 in 3 batches');
    expect(await stateCounts(database.pool, 'outbox')).toEqual({ dead: 3, pending: 7 });
    const audits = await auditRows(database.pool, 'outbox');
    expect(
      audits.map((row) => [row.requested_by, row.dry_run, row.matched, row.replayed, row.outcome]),
    ).toEqual([
      [userInfo().username, true, '7', '0', 'finished'],
      ['ada', false, '7', '7', 'finished'],
    ]);
    expect(audits[1]?.selection).toEqual({ state: 'dead', errorContains: 'HTTP 503' });
  });

  it('--json prints the report as one object', async () => {
    await insertDeadMessages(database.pool, 'outbox', 2);
    const result = await runOutboxInProcess(
      ['replay', '--state', 'dead', '--since', '1d', '--json'],
      env(),
    );
    expect(result.code).toBe(0);
    const report = JSON.parse(result.stdout);
    expect(report).toMatchObject({ matched: 2, replayed: 0, dryRun: true, outcome: 'finished' });
    expect(report.sample).toHaveLength(2);
  });

  it('a selection that matches nothing exits 0 and writes nothing', async () => {
    await insertDeadMessages(database.pool, 'outbox', 2);
    for (const extra of [[], ['--execute']]) {
      const result = await runOutboxInProcess(
        ['replay', '--state', 'dead', '--kind', 'other.kind', ...extra],
        env(),
      );
      expect(result).toMatchObject({
        code: 0,
        stdout: 'no dead messages match; nothing written\n',
      });
    }
    expect(await auditRows(database.pool, 'outbox')).toEqual([]);
    expect(await stateCounts(database.pool, 'outbox')).toEqual({ dead: 2 });
  });

  it.each([
    [[], '--state: give dead (redrive) or delivered (resend)'],
    [['--state', 'pending'], '--state: expected one of dead, delivered'],
    [['--state', 'dead', '--kind', 'Bad Kind'], '--kind: is not a valid value'],
    [['--state', 'dead', '--ids', '1,x'], '--ids: is not a valid value: "x"'],
    [['--state', 'dead', '--after-id', '-3'], '--after-id: needs a value'],
    [['--state', 'dead', '--since', 'yesterday'], '--since: "yesterday" is not a duration'],
    [['--state', 'dead', '--since', '1h', '--until', '2h'], '--until: must be later than since'],
    [['--state', 'dead', '--error', ' '], '--error: expected text of 1 to 2048 characters'],
    [['--state', 'dead', '--rate', '10'], '--rate: only with --execute'],
    [
      ['--state', 'dead', '--execute', '--rate', '0'],
      '--rate: expected a whole number from 1 to 100000',
    ],
    [
      ['--state', 'dead', '--execute', '--batch-size', '2001'],
      '--batch-size: expected a whole number from 1 to 2000',
    ],
    [['--state', 'dead', '--by', ''], '--by: expected a name of 1 to 200 characters'],
  ])('refuses %j with exit 2 naming the flag, writing nothing', async (argv, message) => {
    await insertDeadMessages(database.pool, 'outbox', 2);
    const result = await runOutboxInProcess(['replay', ...argv], env());
    expect(result.code).toBe(2);
    expect(result.stderr).toContain(message);
    expect(result.stdout).toBe('');
    expect(await auditRows(database.pool, 'outbox')).toEqual([]);
    expect(await stateCounts(database.pool, 'outbox')).toEqual({ dead: 2 });
  });

  it('SIGINT stops a running replay before its next batch: exit 1, the batches done stay done and are audited', async () => {
    await insertDeadMessages(database.pool, 'outbox', 2000);
    const replay = startOutbox(
      ['replay', '--state', 'dead', '--execute', '--rate', '200', '--batch-size', '50'],
      env(),
    );
    await waitFor('a progress line', () => /replayed \d+ of 2000/.test(replay.stderr()));
    replay.child.kill('SIGINT');
    const result = await replay.exited;
    expect(result.code).toBe(1);
    expect(result.stderr).toContain('outbox: SIGINT: stopping before the next batch');
    const stopped =
      /stopped after (\d+) messages of 2000 \(those stay replayed\); go on with --after-id (\d+)/.exec(
        result.stderr,
      );
    expect(stopped).not.toBeNull();
    const replayed = Number(stopped![1]);
    expect(replayed).toBeGreaterThan(0);
    expect(replayed).toBeLessThan(2000);
    expect(await stateCounts(database.pool, 'outbox')).toEqual({
      dead: 2000 - replayed,
      pending: replayed,
    });
    const [audit] = await auditRows(database.pool, 'outbox');
    expect(audit).toMatchObject({
      outcome: 'stopped',
      replayed: String(replayed),
      matched: '2000',
    });
    const { rows } = await database.pool.query(
      "SELECT max(id)::text AS last FROM outbox.messages WHERE state = 'pending'",
    );
    expect(rows[0].last).toBe(stopped![2]);
  });
});
