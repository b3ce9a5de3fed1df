/**
 * Every command run in-process through `runCli` against real PostgreSQL: results, exit codes,
 * and that rejected input writes nothing. The real process is exercised in cli-process.test.ts.
 */
import { Webhook } from 'standardwebhooks';
import { beforeEach, describe, expect, it } from 'vitest';
import { migrations } from '../../src/store/migrations.generated.js';
import { useTestDatabase } from '../support/database.js';
import { waitFor } from '../support/wait-for.js';
import { startWebhookReceiver } from '../support/webhook-receiver.js';
import { insertMessageIn } from './message-rows.js';
import {
  countRows,
  messageState,
  newWebhookSecret,
  runOutboxInProcess,
  startOutboxInProcess,
  UNREACHABLE_DATABASE_URL,
  webhookDrainEnv,
} from './outbox-cli.js';

const database = useTestDatabase();
const DAY = 86_400_000;

function env(extra: Record<string, string> = {}): Record<string, string> {
  return { DATABASE_URL: database.url, ...extra };
}

beforeEach(async () => {
  await database.pool.query('TRUNCATE outbox.messages, outbox.delivered_groups');
});

/** One valid invocation of every command that needs the database. */
const DATABASE_COMMANDS: string[][] = [
  ['migrate'],
  ['drain', '--once'],
  ['stats'],
  ['list', '--state', 'dead'],
  ['retry', '1'],
  ['discard', '1'],
  ['replay', '--state', 'dead'],
  ['destinations'],
  ['pause', 'https://hooks.example.com'],
  ['resume', 'https://hooks.example.com'],
  ['purge', '--older-than', '7d'],
  ['enqueue', '--kind', 'webhook', '--payload', '{"url":"https://example.com/","body":{}}'],
];

describe('the environment', () => {
  it.each(DATABASE_COMMANDS)(
    '%s without DATABASE_URL exits 3 and says what to set',
    async (...argv) => {
      const result = await runOutboxInProcess(argv, {});
      expect(result).toEqual({
        code: 3,
        stdout: '',
        stderr:
          'outbox: DATABASE_URL is not set: export the postgres:// URL of the database that holds the outbox\n',
      });
    },
  );

  it('an unreachable database exits 4, naming host, port and database but never the password', async () => {
    for (const argv of DATABASE_COMMANDS) {
      const result = await runOutboxInProcess(argv, { DATABASE_URL: UNREACHABLE_DATABASE_URL });
      expect(result).toEqual({
        code: 4,
        stdout: '',
        stderr:
          'outbox: cannot connect to the database at 127.0.0.1:1/nope: connection refused (ECONNREFUSED)\n',
      });
    }
  });

  it('a malformed DATABASE_URL or OUTBOX_SCHEMA is a configuration error', async () => {
    expect(await runOutboxInProcess(['stats'], { DATABASE_URL: 'localhost:5432' })).toMatchObject({
      code: 3,
      stderr:
        'outbox: DATABASE_URL must start with postgres:// or postgresql://, not localhost://\n',
    });
    expect(await runOutboxInProcess(['stats'], env({ OUTBOX_SCHEMA: 'Bad-Name' }))).toMatchObject({
      code: 3,
      stderr: expect.stringMatching(/^outbox: schema "Bad-Name" is not allowed/),
    });
  });

  it('prints a stack trace only with OUTBOX_DEBUG=1', async () => {
    const quiet = await runOutboxInProcess(['stats'], { DATABASE_URL: UNREACHABLE_DATABASE_URL });
    expect(quiet.stderr.split('\n')).toHaveLength(2);
    const loud = await runOutboxInProcess(['stats'], {
      DATABASE_URL: UNREACHABLE_DATABASE_URL,
      OUTBOX_DEBUG: '1',
    });
    expect(loud.code).toBe(4);
    expect(loud.stderr).toMatch(/^outbox: cannot connect[^\n]*\nCliError: [^\n]*\n\s+at /);
  });
});

