/**
 * The `outbox` command as a function: argv and injected I/O in, an exit code out. It never
 * throws and never exits the process, so tests call it in-process; `main.ts` is the thin edge
 * that wires it to the real process.
 */
import { type CommandArguments, type CommandName, parseCommandLine } from './arguments.js';
import { describeFailure, ExitCode } from './cli-errors.js';
import { type CliIo, isDebug } from './cli-io.js';
import { runDiscard } from './commands/discard.js';
import { runDrain } from './commands/drain.js';
import { runEnqueue } from './commands/enqueue.js';
import { runList } from './commands/list.js';
import { runMigrate } from './commands/migrate.js';
import { runPurge } from './commands/purge.js';
import { runRetry } from './commands/retry.js';
import { runStats } from './commands/stats.js';
import { helpText } from './help.js';

type CommandRunner<Name extends CommandName> = (
  args: CommandArguments[Name],
  io: CliIo,
) => Promise<ExitCode>;

/** Every command and the function that runs it. Parsing lives in arguments.ts. */
const COMMANDS: { [Name in CommandName]: CommandRunner<Name> } = {
  migrate: runMigrate,
  drain: runDrain,
  stats: runStats,
  list: runList,
  retry: runRetry,
  discard: runDiscard,
  purge: runPurge,
  enqueue: runEnqueue,
};

function runCommand<Name extends CommandName>(
  command: Name,
  args: CommandArguments[Name],
  io: CliIo,
): Promise<ExitCode> {
  return COMMANDS[command](args, io);
}

/**
 * Runs `outbox <argv...>`. Results go to `io.stdout`; every error is one line on `io.stderr`
 * starting `outbox: ` (plus the stack with OUTBOX_DEBUG=1), and the exit code says what kind
 * of failure it was (see `ExitCode`).
 *
 * @example
 * const code = await runCli(['list', '--state', 'dead'], { stdout, stderr, env: process.env });
 */
export async function runCli(argv: readonly string[], io: CliIo): Promise<ExitCode> {
  try {
    const line = parseCommandLine(argv);
    if (line.command === 'help') {
      // Help asked for goes to stdout; help shown because no command was given is a usage error.
      (line.requested ? io.stdout : io.stderr).write(helpText(line.topic));
      return line.requested ? ExitCode.ok : ExitCode.usage;
    }
    return await runCommand(line.command, line.args, io);
  } catch (error) {
    const failure = describeFailure(error);
    io.stderr.write(`outbox: ${failure.message}\n`);
    if (isDebug(io) && error instanceof Error && error.stack) io.stderr.write(`${error.stack}\n`);
    return failure.exitCode;
  }
}
