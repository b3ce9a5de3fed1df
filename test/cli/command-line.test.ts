import { describe, expect, it } from 'vitest';
import { describeFailure, ExitCode, isCliError } from '../../src/cli/cli-errors.js';
import { type CommandLine, parseCommandLine } from '../../src/cli/command-line.js';
import { COMMAND_NAMES, commandNamed } from '../../src/cli/command-registry.js';
import { MIN_TICK_BUDGET_MS } from '../../src/cli/commands/drain.js';
import { parseDuration } from '../../src/cli/flag-values.js';
import { helpText } from '../../src/cli/help.js';
import { formatDuration, formatTable } from '../../src/cli/text-format.js';
import { DEFAULT_PURGE_LIMIT } from '../../src/core/purge.js';

/** The usage error `argv` raises, as the CLI would print it. */
function usageMessage(argv: string[]): string {
  let thrown: unknown;
  try {
    parseCommandLine(argv);
  } catch (error) {
    thrown = error;
  }
  expect(isCliError(thrown) && thrown.code).toBe('CLI_USAGE');
  const failure = describeFailure(thrown);
  expect(failure.exitCode).toBe(ExitCode.usage);
  return failure.message;
}

function argsOf<Name extends CommandLine['command']>(
  argv: string[],
  command: Name,
): Extract<CommandLine, { command: Name }> {
  const line = parseCommandLine(argv);
  expect(line.command).toBe(command);
  return line as Extract<CommandLine, { command: Name }>;
}

describe('durations', () => {
  it('parse milliseconds, seconds, minutes, hours and days', () => {
    expect(parseDuration('500ms', '--x')).toBe(500);
    expect(parseDuration('30s', '--x')).toBe(30_000);
    expect(parseDuration('5m', '--x')).toBe(300_000);
    expect(parseDuration('2h', '--x')).toBe(7_200_000);
    expect(parseDuration('7d', '--x')).toBe(604_800_000);
    expect(parseDuration('0s', '--x')).toBe(0);
  });

  it.each(['30', '5x', '1.5h', '-5s', '', 's', '5 m', '99999999999999999d', '1h30m'])(
    'refuse %j, naming the flag',
    (text) => {
      expect(
        usageMessage(['enqueue', '--kind', 'email', '--payload', '{}', `--delay=${text}`]),
      ).toMatch(
        /^--delay: ".*" is not a duration; use a whole number and a unit: 500ms, 30s, 5m, 2h, 7d$/,
      );
    },
  );
});