describe('help', () => {
  it('with no command prints the overview on stderr and exits 2; help <command> exits 0', async () => {
    const bare = await runOutboxInProcess([], {});
    expect(bare.code).toBe(2);
    expect(bare.stdout).toBe('');
    expect(bare.stderr).toMatch(/^outbox: operate a transactional outbox/);
    const drain = await runOutboxInProcess(['help', 'drain'], {});
    expect(drain).toMatchObject({ code: 0, stderr: '' });
    expect(drain.stdout).toMatch(/^Usage: outbox drain \[--once\]/);
  });
});

describe('migrate', () => {
  it('commands on an unmigrated schema exit 3 pointing at migrate; migrate fixes it, once', async () => {
    const fresh = env({ OUTBOX_SCHEMA: 'cli_fresh' });
    expect(await runOutboxInProcess(['stats'], fresh)).toMatchObject({
      code: 3,
      stdout: '',
      stderr: expect.stringMatching(
        /^outbox: the outbox schema is not migrated in this database \(relation "cli_fresh\.messages" does not exist\): run `outbox migrate` first\n$/,
      ),
    });
    const first = await runOutboxInProcess(['migrate', '--json'], fresh);
    expect(first.code).toBe(0);
    const result = JSON.parse(first.stdout);
    expect(result).toMatchObject({
      schema: 'cli_fresh',
      applied: migrations.map((m) => m.version),
    });
    expect(await runOutboxInProcess(['migrate'], fresh)).toEqual({
      code: 0,
      stdout: `schema cli_fresh is up to date (version ${result.version})\n`,
      stderr: '',
    });
    expect((await runOutboxInProcess(['stats'], fresh)).code).toBe(0);
  });
});

describe('enqueue', () => {
  it('writes the message with every option and prints its key alone', async () => {
    const result = await runOutboxInProcess(
      [
        'enqueue',
        '--kind',
        'webhook',
        '--payload',
        '{"url":"https://example.com/hook","body":{"n":1}}',
        '--ordering-key',
        'order-7',
        '--dedupe-key',
        'order-7-created',
        '--delay',
        '30s',
        '--max-attempts',
        '3',
      ],
      env(),
    );
    expect(result.code).toBe(0);
    expect(result.stderr).toBe('');
    const key = result.stdout.trim();
    expect(result.stdout).toBe(`${key}\n`);
    const { rows } = await database.pool.query(
      `SELECT kind, payload, ordering_key, dedupe_key, max_attempts, state,
         extract(epoch FROM due_at - created_at) AS delay_s
       FROM outbox.messages WHERE key = $1`,
      [key],
    );
    expect(rows).toEqual([
      {
        kind: 'webhook',
        payload: { url: 'https://example.com/hook', body: { n: 1 } },
        ordering_key: 'order-7',
        dedupe_key: 'order-7-created',
        max_attempts: 3,
        state: 'pending',
        delay_s: expect.anything(),
      },
    ]);
    expect(Number(rows[0].delay_s)).toBeCloseTo(30, 0);
  });

  it('prints the first message key again for a dedupe key already taken, writing one row', async () => {
    const argv = [
      'enqueue',
      '--kind',
      'email',
      '--payload',
      '{"to":["ada@example.com"],"from":"ops@example.com","subject":"Hi","text":"Hello"}',
      '--dedupe-key',
      'welcome-ada',
      '--json',
    ];
    const first = await runOutboxInProcess(argv, env());
    const second = await runOutboxInProcess(argv, env());
    expect(first.code).toBe(0);
    expect(JSON.parse(second.stdout)).toEqual(JSON.parse(first.stdout));
    expect(await countRows(database.pool)).toBe(1);
  });

  const webhook = (payload: object) => ['--kind', 'webhook', '--payload', JSON.stringify(payload)];
  const validWebhook = webhook({ url: 'https://example.com/', body: {} });

  it.each<[string, string[], RegExp]>([
    [
      'a webhook payload without url',
      webhook({ body: {} }),
      /^--payload: payload\.url: is required$/,
    ],
    [
      'a signing secret inside a webhook payload',
      webhook({ url: 'https://example.com/', body: {}, secret: 'whsec_x' }),
      /^--payload: payload\.secret: a signing secret must never be stored in a payload/,
    ],
    [
      'an email payload without recipients',
      ['--kind', 'email', '--payload', '{"subject":"Hi","text":"x"}'],
      /^--payload: payload/,
    ],
    [
      'a payload that is not an object',
      ['--kind', 'webhook', '--payload', '[1,2]'],
      /^--payload: /,
    ],
    ['an unknown kind', ['--kind', 'sms', '--payload', '{}'], /^--kind: unknown kind "sms"/],
    [
      'too many attempts',
      [...validWebhook, '--max-attempts', '5000'],
      /^--max-attempts: expected an integer from 1 to 1000$/,
    ],
    ['a key that is not a UUID', [...validWebhook, '--key', 'order-7'], /^--key: expected a UUID$/],
    [
      'an ordering key over 200 characters',
      [...validWebhook, '--ordering-key', 'k'.repeat(201)],
      /^--ordering-key: expected a string of 1 to 200 characters$/,
    ],
  ])('refuses %s with exit 2, naming the flag, writing nothing', async (_, argv, message) => {
    const before = await countRows(database.pool);
    const result = await runOutboxInProcess(['enqueue', ...argv], env());
    expect(result.code).toBe(2);
    expect(result.stdout).toBe('');
    expect(result.stderr).toMatch(/^outbox: [^\n]+\n$/);
    expect(result.stderr.slice('outbox: '.length).trimEnd()).toMatch(message);
    expect(await countRows(database.pool)).toBe(before);
  });

  it('checks the message before connecting, so bad input is exit 2 even with no database', async () => {
    const result = await runOutboxInProcess(['enqueue', ...webhook({ body: {} })], {
      DATABASE_URL: UNREACHABLE_DATABASE_URL,
    });
    expect(result).toMatchObject({
      code: 2,
      stderr: 'outbox: --payload: payload.url: is required\n',
    });
  });
});

