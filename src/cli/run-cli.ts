/**
 * The `outbox` command as a function: argv and injected I/O in, an exit code out. It never
 * throws and never exits the process, so tests call it in-process; `main.ts` is the thin edge
 * that wires it to the real process.
 */
import { describeFailure, ExitCode } from './cli-errors.js';
import { type CliIo, isDebug } from './cli-io.js';
import { parseCommandLine } from './command-line.js';
import { commandNamed } from './command-registry.js';
import { loadConfig } from './config-file.js';
import { helpText } from './help.js';
import { controlSafeSink } from './terminal-text.js';

/**
 * Runs `outbox <argv...>`. Results go to `io.stdout`; every error is one line on `io.stderr`
 * starting `outbox: ` (plus the stack with OUTBOX_DEBUG=1), and the exit code says what kind
 * of failure it was (see `ExitCode`). Control characters in anything printed come out escaped
 * (see terminal-text). The config file is looked up in `io.cwd` (default the
 * process's) unless `--config` names one; help never loads it.
 *
 * @example
 * const { stdout, stderr, env } = process;
 * const code = await runCli(['list', '--state', 'dead'], { stdout, stderr, env });
 */
export async function runCli(argv: readonly string[], given: CliIo): Promise<ExitCode> {
  // Everything printed passes here: database text reaches the terminal as text (terminal-text).
  const io: CliIo = {
    ...given,
    stdout: controlSafeSink(given.stdout),
    stderr: controlSafeSink(given.stderr),
  };
  try {
    const line = parseCommandLine(argv);
    if (line.command === 'help') {
      // Help asked for goes to stdout; help shown because no command was given is a usage error.
      (line.requested ? io.stdout : io.stderr).write(helpText(line.topic));
      return line.requested ? ExitCode.ok : ExitCode.usage;
    }
    const { config, path } = await loadConfig(io.cwd ?? process.cwd(), line.configPath);
    const command = commandNamed(line.command);
    return await command.run(line.args, { io, config, configPath: path });
  } catch (error) {
    const failure = describeFailure(error);
    io.stderr.write(`outbox: ${failure.message}\n`);
    if (isDebug(io) && error instanceof Error && error.stack) io.stderr.write(`${error.stack}\n`);
    return failure.exitCode;
  }
}