describe('the command line', () => {
  it('shows help for no command (as a usage error), --help, help <command> and <command> --help', () => {
    expect(parseCommandLine([])).toEqual({ command: 'help', topic: undefined, requested: false });
    expect(parseCommandLine(['--help'])).toEqual({
      command: 'help',
      topic: undefined,
      requested: true,
    });
    expect(parseCommandLine(['help', 'purge'])).toEqual({
      command: 'help',
      topic: 'purge',
      requested: true,
    });
    // --help wins over problems elsewhere on the line, so help is always reachable.
    expect(parseCommandLine(['list', '--state', 'bogus', '-h'])).toEqual({
      command: 'help',
      topic: 'list',
      requested: true,
    });
  });

  it('refuses unknown commands and options, missing values, values to switches and repeats', () => {
    expect(usageMessage(['send'])).toBe(
      'unknown command "send"; commands: migrate, drain, stats, list, show, retry, discard, replay, destinations, pause, resume, purge, enqueue',
    );
    expect(usageMessage(['--json'])).toMatch(/^unknown option --json before the command/);
    expect(usageMessage(['help', 'send'])).toMatch(/^help: unknown command "send"/);
    expect(usageMessage(['stats', '--verbose'])).toBe(
      'stats: unknown option --verbose (see outbox stats --help)',
    );
    expect(usageMessage(['list', '--state'])).toBe('--state: needs a value (STATE)');
    expect(usageMessage(['list', '--state', '--json'])).toMatch(
      /^--state: needs a value \(STATE\)/,
    );
    expect(usageMessage(['stats', '--json=yes'])).toBe('--json: takes no value');
    expect(usageMessage(['list', '--state', 'dead', '--state', 'pending'])).toBe(
      '--state: given more than once',
    );
    expect(usageMessage(['stats', 'now'])).toBe('stats: unexpected argument "now"');
  });

  it('accepts --flag=value; a value that starts with a dash goes that way', () => {
    expect(argsOf(['list', '--state=dead', '--kind=webhook'], 'list').args).toMatchObject({
      state: 'dead',
      kind: 'webhook',
    });
    expect(argsOf(['enqueue', '--kind', 'email', '--payload=-1'], 'enqueue').args.message).toEqual({
      kind: 'email',
      payload: -1,
    });
    // Strict parseArgs takes "-1" after a flag for a forgotten value, and says how to pass it.
    expect(usageMessage(['enqueue', '--kind', 'email', '--payload', '-1'])).toBe(
      '--payload: needs a value (JSON); a value starting with "-" goes as --payload=VALUE',
    );
  });

  it('takes --config before or after the command, once', () => {
    expect(argsOf(['--config', 'a.mjs', 'stats'], 'stats').configPath).toBe('a.mjs');
    expect(argsOf(['--config=b.ts', 'stats', '--json'], 'stats')).toEqual({
      command: 'stats',
      args: { json: true },
      configPath: 'b.ts',
    });
    expect(argsOf(['stats', '--config', 'c.js'], 'stats').configPath).toBe('c.js');
    expect(argsOf(['stats'], 'stats').configPath).toBeUndefined();
    expect(usageMessage(['--config', 'a.mjs', 'stats', '--config', 'b.mjs'])).toBe(
      '--config: given more than once',
    );
    expect(usageMessage(['stats', '--config'])).toBe('--config: needs a value (PATH)');
    expect(usageMessage(['--config', 'a.mjs', '--json', 'stats'])).toMatch(
      /^unknown option --json before the command; commands: migrate, /,
    );
    expect(parseCommandLine(['--config', 'a.mjs', '--help'])).toEqual({
      command: 'help',
      topic: undefined,
      requested: true,
    });
  });
});

describe('drain arguments', () => {
  it('default to a continuous drain; --once and the numbers as given', () => {
    // Unset flags stay undefined: the config file's drain settings, then the defaults, fill them.
    expect(argsOf(['drain'], 'drain').args).toEqual({
      once: false,
      intervalMs: undefined,
      budgetMs: undefined,
      batchSize: undefined,
      concurrency: undefined,
      json: false,
    });
    expect(argsOf(['drain', '--once', '--json'], 'drain').args).toMatchObject({
      once: true,
      budgetMs: undefined,
      json: true,
    });
    expect(
      argsOf(
        [
          'drain',
          '--interval',
          '750ms',
          '--budget-ms',
          '25000',
          '--batch-size',
          '5',
          '--concurrency',
          '2',
        ],
        'drain',
      ).args,
    ).toMatchObject({ intervalMs: 750, budgetMs: 25_000, batchSize: 5, concurrency: 2 });
  });

  it('refuse a budget too small for one send, explaining why', () => {
    expect(usageMessage(['drain', '--once', '--budget-ms', '500'])).toBe(
      `--budget-ms: expected a whole number at least ${MIN_TICK_BUDGET_MS}, got "500" (each send gets at most half the budget)`,
    );
    expect(usageMessage(['drain', '--budget-ms', '30s'])).toMatch(
      /^--budget-ms: expected a whole number/,
    );
  });

  it('refuse out-of-range numbers, a zero interval, and --interval with --once', () => {
    expect(usageMessage(['drain', '--batch-size', '0'])).toBe(
      '--batch-size: expected a whole number from 1 to 1000, got "0"',
    );
    expect(usageMessage(['drain', '--concurrency', '1001'])).toBe(
      '--concurrency: expected a whole number from 1 to 1000, got "1001"',
    );
    expect(usageMessage(['drain', '--concurrency', 'ten'])).toMatch(/^--concurrency: expected/);
    expect(usageMessage(['drain', '--interval', '0s'])).toMatch(/^--interval: must be from 100ms/);
    expect(usageMessage(['drain', '--interval', '5'])).toMatch(
      /^--interval: "5" is not a duration/,
    );
    expect(usageMessage(['drain', '--once', '--interval', '5s'])).toBe(
      '--interval: has no effect with --once; give one or the other',
    );
  });
});

