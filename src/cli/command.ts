/**
 * What a command module is: its name, help, flags, how it turns argv into typed arguments, and
 * how it runs, together in one file. `node:util` `parseArgs` (strict) does the tokenising and
 * the checks; this module only says its errors in our words, naming the flag.
 */
import { parseArgs } from 'node:util';
import { type ExitCode, usageError } from './cli-errors.js';
import type { CliIo } from './cli-io.js';
import type { OutboxCliConfig } from './config.js';

export interface FlagSpec {
  type: 'string' | 'boolean';
  /** What the value looks like in help: `N`, `5s`, `JSON`. */
  placeholder?: string;
  short?: string;
  description: string;
}

export type FlagTable = Readonly<Record<string, FlagSpec>>;

/** Flags every command takes; also accepted before the command (`outbox --config x drain`). */
export const GLOBAL_FLAGS = {
  config: {
    type: 'string',
    placeholder: 'PATH',
    description: 'config file (default: outbox.config.ts, .mjs or .js in the current directory)',
  },
  help: { type: 'boolean', short: 'h', description: 'show this help' },
} as const satisfies FlagTable;

export const JSON_FLAG: FlagSpec = {
  type: 'boolean',
  description: 'print exactly one JSON object on stdout instead of text',
};

/** The command line after `parseArgs`: values by flag name, and the positional arguments. */
export interface FlagInput {
  command: string;
  /** A string flag's value, or undefined when not given. */
  string(name: string): string | undefined;
  /** Whether a boolean flag was given. */
  has(name: string): boolean;
  positionals: readonly string[];
}

/** What a command runs with: injected I/O and the loaded config file (empty when none). */
export interface CommandContext {
  io: CliIo;
  config: OutboxCliConfig;
  /** Where the config came from, for messages; undefined when there was no file. */
  configPath: string | undefined;
}

/**
 * One `outbox` command. Adding a command is one module exporting this and one line in
 * `command-registry.ts`; help and parsing come from these fields.
 */
export interface CliCommand<Name extends string = string, Args = unknown> {
  readonly name: Name;
  summary: string;
  /** Everything after `outbox <command>` in the usage line. */
  usage: string;
  /** Paragraphs printed under the usage line. */
  details: readonly string[];
  /** The command's own flags; `--config` and `--help` are added to every command. */
  flags: FlagTable;
  /** Whether positional arguments (a message id) are taken. Default false. */
  positionals?: boolean;
  /** Typed arguments from the flags, or a usage `CliError` naming the flag. Pure. */
  parse(input: FlagInput): Args;
  run(args: Args, context: CommandContext): Promise<ExitCode>;
}

/** Keeps a command's literal name and argument type, for the registry's typed map. */
export function defineCommand<const Name extends string, Args>(
  command: CliCommand<Name, Args>,
): CliCommand<Name, Args> {
  return command;
}

/**
 * Runs strict `parseArgs` over a command's flags plus the global ones. Besides its checks, a
 * flag given twice is refused (parseArgs keeps the last), since `--state dead --state pending`
 * is more likely a mistake than an override.
 */
export function readFlags(
  command: string,
  flags: FlagTable,
  args: readonly string[],
  allowPositionals: boolean,
): FlagInput {
  const table: FlagTable = { ...flags, ...GLOBAL_FLAGS };
  const options = Object.fromEntries(
    Object.entries(table).map(([name, flag]) => [
      name,
      flag.short === undefined ? { type: flag.type } : { type: flag.type, short: flag.short },
    ]),
  );
  let parsed: ReturnType<typeof parseArgs>;
  try {
    parsed = parseArgs({ args: [...args], options, strict: true, allowPositionals, tokens: true });
  } catch (error) {
    throw parseError(command, table, error);
  }
  const seen = new Set<string>();
  for (const token of parsed.tokens ?? []) {
    if (token.kind !== 'option') continue;
    if (seen.has(token.name)) throw usageError(`--${token.name}: given more than once`);
    seen.add(token.name);
  }
  const values = parsed.values as Record<string, string | boolean | undefined>;
  return {
    command,
    string: (name) => {
      const value = values[name];
      return typeof value === 'string' ? value : undefined;
    },
    has: (name) => values[name] === true,
    positionals: parsed.positionals,
  };
}

/**
 * parseArgs' error as a usage error that starts with the flag. Its messages are matched by
 * code, and the flag read from the quoted option; an unforeseen wording is kept whole.
 */
function parseError(command: string, table: FlagTable, error: unknown): Error {
  const code = (error as { code?: unknown }).code;
  const message = error instanceof Error ? error.message : String(error);
  const quoted = /'(-[^' ,]+)/.exec(message)?.[1];
  const long = /--([\w-]+)/.exec(message)?.[1];
  const where = command === '' ? 'outbox' : command;
  if (code === 'ERR_PARSE_ARGS_UNKNOWN_OPTION' && quoted !== undefined) {
    return command === ''
      ? usageError(`unknown option ${quoted} before the command`)
      : usageError(`${command}: unknown option ${quoted} (see outbox ${command} --help)`);
  }
  if (code === 'ERR_PARSE_ARGS_UNEXPECTED_POSITIONAL') {
    const argument = /'([^']*)'/.exec(message)?.[1] ?? '';
    return usageError(`${where}: unexpected argument "${argument}"`);
  }
  if (code === 'ERR_PARSE_ARGS_INVALID_OPTION_VALUE' && long !== undefined) {
    const flag = `--${long}`;
    if (table[long]?.type === 'boolean') return usageError(`${flag}: takes no value`);
    const needs = `${flag}: needs a value (${table[long]?.placeholder ?? 'VALUE'})`;
    // parseArgs refuses a value that starts with "-" as likely a forgotten value.
    return /ambiguous/.test(message)
      ? usageError(`${needs}; a value starting with "-" goes as ${flag}=VALUE`)
      : usageError(needs);
  }
  return usageError(`${where}: ${message.replace(/\s*\n\s*/g, ' ')}`);
}
