/**
 * The `outbox` command line under random and hostile arguments (fast-check): parsing never
 * fails except as a usage error (exit 2), and commands run against a real database answer with
 * a documented exit code, one `outbox: ` line on stderr when they refuse, and no partial write.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { describeFailure, ExitCode } from '../../src/cli/cli-errors.js';
import { parseCommandLine } from '../../src/cli/command-line.js';
import { escapeControlCharacters } from '../../src/cli/terminal-text.js';
import { useTestDatabase } from '../support/database.js';
import { startOutboxInProcess } from './outbox-cli.js';

const database = useTestDatabase();

/** Words the parser knows, mixed with hostile ones: flags, values, numbers past every range. */
const WORDS = [
  'migrate',
  'drain',
  'stats',
  'list',
  'retry',
  'discard',
  'purge',
  'enqueue',
  'help',
  '--json',
  '--once',
  '--state',
  '--kind',
  '--limit',
  '--cursor',
  '--payload',
  '--key',
  '--ordering-key',
  '--dedupe-key',
  '--delay',
  '--older-than',
  '--all-dead',
  '--config',
  '--interval',
  '--budget-ms',
  '--batch-size',
  '--concurrency',
  '-h',
  '--help',
  '--',
  '-',
  'dead',
  'pending',
  'delivered',
  'email',
  'webhook',
  '0',
  '1',
  '-1',
  '9223372036854775807',
  '9223372036854775808',
  '1e309',
  'NaN',
  '5s',
  '10x',
  '{}',
  '[]',
  'null',
  '{"a":1}',
  '\u0000',
  '\ud800',
  '%00',
  '../../etc/passwd',
  "'; DROP TABLE outbox.messages; --",
  '<script>',
];

const argument = fc.oneof(
  fc.constantFrom(...WORDS),
  fc.string({ unit: 'binary', maxLength: 20 }),
  fc
    .constantFrom(...WORDS)
    .chain((flag) => fc.string({ maxLength: 10 }).map((v) => `${flag}=${v}`)),
);

describe('outbox command-line properties', () => {
  it('parses any argv or refuses it as a usage error, never otherwise', () => {
    fc.assert(
      fc.property(fc.array(argument, { maxLength: 8 }), (argv) => {
        try {
          parseCommandLine(argv);
        } catch (error) {
          expect(describeFailure(error).exitCode).toBe(ExitCode.usage);
        }
      }),
      { numRuns: 2_000 },
    );
  });

  it('enqueue, retry and discard with hostile arguments answer a documented code and never write partly', async () => {
    const env = { DATABASE_URL: database.url };
    const rows = async () =>
      Number(
        (await database.pool.query<{ n: string }>('SELECT count(*) AS n FROM outbox.all_messages'))
          .rows[0]!.n,
      );
    const payload = fc.oneof(
      fc.json({ maxDepth: 3 }),
      fc
        .string({ unit: 'binary', maxLength: 30 })
        .map((text) => JSON.stringify({ to: [text], subject: text, text })),
      fc.constantFrom(
        '{"to":["a@example.com"],"subject":"\\ud800","text":"x"}',
        '{"url":"https://u:p@h.example/","body":1}',
        '{"to":["ada@example.com"],"subject":"Hi \\"there\\" <b>","text":"\\u00e9\\ud83d\\ude00"}',
      ),
    );
    const command = fc.oneof(
      fc
        .tuple(fc.constantFrom('email', 'webhook', 'custom.kind', 'BAD KIND', ''), payload)
        .map(([kind, json]) => ['enqueue', '--kind', kind, '--payload', json]),
      fc
        .tuple(
          fc.constantFrom('retry', 'discard'),
          fc.oneof(fc.constantFrom(...WORDS), fc.bigInt({ min: -1n, max: 2n ** 64n }).map(String)),
        )
        .map(([name, id]) => [name, id]),
    );
    const seen = new Set<number>();
    await fc.assert(
      fc.asyncProperty(command, async (argv) => {
        const before = await rows();
        const { code, stderr } = await startOutboxInProcess(argv, env).done;
        seen.add(code);
        expect([ExitCode.ok, ExitCode.failed, ExitCode.usage]).toContain(code);
        if (code !== ExitCode.ok) {
          expect(stderr).toMatch(/^outbox: \S/);
          expect(stderr.trim().split('\n')).toHaveLength(1);
          expect(await rows()).toBe(before);
        }
        if (code === ExitCode.failed) expect(argv[0]).not.toBe('enqueue');
      }),
      {
        numRuns: 150,
        // Beside the random runs, one command that must write and one that must be refused,
        // so the checks below never hang on what 150 random draws happened to contain.
        examples: [
          [
            [
              'enqueue',
              '--kind',
              'email',
              '--payload',
              '{"to":["a@example.com"],"subject":"Hi","text":"x"}',
            ],
          ],
          [['retry', 'not-an-id']],
        ],
      },
    );
    // Both sides were exercised: some commands wrote, some were refused.
    expect(seen).toContain(ExitCode.ok);
    expect(seen).toContain(ExitCode.usage);
  });
});

describe('printed text', () => {
  it('escapes every control character but newline and tab, and JSON output keeps its values', () => {
    // biome-ignore lint/suspicious/noControlCharactersInRegex: what must never be printed
    const raw = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f]/;
    fc.assert(
      fc.property(fc.string({ unit: 'binary', maxLength: 80 }), (text) => {
        const printed = escapeControlCharacters(text);
        expect(printed).not.toMatch(raw);
        expect(JSON.parse(escapeControlCharacters(JSON.stringify({ text })))).toEqual({ text });
      }),
      { numRuns: 2000 },
    );
  });
});
