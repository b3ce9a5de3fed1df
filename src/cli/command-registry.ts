/**
 * Every `outbox` command, in the order help lists them. Adding a command is one module in
 * `commands/` exporting a `CliCommand`, and one line here.
 */
import type { CliCommand } from './command.js';
import { destinationsCommand } from './commands/destinations.js';
import { discardCommand } from './commands/discard.js';
import { drainCommand } from './commands/drain.js';
import { enqueueCommand } from './commands/enqueue.js';
import { listCommand } from './commands/list.js';
import { migrateCommand } from './commands/migrate.js';
import { pauseCommand } from './commands/pause.js';
import { purgeCommand } from './commands/purge.js';
import { replayCommand } from './commands/replay.js';
import { resumeCommand } from './commands/resume.js';
import { retryCommand } from './commands/retry.js';
import { showCommand } from './commands/show.js';
import { statsCommand } from './commands/stats.js';

export const COMMANDS = [
  migrateCommand,
  drainCommand,
  statsCommand,
  listCommand,
  showCommand,
  retryCommand,
  discardCommand,
  replayCommand,
  destinationsCommand,
  pauseCommand,
  resumeCommand,
  purgeCommand,
  enqueueCommand,
] as const;

type RegisteredCommand = (typeof COMMANDS)[number];

export type CommandName = RegisteredCommand['name'];

export const COMMAND_NAMES: readonly CommandName[] = COMMANDS.map((command) => command.name);

/** Each command's parsed arguments, by name. */
export type CommandArguments = {
  [C in RegisteredCommand as C['name']]: C extends CliCommand<string, infer Args> ? Args : never;
};

export function isCommandName(name: string): name is CommandName {
  return (COMMAND_NAMES as readonly string[]).includes(name);
}

/**
 * The module of a command. Typed loosely on purpose: a command's `parse` and `run` agree on
 * their argument type, and callers only pass `run` what the same module's `parse` returned.
 */
export function commandNamed(name: CommandName): CliCommand {
  const command: CliCommand | undefined = COMMANDS.find((candidate) => candidate.name === name);
  if (command === undefined) throw new Error(`no command ${name}`);
  return command;
}
