/**
 * `outbox destinations`, `pause` and `resume` in-process against real PostgreSQL: destination
 * health made by a real drain whose sender fails, and by the commands themselves; what they
 * print, their exit codes, and that refused input writes nothing.
 */
import { beforeEach, describe, expect, it } from 'vitest';
import { pgExecutor } from '../../src/drivers/node-pg.js';
import { useTestDatabase } from '../support/database.js';
import { enqueueTo, failDeliveries } from '../support/destination-fixtures.js';
import { runOutboxInProcess } from './outbox-cli.js';

const database = useTestDatabase();
const DOWN = 'https://down.example';
const UP = 'https://up.example';
const MINUTE = 60_000;

function env(): Record<string, string> {
  return { DATABASE_URL: database.url };
}

beforeEach(async () => {
  await database.pool.query(
    'TRUNCATE outbox.messages, outbox.delivered_groups, outbox.destinations',
  );
});

async function destinationRows() {
  const { rows } = await database.pool.query(
    'SELECT destination, paused_by, paused_until, failures FROM outbox.destinations ORDER BY destination',
  );
  return rows;
}

/** The messages waiting for `destination`, by when they are due. */
async function dueTimes(destination: string): Promise<Date[]> {
  const { rows } = await database.pool.query<{ due_at: Date }>(
    "SELECT due_at FROM outbox.messages WHERE destination = $1 AND state = 'pending' ORDER BY id",
    [destination],
  );
  return rows.map((row) => row.due_at);
}

describe('outbox destinations', () => {
  it('shows each destination’s state, failures, pause, waiting and last error, paused first', async () => {
    const db = pgExecutor(database.pool);
    await failDeliveries(db, DOWN, 5, { error: `HTTP 503 ${'x'.repeat(200)}` });
    await failDeliveries(db, UP, 2, { error: 'HTTP 502 once' });
    const result = await runOutboxInProcess(['destinations'], env());
    expect(result).toMatchObject({ code: 0, stderr: '' });
    const [header, down, up, ...rest] = result.stdout.trimEnd().split('\n');
    expect(header).toMatch(
      /^DESTINATION\s+STATE\s+FAILURES\s+PAUSED BY\s+PAUSED UNTIL\s+WAITING\s+LAST ERROR$/,
    );
    expect(down).toMatch(
      /^https:\/\/down\.example\s+open\s+5\s+breaker\s+\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ\s+5\s+RetryableDeliveryError: HTTP 503 x+…$/,
    );
    // The last error is cut to a cell's width.
    expect(down!.length).toBeLessThan(200);
    expect(up).toMatch(
      /^https:\/\/up\.example\s+closed\s+2\s+-\s+-\s+2\s+RetryableDeliveryError: HTTP 502 once$/,
    );
    expect(rest).toEqual([]);
  });

  it('--json prints the records; --limit pages them with the --after the last line names', async () => {
    const db = pgExecutor(database.pool);
    await failDeliveries(db, DOWN, 5);
    await failDeliveries(db, UP, 1);
    await failDeliveries(db, 'https://also-up.example', 1);
    const json = await runOutboxInProcess(['destinations', '--json'], env());
    expect(json.code).toBe(0);
    const { destinations, nextAfter } = JSON.parse(json.stdout);
    expect(nextAfter).toBeNull();
    expect(
      destinations.map((d: { destination: string; state: string }) => [d.destination, d.state]),
    ).toEqual([
      [DOWN, 'open'],
      ['https://also-up.example', 'closed'],
      [UP, 'closed'],
    ]);
    expect(destinations[0]).toMatchObject({ failures: 5, pausedBy: 'breaker', waiting: 5 });

    const first = await runOutboxInProcess(['destinations', '--limit', '1'], env());
    expect(first.stdout.trimEnd().split('\n').at(-1)).toBe(
      `next page: outbox destinations --limit 1 --after ${DOWN}`,
    );
    const second = await runOutboxInProcess(
      ['destinations', '--limit', '2', '--after', DOWN],
      env(),
    );
    expect(second.stdout).toMatch(/also-up\.example[^\n]*\n[^\n]*up\.example/);
    expect(second.stdout).toContain(`next page: outbox destinations --limit 2 --after ${UP}`);
    const last = await runOutboxInProcess(['destinations', '--after', UP], env());
    expect(last).toMatchObject({ code: 0, stdout: 'no more destinations after that one\n' });
  });

  it('says so when no destination has a record, and prints a hostile name as text', async () => {
    expect(await runOutboxInProcess(['destinations'], env())).toEqual({
      code: 0,
      stdout: 'no destination has failed or been paused: every one is sent to as usual\n',
      stderr: '',
    });
    await failDeliveries(pgExecutor(database.pool), 'evil\u001b]0;owned\u0007', 1);
    const result = await runOutboxInProcess(['destinations'], env());
    expect(result.stdout).toContain('evil\\u001b]0;owned\\u0007');
    expect(result.stdout).not.toContain('\u001b');
  });
});

