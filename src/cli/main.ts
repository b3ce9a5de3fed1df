/**
 * The process edge of the `outbox` command (bin/outbox.mjs imports this): real argv, stdio and
 * environment, and the signals. For `drain`, the first SIGINT or SIGTERM asks the drain to stop
 * gracefully (sends in flight finish and every outcome is recorded); a second one exits at once,
 * unless it comes within SAME_PRESS_MS of the first (one Ctrl-C under npm arrives twice).
 * For `replay`, the first one stops it before its next batch (the batches done stay done).
 * Other commands are short, so a signal ends them the default way.
 */
import { constants } from 'node:os';
import { DEFAULT_LEASE_MS } from '../core/drain-settings.js';
import { FORCED_EXIT_CODE_BASE, SAME_PRESS_MS } from './cli-errors.js';
import { parseCommandLine } from './command-line.js';
import { runCli } from './run-cli.js';
import { formatDuration } from './text-format.js';

const argv = process.argv.slice(2);
const stop = new AbortController();

/** The command as runCli finds it (`--config x drain` is a drain too); a bad line is runCli's to report. */
function commandOf(args: readonly string[]): string | undefined {
  try {
    return parseCommandLine(args).command;
  } catch {
    return undefined;
  }
}

/** What the first and a second signal tell the operator, for the commands that stop gracefully. */
const GRACEFUL_STOPS: Readonly<Record<string, { first: string; forced: string }>> = {
  drain: {
    first: 'stopping once the drain in flight records its outcomes (again to force)',
    forced: `exiting now; messages in flight stay claimed until their lease ends (at most ${formatDuration(DEFAULT_LEASE_MS)})`,
  },
  replay: {
    first: 'stopping before the next batch; the batches done stay done (again to force)',
    forced: 'exiting now; the batch in flight is one statement: it is replayed whole or not at all',
  },
};

const command = commandOf(argv);
const gracefulStop = command === undefined ? undefined : GRACEFUL_STOPS[command];
if (gracefulStop !== undefined) {
  let firstSignalAt = 0;
  for (const signal of ['SIGINT', 'SIGTERM'] as const) {
    process.on(signal, () => {
      if (!stop.signal.aborted) {
        process.stderr.write(`outbox: ${signal}: ${gracefulStop.first}\n`);
        firstSignalAt = Date.now();
        stop.abort();
        return;
      }
      if (Date.now() - firstSignalAt < SAME_PRESS_MS) return;
      process.stderr.write(`outbox: ${signal} again: ${gracefulStop.forced}\n`);
      process.exit(FORCED_EXIT_CODE_BASE + constants.signals[signal]);
    });
  }
}

const exitCode = await runCli(argv, {
  stdout: process.stdout,
  stderr: process.stderr,
  env: process.env,
  signal: stop.signal,
});
// Exit explicitly once output is flushed: an idle keep-alive socket left by a webhook send
// must not hold the process open.
await new Promise<void>((resolve) => process.stdout.write('', () => resolve()));
await new Promise<void>((resolve) => process.stderr.write('', () => resolve()));
process.exit(exitCode);
