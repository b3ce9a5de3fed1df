/** The text `outbox --help` and `outbox <command> --help` print, built from the flag tables. */
import { COMMAND_NAMES, COMMAND_SPECS, type CommandName } from './arguments.js';
import { ExitCode } from './cli-errors.js';

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
    'configuration error: DATABASE_URL missing, bad OUTBOX_SCHEMA, schema not migrated, bad sender settings',
  ],
  [ExitCode.unreachable, 'could not connect to the database (or lost the connection)'],
  ['130/143', 'drain forced to stop by a second SIGINT/SIGTERM'],
];

const ENVIRONMENT_LINES: readonly [string, string][] = [
  ['DATABASE_URL', 'postgres:// connection string (required)'],
  ['OUTBOX_SCHEMA', 'schema holding the outbox tables (default outbox)'],
  ['OUTBOX_DEBUG', "1 prints stack traces and the drain's debug log on stderr"],
];

/** Help for every command, or for one. */
export function helpText(topic: CommandName | undefined): string {
  return topic === undefined ? overview() : commandHelp(topic);
}

function overview(): string {
  const width = Math.max(...COMMAND_NAMES.map((name) => name.length));
  return [
    'outbox: operate a transactional outbox in PostgreSQL',
    '',
    'Usage: outbox <command> [options]',
    '',
    'Commands:',
    ...COMMAND_NAMES.map((name) => `  ${name.padEnd(width)}  ${COMMAND_SPECS[name].summary}`),
    '',
    'Run `outbox <command> --help` for its options.',
    '',
    ...section('Environment:', ENVIRONMENT_LINES),
    '',
    ...section('Exit codes:', EXIT_CODE_LINES),
    '',
  ].join('\n');
}

function commandHelp(name: CommandName): string {
  const spec = COMMAND_SPECS[name];
  const flags: [string, string][] = Object.entries(spec.flags).map(([flag, option]) => {
    const short = option.short === undefined ? '' : `-${option.short}, `;
    const value = option.placeholder === undefined ? '' : ` ${option.placeholder}`;
    return [`${short}--${flag}${value}`, option.description];
  });
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
