/**
 * The text `outbox --help` and `outbox <command> --help` print, built from the command modules,
 * so help and parsing cannot drift apart.
 */
import { ExitCode } from './cli-errors.js';
import { type FlagTable, GLOBAL_FLAGS } from './command.js';
import { COMMANDS, type CommandName, commandNamed } from './command-registry.js';

const EXIT_CODE_LINES: readonly [number | string, string][] = [
  [ExitCode.ok, 'ok'],
  [
    ExitCode.failed,
    'the operation failed (e.g. retry of a message that is not dead, discard of a claimed one)',
  ],
  [
    ExitCode.usage,
    'usage error: bad flag, duration, number, JSON payload or state; nothing was written',
  ],
  [
    ExitCode.configuration,
    'configuration error: DATABASE_URL missing, bad OUTBOX_SCHEMA, schema not migrated, bad sender settings, a config file that does not load',
  ],
  [ExitCode.unreachable, 'could not connect to the database (or lost the connection)'],
  ['130/143', 'drain forced to stop by a second SIGINT/SIGTERM'],
];

const CONFIG_LINES: readonly string[] = [
  'Config file: outbox.config.ts (or .mjs, .js) in the current directory, or --config PATH, if',
  'present: schema, kinds, senders, endpointSecret (webhook secrets from your own table),',
  'drain settings and database: { prepare }. See docs/operations.md.',
];

const ENVIRONMENT_LINES: readonly [string, string][] = [
  ['DATABASE_URL', 'postgres:// connection string (required)'],
  ['OUTBOX_SCHEMA', "schema holding the outbox tables (default outbox; the config's schema wins)"],
  [
    'OUTBOX_PREPARE',
    "off: no named prepared statements, for a pooler that loses them (default on; the config's database.prepare wins)",
  ],
  ['OUTBOX_DEBUG', "1 prints stack traces and the drain's debug log on stderr"],
];

/** Help for every command, or for one. */
export function helpText(topic: CommandName | undefined): string {
  return topic === undefined ? overview() : commandHelp(topic);
}

function overview(): string {
  const width = Math.max(...COMMANDS.map(({ name }) => name.length));
  return [
    'outbox: operate a transactional outbox in PostgreSQL',
    '',
    'Usage: outbox <command> [options]',
    '',
    'Commands:',
    ...COMMANDS.map(({ name, summary }) => `  ${name.padEnd(width)}  ${summary}`),
    '',
    'Run `outbox <command> --help` for its options.',
    '',
    ...section('Global options (before or after the command):', flagRows(GLOBAL_FLAGS)),
    '',
    ...CONFIG_LINES,
    '',
    ...section('Environment:', ENVIRONMENT_LINES),
    '',
    ...section('Exit codes:', EXIT_CODE_LINES),
    '',
  ].join('\n');
}

function flagRows(flags: FlagTable): [string, string][] {
  return Object.entries(flags).map(([flag, option]) => {
    const short = option.short === undefined ? '' : `-${option.short}, `;
    const value = option.placeholder === undefined ? '' : ` ${option.placeholder}`;
    return [`${short}--${flag}${value}`, option.description];
  });
}

function commandHelp(name: CommandName): string {
  const spec = commandNamed(name);
  const flags = flagRows({ ...spec.flags, ...GLOBAL_FLAGS });
  return [
    `Usage: outbox ${name} ${spec.usage}`,
    '',
    `${spec.summary[0]!.toUpperCase()}${spec.summary.slice(1)}.`,
    ...spec.details.flatMap((paragraph) => ['', ...wrap(paragraph, 98)]),
    '',
    ...section('Options:', flags),
    '',
    ...section('Environment:', ENVIRONMENT_LINES),
    '',
    ...section('Exit codes:', EXIT_CODE_LINES),
    '',
  ].join('\n');
}

function section(title: string, rows: readonly (readonly [number | string, string])[]): string[] {
  const width = Math.max(...rows.map(([left]) => String(left).length));
  return [title, ...rows.map(([left, right]) => `  ${String(left).padEnd(width)}  ${right}`)];
}

function wrap(text: string, width: number): string[] {
  const lines: string[] = [];
  let line = '';
  for (const word of text.split(/\s+/)) {
    if (line !== '' && line.length + 1 + word.length > width) {
      lines.push(line);
      line = word;
    } else {
      line = line === '' ? word : `${line} ${word}`;
    }
  }
  if (line !== '') lines.push(line);
  return lines;
}
