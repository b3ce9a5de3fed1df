import { MAX_TIMED_PAUSE_MS, timedPauseEnd } from '../../store/destination-store.js';
import { ExitCode, usageError } from '../cli-errors.js';
import { writeJson, writeLine, writeNote } from '../cli-io.js';
import { defineCommand, JSON_FLAG } from '../command.js';
import { outboxFromEnv, withDatabase } from '../database-from-env.js';
import { looksMistyped, pausedLine } from '../destination-output.js';
import { parseDuration, singleDestination } from '../flag-values.js';
import { formatDuration } from '../text-format.js';

export interface PauseArguments {
  destination: string;
  /** Undefined: until resumed. */
  forMs: number | undefined;
  json: boolean;
}

/**
 * `outbox pause DESTINATION [--for 2h]`: no message of the destination is claimed until the
 * pause ends (one probe goes first then) or `outbox resume`; messages already out finish.
 */
export const pauseCommand = defineCommand({
  name: 'pause',
  summary: 'stop sending to a destination, until resumed or for a while',
  usage: '<destination> [--for DURATION] [--json]',
  details: [
    'No message of the destination is claimed while it is paused; its pending messages wait, and no attempt is counted for them. Messages already being sent finish. Without --for it stays paused until `outbox resume`; with --for it ends on its own, and then one probe message goes first, as after any pause.',
    'The destination is named as `outbox destinations` shows it: a webhook’s is its URL’s origin (https://hooks.example.com), an email’s is ses: and its sending domain (ses:example.com). A destination may be paused before it has any message.',
  ],
  flags: {
    for: {
      type: 'string',
      placeholder: 'DURATION',
      description: `how long: 10m, 2h, up to ${formatDuration(MAX_TIMED_PAUSE_MS)} (default: until resumed)`,
    },
    json: JSON_FLAG,
  },
  positionals: true,
  parse(input): PauseArguments {
    const text = input.string('for');
    const forMs = text === undefined ? undefined : parseDuration(text, '--for');
    if (forMs !== undefined && (forMs < 1 || forMs > MAX_TIMED_PAUSE_MS)) {
      throw usageError(
        `--for: expected from 1ms to ${formatDuration(MAX_TIMED_PAUSE_MS)}, got "${text}"; longer: leave out --for to pause until resumed`,
      );
    }
    return {
      destination: singleDestination('pause', input.positionals),
      forMs,
      json: input.has('json'),
    };
  },
  async run(args, { io, config }) {
    const outbox = outboxFromEnv(io.env, config);
    const record = await withDatabase({ io, config }, outbox, ({ store }) => {
      const now = new Date();
      const until = args.forMs === undefined ? undefined : timedPauseEnd(now, args.forMs);
      return store.destinations().pause(args.destination, now, until);
    });
    if (args.json) writeJson(io.stdout, record);
    else writeLine(io.stdout, pausedLine(record));
    if (looksMistyped(record)) {
      writeNote(
        io,
        `no message waits for ${record.destination} and it never failed: if that is not the name you meant, \`outbox destinations\` lists the known ones (and \`outbox resume\` ends this pause)`,
      );
    }
    return ExitCode.ok;
  },
});