describe('stats', () => {
  it('counts each state and reports the lag of the oldest due message', async () => {
    await insertMessageIn(database.pool, 'pending', { ageMs: 90_000 });
    await insertMessageIn(database.pool, 'pending');
    await insertMessageIn(database.pool, 'claimed');
    await insertMessageIn(database.pool, 'delivered');
    await insertMessageIn(database.pool, 'dead');
    const json = await runOutboxInProcess(['stats', '--json'], env());
    expect(json.code).toBe(0);
    const stats = JSON.parse(json.stdout);
    expect(stats).toMatchObject({ pending: 2, due: 2, claimed: 1, delivered: 1, dead: 1 });
    expect(stats.lagMs).toBeGreaterThanOrEqual(90_000);

    const text = await runOutboxInProcess(['stats'], env());
    expect(text.stdout).toMatch(/^pending\s+2\s+2 due now$/m);
    expect(text.stdout).toMatch(/^claimed\s+1$/m);
    expect(text.stdout).toMatch(/^dead\s+1\s+see: outbox list --state dead$/m);
    expect(text.stdout).toMatch(/^lag 1m 3\d?s \(oldest due \d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ\)$/m);
  });
});

describe('list', () => {
  it('pages through a state with the cursor it prints, each message once', async () => {
    const ids: string[] = [];
    for (let index = 0; index < 7; index++)
      ids.push(await insertMessageIn(database.pool, 'pending'));
    await insertMessageIn(database.pool, 'dead');
    const seen: string[] = [];
    let cursorArgs: string[] = [];
    for (let page = 0; page < 5; page++) {
      const result = await runOutboxInProcess(
        ['list', '--state', 'pending', '--limit', '3', ...cursorArgs],
        env(),
      );
      expect(result.code).toBe(0);
      const lines = result.stdout.trimEnd().split('\n');
      expect(lines[0]).toMatch(/^ID\s+KIND\s+KEY\s+ATTEMPTS\s+DUE\s+ORDERING KEY\s+LAST ERROR$/);
      const next = lines
        .at(-1)!
        .match(/^next page: outbox list --state pending --limit 3 --cursor (\S+)$/);
      const rows = lines.slice(1, next ? -1 : undefined);
      seen.push(...rows.map((row) => row.split(/\s+/)[0]!));
      if (!next) break;
      cursorArgs = ['--cursor', next[1]!];
    }
    expect(seen).toEqual(ids);
  });

  it('prints one JSON object with the page, and says when a state is empty', async () => {
    const id = await insertMessageIn(database.pool, 'dead', { kind: 'email' });
    const json = await runOutboxInProcess(['list', '--state', 'dead', '--json'], env());
    const page = JSON.parse(json.stdout);
    expect(page).toMatchObject({
      messages: [{ id, kind: 'email', state: 'dead', lastError: 'permanent failure: test' }],
      nextCursor: null,
    });
    expect(
      await runOutboxInProcess(['list', '--state', 'dead', '--kind', 'webhook'], env()),
    ).toEqual({ code: 0, stdout: 'no dead messages of kind webhook\n', stderr: '' });
  });

  it('prints control characters from the database escaped, in text and in JSON, never raw', async () => {
    // An ordering key that clears the screen and retitles the window, an error a receiver wrote
    // with the C1 CSI, DEL, BEL and a CR that would overprint the line. (Kinds cannot hold
    // control characters: the table's CHECK refuses them.)
    const orderingKey = 'tenant\u001b[2J\u001b]0;pwned\u0007';
    const lastError = 'HTTP 500: \u009b31mred\u009b0m\u007f\rfake line';
    const id = await insertMessageIn(database.pool, 'dead');
    await database.pool.query(
      'UPDATE outbox.messages SET ordering_key = $2, last_error = $3 WHERE id = $1',
      [id, orderingKey, lastError],
    );
    // biome-ignore lint/suspicious/noControlCharactersInRegex: what must never be printed
    const raw = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f]/;

    const text = await runOutboxInProcess(['list', '--state', 'dead'], env());
    expect(text.code).toBe(0);
    expect(text.stdout).not.toMatch(raw);
    expect(text.stdout).toContain('tenant\\u001b[2J\\u001b]0;pwned\\u0007');
    // A table cell's whitespace (the CR too) reads as one space.
    expect(text.stdout).toContain('HTTP 500: \\u009b31mred\\u009b0m\\u007f fake line');
    // Columns line up as printed: the header's LAST ERROR starts where the row's error does.
    const [header, row] = text.stdout.split('\n');
    expect(row!.indexOf('HTTP 500')).toBe(header!.indexOf('LAST ERROR'));

    const json = await runOutboxInProcess(['list', '--state', 'dead', '--json'], env());
    expect(json.stdout).not.toMatch(raw);
    expect(JSON.parse(json.stdout).messages[0]).toMatchObject({ orderingKey, lastError });
  });

  it('refuses a cursor it did not print, naming --cursor', async () => {
    expect(
      await runOutboxInProcess(['list', '--state', 'dead', '--cursor', 'nonsense'], env()),
    ).toEqual({
      code: 2,
      stdout: '',
      stderr: 'outbox: --cursor: is not a cursor this API returned\n',
    });
  });
});