describe('list, show, retry and discard arguments', () => {
  it('list needs a known state and a limit in range', () => {
    expect(
      argsOf(['list', '--state', 'dead', '--limit', '10', '--cursor', 'abc'], 'list').args,
    ).toEqual({ state: 'dead', kind: undefined, limit: 10, cursor: 'abc', json: false });
    expect(usageMessage(['list'])).toBe(
      '--state: required, one of pending, claimed, delivered, dead',
    );
    expect(usageMessage(['list', '--state', 'sent'])).toBe(
      '--state: unknown state "sent"; expected one of pending, claimed, delivered, dead',
    );
    expect(usageMessage(['list', '--state', 'dead', '--limit', '501'])).toBe(
      '--limit: expected a whole number from 1 to 500, got "501"',
    );
  });

  it('retry takes one id or --all-dead (optionally of one kind), never both', () => {
    expect(argsOf(['retry', '42'], 'retry').args).toEqual({ target: 'one', id: '42', json: false });
    expect(argsOf(['retry', '--all-dead', '--kind', 'email'], 'retry').args).toEqual({
      target: 'all-dead',
      kind: 'email',
      json: false,
    });
    expect(usageMessage(['retry'])).toBe(
      'retry: give the message id (or --all-dead), as `outbox list` shows it',
    );
    expect(usageMessage(['retry', '42', '--all-dead'])).toBe(
      'retry: give a message id or --all-dead, not both',
    );
    expect(usageMessage(['retry', '42', '--kind', 'email'])).toBe('--kind: only with --all-dead');
    expect(usageMessage(['retry', '0'])).toMatch(/^retry: "0" is not a message id/);
    expect(usageMessage(['discard', 'e17feca1-5856-4538-806a-b38e465839a6'])).toMatch(
      /^discard: "e17feca1-.*" is not a message id \(a positive integer/,
    );
    expect(usageMessage(['discard', '1', '2'])).toBe('discard: one message id at a time');
    // Past bigint's range: refused here, not by the database.
    expect(usageMessage(['discard', '9223372036854775808'])).toMatch(
      /^discard: "9223372036854775808" is not a message id/,
    );
    expect(argsOf(['discard', '9223372036854775807'], 'discard').args.id).toBe(
      '9223372036854775807',
    );
  });

  it('show takes one message id or key', () => {
    expect(argsOf(['show', '42'], 'show').args).toEqual({ target: { id: '42' }, json: false });
    const key = 'E17FECA1-5856-4538-806A-B38E465839A6';
    expect(argsOf(['show', key, '--json'], 'show').args).toEqual({ target: { key }, json: true });
    expect(usageMessage(['show'])).toBe(
      'show: give a message id (as `outbox list` shows it) or key (a UUID)',
    );
    expect(usageMessage(['show', '1', '2'])).toBe('show: one message at a time');
    expect(usageMessage(['show', '9223372036854775808'])).toMatch(
      /^show: "9223372036854775808" is neither a message id \(a positive integer\) nor a message key/,
    );
  });
});

describe('purge arguments', () => {
  it('--older-than covers both finished states; the specific flags override it', () => {
    expect(argsOf(['purge', '--older-than', '7d'], 'purge').args).toEqual({
      deliveredOlderThanMs: 7 * 86_400_000,
      deadOlderThanMs: 7 * 86_400_000,
      limit: DEFAULT_PURGE_LIMIT,
      json: false,
    });
    expect(
      argsOf(['purge', '--older-than', '7d', '--dead-older-than', '30d', '--limit', '5'], 'purge')
        .args,
    ).toMatchObject({
      deliveredOlderThanMs: 7 * 86_400_000,
      deadOlderThanMs: 30 * 86_400_000,
      limit: 5,
    });
    // A state given no age is kept.
    expect(argsOf(['purge', '--delivered-older-than', '1h'], 'purge').args).toMatchObject({
      deliveredOlderThanMs: 3_600_000,
      deadOlderThanMs: null,
    });
  });

  it('never guesses an age, and names a bad duration flag', () => {
    expect(usageMessage(['purge'])).toMatch(/^purge: give --older-than/);
    expect(usageMessage(['purge', '--older-than', '7 days'])).toMatch(
      /^--older-than: "7 days" is not a duration/,
    );
    expect(usageMessage(['purge', '--dead-older-than', '1w'])).toMatch(/^--dead-older-than: "1w"/);
    expect(usageMessage(['purge', '--older-than', '1d', '--limit', '0'])).toMatch(/^--limit:/);
  });
});

describe('enqueue arguments', () => {
  it('build the message, with the delay in ms', () => {
    expect(
      argsOf(
        [
          'enqueue',
          '--kind',
          'webhook',
          '--payload',
          '{"url":"https://example.com/hook","body":{"n":1}}',
          '--ordering-key',
          'order-1',
          '--dedupe-key',
          'order-1-created',
          '--delay',
          '30s',
          '--max-attempts',
          '3',
        ],
        'enqueue',
      ).args,
    ).toEqual({
      message: {
        kind: 'webhook',
        payload: { url: 'https://example.com/hook', body: { n: 1 } },
        orderingKey: 'order-1',
        dedupeKey: 'order-1-created',
        delayMs: 30_000,
        maxAttempts: 3,
      },
      json: false,
    });
  });

  it('refuse a payload that is not JSON, and a missing kind or payload', () => {
    expect(usageMessage(['enqueue', '--kind', 'email', '--payload', '{to: 1}'])).toMatch(
      /^--payload: not valid JSON \(.+\)$/,
    );
    expect(usageMessage(['enqueue', '--payload', '{}'])).toBe(
      '--kind: required (email or webhook)',
    );
    expect(usageMessage(['enqueue', '--kind', 'email'])).toBe('--payload: required, as JSON');
    expect(
      usageMessage(['enqueue', '--kind', 'email', '--payload', '{}', '--max-attempts', 'x']),
    ).toMatch(/^--max-attempts: expected a whole number at least 1/);
  });
});

describe('help', () => {
  it('lists every command, the environment and the exit codes', () => {
    const text = helpText(undefined);
    for (const name of COMMAND_NAMES) expect(text).toContain(`  ${name} `);
    expect(text).toContain('DATABASE_URL');
    for (const code of ['0 ', '1 ', '2 ', '3 ', '4 ', '130/143']) {
      expect(text).toMatch(new RegExp(`^  ${code}`, 'm'));
    }
  });

  it.each(COMMAND_NAMES)('for %s lists each of its flags and the exit codes', (name) => {
    const text = helpText(name);
    expect(text.startsWith(`Usage: outbox ${name} `)).toBe(true);
    for (const flag of Object.keys(commandNamed(name).flags)) {
      expect(text).toContain(`--${flag}`);
    }
    expect(text).toContain('--config PATH');
    expect(text).toContain('Exit codes:');
  });
});

describe('text output', () => {
  it('writes durations the way an operator reads them', () => {
    expect(formatDuration(0)).toBe('0s');
    expect(formatDuration(850)).toBe('850ms');
    expect(formatDuration(4_250)).toBe('4.2s');
    expect(formatDuration(59_990)).toBe('59.9s');
    expect(formatDuration(192_000)).toBe('3m 12s');
    expect(formatDuration(7_500_000)).toBe('2h 5m');
    expect(formatDuration(3 * 86_400_000)).toBe('3d');
  });

  it('aligns table columns and cuts long cells', () => {
    const table = formatTable([
      ['ID', 'ERROR'],
      ['1', 'x'.repeat(100)],
      ['1234', 'short'],
    ]);
    expect(table.split('\n')).toEqual(['ID    ERROR', `1     ${'x'.repeat(59)}…`, '1234  short']);
  });
});