describe('outbox pause and resume', () => {
  it('pauses until resumed: its messages wait; resume makes them due now', async () => {
    const db = pgExecutor(database.pool);
    await enqueueTo(db, UP, 3);
    const paused = await runOutboxInProcess(['pause', UP], env());
    expect(paused).toEqual({
      code: 0,
      stdout: `paused ${UP} until resumed: 3 pending messages held\n`,
      stderr: '',
    });
    expect(await destinationRows()).toMatchObject([
      { destination: UP, paused_by: 'operator', paused_until: new Date('9999-12-31T00:00:00Z') },
    ]);
    expect((await dueTimes(UP)).map((at) => at.getUTCFullYear())).toEqual([9999, 9999, 9999]);
    const listed = await runOutboxInProcess(['destinations'], env());
    expect(listed.stdout).toMatch(
      /https:\/\/up\.example\s+open\s+0\s+operator\s+until resumed\s+3\s+-/,
    );

    const before = Date.now();
    const resumed = await runOutboxInProcess(['resume', UP], env());
    expect(resumed).toEqual({
      code: 0,
      stdout: `resumed ${UP}: closed, 3 messages due now\n`,
      stderr: '',
    });
    expect(await destinationRows()).toMatchObject([
      { destination: UP, paused_by: null, paused_until: null },
    ]);
    for (const at of await dueTimes(UP)) expect(at.getTime()).toBeLessThanOrEqual(Date.now());
    for (const at of await dueTimes(UP)) expect(at.getTime()).toBeGreaterThanOrEqual(before - 1000);
  });

  it('--for pauses for that long, and --json prints the record', async () => {
    const db = pgExecutor(database.pool);
    await enqueueTo(db, DOWN, 1);
    const before = Date.now();
    const result = await runOutboxInProcess(['pause', DOWN, '--for', '10m', '--json'], env());
    const after = Date.now();
    expect(result).toMatchObject({ code: 0, stderr: '' });
    const record = JSON.parse(result.stdout);
    expect(record).toMatchObject({
      destination: DOWN,
      state: 'open',
      pausedBy: 'operator',
      waiting: 1,
    });
    const until = new Date(record.pausedUntil).getTime();
    expect(until).toBeGreaterThanOrEqual(before + 10 * MINUTE);
    expect(until).toBeLessThanOrEqual(after + 10 * MINUTE);
    const text = await runOutboxInProcess(['pause', DOWN, '--for', '2h'], env());
    expect(text.stdout).toMatch(
      /^paused https:\/\/down\.example until \d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ: 1 pending message held\n$/,
    );
  });

  it('pausing a name no message has warns that it may not be the one meant', async () => {
    const result = await runOutboxInProcess(['pause', 'hooks.example.com'], env());
    expect(result.code).toBe(0);
    expect(result.stdout).toBe('paused hooks.example.com until resumed: 0 pending messages held\n');
    expect(result.stderr).toMatch(
      /^outbox: no message waits for hooks\.example\.com and it never failed: .*`outbox destinations` lists the known ones/,
    );
  });

  it('resume of a destination with no record exits 1 and writes nothing', async () => {
    expect(await runOutboxInProcess(['resume', UP], env())).toEqual({
      code: 1,
      stdout: '',
      stderr: `outbox: resume: ${UP} has no record: it never failed and was never paused (\`outbox destinations\` lists those that have one)\n`,
    });
    expect(await destinationRows()).toEqual([]);
  });

  it.each([
    [['pause'], 'pause: give the destination, as `outbox destinations` shows it'],
    [['pause', UP, DOWN], 'pause: one destination at a time'],
    [['pause', ''], 'pause: "" cannot be a destination\'s name (1 to 300 characters'],
    [['pause', 'x'.repeat(301)], "cannot be a destination's name"],
    [['pause', UP, '--for', '10'], '--for: "10" is not a duration'],
    [['pause', UP, '--for', '0s'], '--for: expected from 1ms to 30d, got "0s"'],
    [['pause', UP, '--for', '31d'], '--for: expected from 1ms to 30d, got "31d"'],
    [['pause', UP, '--for'], '--for: needs a value (DURATION)'],
    [['resume'], 'resume: give the destination'],
    [['resume', 'a\u0000b'], 'resume: "a\\u0000b" cannot be a destination\'s name'],
    [['destinations', '--limit', '0'], '--limit: expected a whole number from 1 to 1000, got "0"'],
    [['destinations', '--after', ''], '--after: "" cannot be a destination\'s name'],
  ])('refuses %j with exit 2 naming what is wrong, writing nothing', async (argv, message) => {
    const db = pgExecutor(database.pool);
    await enqueueTo(db, UP, 1);
    const result = await runOutboxInProcess(argv, env());
    expect(result.code).toBe(2);
    expect(result.stderr).toContain(message);
    expect(result.stdout).toBe('');
    expect(await destinationRows()).toEqual([]);
    expect((await dueTimes(UP))[0]!.getUTCFullYear()).toBeLessThan(9999);
  });
});