describe('retry', () => {
  it('makes a dead message pending again, and refuses one that is not dead or does not exist', async () => {
    const id = await insertMessageIn(database.pool, 'dead');
    expect(await runOutboxInProcess(['retry', id], env())).toEqual({
      code: 0,
      stdout: `message ${id} is pending again, due now\n`,
      stderr: '',
    });
    expect(await messageState(database.pool, id)).toBe('pending');
    expect(await runOutboxInProcess(['retry', id], env())).toEqual({
      code: 1,
      stdout: '',
      stderr: `outbox: retry: message ${id} is pending, not dead; only dead messages can be retried\n`,
    });
    expect(await runOutboxInProcess(['retry', '999999'], env())).toMatchObject({
      code: 1,
      stderr: 'outbox: retry: no message with id 999999\n',
    });
  });

  it('--all-dead retries every dead message, or those of one kind', async () => {
    const email = await insertMessageIn(database.pool, 'dead', { kind: 'email' });
    const webhooks = [
      await insertMessageIn(database.pool, 'dead'),
      await insertMessageIn(database.pool, 'dead'),
    ];
    expect(await runOutboxInProcess(['retry', '--all-dead', '--kind', 'webhook'], env())).toEqual({
      code: 0,
      stdout: '2 dead messages of kind webhook pending again, due now\n',
      stderr: '',
    });
    expect(await messageState(database.pool, email)).toBe('dead');
    for (const id of webhooks) expect(await messageState(database.pool, id)).toBe('pending');
    const all = await runOutboxInProcess(['retry', '--all-dead', '--json'], env());
    expect(JSON.parse(all.stdout)).toEqual({ retried: 1 });
  });
});

