import { CliError, ExitCode } from '../cli-errors.js';
import { writeJson, writeLine } from '../cli-io.js';
import { defineCommand, JSON_FLAG } from '../command.js';
import { outboxFromEnv, withDatabase } from '../database-from-env.js';
import { resumedLine } from '../destination-output.js';
import { singleDestination } from '../flag-values.js';

export interface ResumeArguments {
  destination: string;
  json: boolean;
}

/**
 * `outbox resume DESTINATION`: ends its pause, whatever paused it, and clears its failure
 * count; the messages the pause held are due now. A destination with no health record (never
 * failed, never paused) is refused (exit 1).
 */
export const resumeCommand = defineCommand({
  name: 'resume',
  summary: 'send to a paused destination again, now',
  usage: '<destination> [--json]',
  details: [
    'Ends the pause whatever made it (the breaker, a Retry-After, or outbox pause) and clears the failure count: the messages the pause held are due now, with no probe first. Fails (exit 1) when the destination has no record: it never failed and was never paused.',
  ],
  flags: { json: JSON_FLAG },
  positionals: true,
  parse: (input): ResumeArguments => ({
    destination: singleDestination('resume', input.positionals),
    json: input.has('json'),
  }),
  async run(args, { io, config }) {
    const outbox = outboxFromEnv(io.env, config);
    const record = await withDatabase({ io, config }, outbox, ({ store }) =>
      store.destinations().resume(args.destination, new Date()),
    );
    if (record === null) {
      throw new CliError(
        'CLI_FAILED',
        `resume: ${args.destination} has no record: it never failed and was never paused (\`outbox destinations\` lists those that have one)`,
      );
    }
    if (args.json) writeJson(io.stdout, record);
    else writeLine(io.stdout, resumedLine(record));
    return ExitCode.ok;
  },
});
