/**
 * The command line, parsed without touching anything: argv in, a typed request out, or a
 * usage error naming the flag. Pure, so every rule is unit-tested in-process. Each command's
 * module holds its flags and rules (see `command-registry.ts`); this file only routes:
 * global flags, help, and which command.
 */
import { isCliError, usageError } from './cli-errors.js';
import { GLOBAL_FLAGS, readFlags } from './command.js';
import {
  COMMAND_NAMES,
  type CommandArguments,
  type CommandName,
  commandNamed,
  isCommandName,
} from './command-registry.js';

export type CommandRequest<Name extends CommandName = CommandName> = {
  [K in Name]: {
    command: K;
    args: CommandArguments[K];
    /** `--config PATH`, before or after the command; undefined: look in the current directory. */
    configPath: string | undefined;
  };
}[Name];

/** What the command line asks for: a command, or help (on one command or on all). */
export type CommandLine =
  | CommandRequest
  | { command: 'help'; topic: CommandName | undefined; requested: boolean };

/**
 * Parses `outbox [--config PATH] <command> [flags]` (argv without node and the script). Throws
 * a usage `CliError` naming the flag on the first problem. `--help` anywhere before `--` wins
 * over every other problem, so help is always reachable.
 *
 * @example
 * parseCommandLine(['list', '--state', 'dead', '--limit', '10']);
 * // { command: 'list', args: { state: 'dead', limit: 10, ... }, configPath: undefined }
 */
export function parseCommandLine(argv: readonly string[]): CommandLine {
  const commandAt = firstCommandIndex(argv);
  const globals = argv.slice(0, commandAt);
  const [first, ...rest] = argv.slice(commandAt);
  if (globals.includes('--help') || globals.includes('-h')) {
    return { command: 'help', topic: undefined, requested: true };
  }
  const globalConfig = readGlobalFlags(globals);
  if (first === undefined) return { command: 'help', topic: undefined, requested: false };
  if (first === 'help') {
    const [topic, ...extra] = rest;
    if (topic === undefined) return { command: 'help', topic: undefined, requested: true };
    if (!isCommandName(topic) || extra.length > 0) {
      throw usageError(`help: unknown command "${rest.join(' ')}" (${COMMAND_NAMES.join(', ')})`);
    }
    return { command: 'help', topic, requested: true };
  }
  if (!isCommandName(first)) {
    throw usageError(`unknown command "${first}"; commands: ${COMMAND_NAMES.join(', ')}`);
  }
  const terminator = rest.indexOf('--');
  const beforeTerminator = terminator === -1 ? rest : rest.slice(0, terminator);
  if (beforeTerminator.includes('--help') || beforeTerminator.includes('-h')) {
    return { command: 'help', topic: first, requested: true };
  }
  const command = commandNamed(first);
  const input = readFlags(first, command.flags, rest, command.positionals ?? false);
  const commandConfig = input.string('config');
  if (globalConfig !== undefined && commandConfig !== undefined) {
    throw usageError('--config: given more than once');
  }
  return {
    command: first,
    args: command.parse(input),
    configPath: commandConfig ?? globalConfig,
  } as CommandRequest;
}

/** Where the command starts: past leading options, and past `--config`'s separate value. */
function firstCommandIndex(argv: readonly string[]): number {
  let index = 0;
  while (index < argv.length && argv[index]!.startsWith('-')) {
    index += argv[index] === '--config' ? 2 : 1;
  }
  return Math.min(index, argv.length);
}

/** Options before the command: only the global ones, checked by strict parseArgs. */
function readGlobalFlags(globals: readonly string[]): string | undefined {
  try {
    return readFlags('', GLOBAL_FLAGS, globals, false).string('config');
  } catch (error) {
    if (isCliError(error) && error.message.startsWith('unknown option')) {
      throw usageError(`${error.message}; commands: ${COMMAND_NAMES.join(', ')}`);
    }
    throw error;
  }
}