describe('discard', () => {
  it('deletes a message that is not claimed, and refuses a claimed or missing one', async () => {
    const claimed = await insertMessageIn(database.pool, 'claimed');
    const dead = await insertMessageIn(database.pool, 'dead');
    expect(await runOutboxInProcess(['discard', claimed], env())).toEqual({
      code: 1,
      stdout: '',
      stderr: `outbox: discard: message ${claimed} is claimed: a drain may be sending it right now; try again once it settles\n`,
    });
    expect(await messageState(database.pool, claimed)).toBe('claimed');
    expect(await runOutboxInProcess(['discard', dead, '--json'], env())).toEqual({
      code: 0,
      stdout: `${JSON.stringify({ id: dead, discarded: true, previousState: 'dead' })}\n`,
      stderr: '',
    });
    expect(await messageState(database.pool, dead)).toBeUndefined();
    expect(await runOutboxInProcess(['discard', dead], env())).toMatchObject({
      code: 1,
      stderr: `outbox: discard: no message with id ${dead}\n`,
    });
  });
});

describe('purge', () => {
  it('deletes delivered and dead messages past the age, never pending or claimed ones', async () => {
    const old = { ageMs: 10 * DAY };
    const keep = [
      await insertMessageIn(database.pool, 'pending', old),
      await insertMessageIn(database.pool, 'claimed'),
      await insertMessageIn(database.pool, 'delivered', { ageMs: DAY }),
      await insertMessageIn(database.pool, 'dead', { ageMs: DAY }),
    ];
    for (let index = 0; index < 3; index++) await insertMessageIn(database.pool, 'delivered', old);
    for (let index = 0; index < 2; index++) await insertMessageIn(database.pool, 'dead', old);
    expect(await runOutboxInProcess(['purge', '--older-than', '7d'], env())).toEqual({
      code: 0,
      stdout: 'purged 3 delivered and 2 dead messages\n',
      stderr: '',
    });
    const { rows } = await database.pool.query('SELECT id FROM outbox.messages ORDER BY id');
    expect(rows.map((row) => String(row.id))).toEqual(keep);
  });

  it('keeps a state given no age, and stops at --limit', async () => {
    const old = { ageMs: 10 * DAY };
    for (let index = 0; index < 3; index++) await insertMessageIn(database.pool, 'delivered', old);
    await insertMessageIn(database.pool, 'dead', old);
    const limited = await runOutboxInProcess(
      ['purge', '--delivered-older-than', '7d', '--limit', '2', '--json'],
      env(),
    );
    expect(JSON.parse(limited.stdout)).toMatchObject({
      deliveredDeleted: 2,
      deadDeleted: 0,
      limitReached: true,
    });
    const text = await runOutboxInProcess(['purge', '--delivered-older-than', '7d'], env());
    expect(text.stdout).toBe('purged 1 delivered and 0 dead message\n');
    expect(await countRows(database.pool)).toBe(1);
  });
});

describe('drain', () => {
  it('--once --json delivers signed webhooks and prints only the report', async () => {
    const receiver = await startWebhookReceiver();
    const secret = newWebhookSecret();
    try {
      const keys: string[] = [];
      for (const n of [1, 2]) {
        const payload = JSON.stringify({ url: `${receiver.url}/hook`, body: { n } });
        const enqueued = await runOutboxInProcess(
          ['enqueue', '--kind', 'webhook', '--payload', payload],
          env(),
        );
        keys.push(enqueued.stdout.trim());
      }
      const result = await runOutboxInProcess(
        ['drain', '--once', '--json'],
        env(webhookDrainEnv(receiver.port, secret)),
      );
      expect(result.code).toBe(0);
      expect(result.stdout.endsWith('\n')).toBe(true);
      expect(result.stdout.trimEnd().split('\n')).toHaveLength(1);
      expect(JSON.parse(result.stdout)).toMatchObject({
        claimed: 2,
        delivered: 2,
        retried: 0,
        dead: 0,
        stopReason: 'empty',
      });
      // Email has no SES credentials here: said on stderr, not stdout.
      expect(result.stderr).toMatch(/^outbox: not draining email: /m);
      const verifier = new Webhook(secret.slice('whsec_'.length));
      expect(receiver.received.map((request) => request.headers['webhook-id']).sort()).toEqual(
        [...keys].sort(),
      );
      for (const request of receiver.received) {
        expect(() => verifier.verify(request.body, request.headers)).not.toThrow();
      }
    } finally {
      await receiver.close();
    }
  });

  it('refuses a malformed OUTBOX_WEBHOOK_SECRET before claiming anything', async () => {
    const id = await insertMessageIn(database.pool, 'pending');
    const result = await runOutboxInProcess(
      ['drain', '--once'],
      env({ OUTBOX_WEBHOOK_SECRET: 'not-a-secret' }),
    );
    expect(result).toMatchObject({
      code: 3,
      stdout: '',
      stderr: expect.stringContaining(
        'outbox: OUTBOX_WEBHOOK_SECRET: a webhook secret must start with whsec_',
      ),
    });
    expect(await messageState(database.pool, id)).toBe('pending');
  });

  it('keeps running when the server drops its connections, and delivers after', async () => {
    const receiver = await startWebhookReceiver();
    const stop = new AbortController();
    try {
      const run = startOutboxInProcess(
        ['drain', '--interval', '100ms'],
        env(webhookDrainEnv(receiver.port, newWebhookSecret())),
        stop.signal,
      );
      await waitFor('the first tick', () => run.stdout().includes(' tick 1: '));
      const { rows } = await database.pool.query(
        `SELECT pg_terminate_backend(pid) AS terminated FROM pg_stat_activity
         WHERE application_name = 'outbox-cli' AND datname = current_database()`,
      );
      expect(rows.length).toBeGreaterThan(0);
      const payload = JSON.stringify({ url: receiver.url, body: {} });
      await runOutboxInProcess(['enqueue', '--kind', 'webhook', '--payload', payload], env());
      await waitFor('a tick that delivered', () => /: delivered 1,/.test(run.stdout()));
      stop.abort();
      const result = await run.done;
      expect(result.code).toBe(0);
      expect(result.stdout).toMatch(/stopped after \d+ ticks[^:]*: delivered 1,/);
      // Usually the pool's idle connection is the one dropped; a query in flight fails its tick.
      expect(result.stderr).toMatch(
        /^outbox: (database connection dropped|tick \d+ failed: lost the database connection): terminating connection due to administrator command/m,
      );
      expect(receiver.received).toHaveLength(1);
    } finally {
      stop.abort();
      await receiver.close();
    }
  });

  it('keeps draining each interval, and stops on its signal with a summary', async () => {
    const receiver = await startWebhookReceiver();
    const stop = new AbortController();
    try {
      const run = startOutboxInProcess(
        ['drain', '--interval', '100ms', '--json'],
        env(webhookDrainEnv(receiver.port, newWebhookSecret())),
        stop.signal,
      );
      // Enqueued after the drain started: a later tick picks it up.
      await waitFor('the first tick', () => run.stdout().includes('"type":"tick"'));
      const payload = JSON.stringify({ url: receiver.url, body: {} });
      await runOutboxInProcess(['enqueue', '--kind', 'webhook', '--payload', payload], env());
      await waitFor('a tick that delivered', () => run.stdout().includes('"delivered":1'));
      stop.abort();
      const result = await run.done;
      expect(result.code).toBe(0);
      const lines = result.stdout
        .trimEnd()
        .split('\n')
        .map((line) => JSON.parse(line));
      expect(lines.at(-1)).toMatchObject({
        type: 'summary',
        delivered: 1,
        dead: 0,
        failedTicks: 0,
      });
      expect(lines.slice(0, -1).every((line) => line.type === 'tick')).toBe(true);
      expect(receiver.received).toHaveLength(1);
    } finally {
      await receiver.close();
    }
  });
});
