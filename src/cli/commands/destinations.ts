import { DEFAULT_DESTINATION_LIMIT, MAX_DESTINATION_LIMIT } from '../../store/destination-store.js';
import { ExitCode } from '../cli-errors.js';
import { writeJson, writeLine } from '../cli-io.js';
import { defineCommand, JSON_FLAG } from '../command.js';
import { outboxFromEnv, withDatabase } from '../database-from-env.js';
import { pauseEndText } from '../destination-output.js';
import { destinationName, optionalInteger } from '../flag-values.js';
import { formatTable } from '../text-format.js';

export interface DestinationsArguments {
  limit: number;
  after: string | undefined;
  json: boolean;
}

/** A name the shell reads as one word as it is; anything else is quoted in the next-page hint. */
const SHELL_WORD = /^[\w@%+=:,./-]+$/;

/**
 * `outbox destinations`: each destination with a health record (every one that has failed or
 * been paused), paused ones first: its state, failures, pause, last error and waiting messages.
 */
export const destinationsCommand = defineCommand({
  name: 'destinations',
  summary: 'show each destination’s health: paused or not, failures, last error, waiting',
  usage: '[--limit N] [--after NAME] [--json]',
  details: [
    'Lists every destination that has failed or been paused, paused ones (open, and half-open: the pause is over and one probe may go) first, then by name. A destination that never failed has no record and is not listed; its messages go as usual.',
    'PAUSED BY is breaker (failures in a row), retry-after (the receiver asked) or operator (outbox pause). WAITING counts its pending and claimed messages. When there is another page, the last line shows the --after that fetches it.',
  ],
  flags: {
    limit: {
      type: 'string',
      placeholder: 'N',
      description: `destinations per page, 1 to ${MAX_DESTINATION_LIMIT} (default ${DEFAULT_DESTINATION_LIMIT})`,
    },
    after: {
      type: 'string',
      placeholder: 'NAME',
      description: 'the next page: after this destination (the last line of a page says it)',
    },
    json: JSON_FLAG,
  },
  parse: (input): DestinationsArguments => ({
    limit:
      optionalInteger(input.string('limit'), '--limit', 1, MAX_DESTINATION_LIMIT) ??
      DEFAULT_DESTINATION_LIMIT,
    after: optionalDestination(input.string('after')),
    json: input.has('json'),
  }),
  async run(args, { io, config }) {
    const outbox = outboxFromEnv(io.env, config);
    const destinations = await withDatabase({ io, config }, outbox, ({ store }) =>
      store.destinations().list(new Date(), { limit: args.limit, after: args.after }),
    );
    const nextAfter =
      destinations.length === args.limit ? (destinations.at(-1)?.destination ?? null) : null;
    if (args.json) {
      writeJson(io.stdout, { destinations, nextAfter });
      return ExitCode.ok;
    }
    if (destinations.length === 0) {
      writeLine(
        io.stdout,
        args.after === undefined
          ? 'no destination has failed or been paused: every one is sent to as usual'
          : 'no more destinations after that one',
      );
      return ExitCode.ok;
    }
    writeLine(
      io.stdout,
      formatTable([
        ['DESTINATION', 'STATE', 'FAILURES', 'PAUSED BY', 'PAUSED UNTIL', 'WAITING', 'LAST ERROR'],
        ...destinations.map((d) => [
          d.destination,
          d.state,
          String(d.failures),
          d.pausedBy ?? '-',
          pauseEndText(d),
          String(d.waiting),
          d.lastError ?? '-',
        ]),
      ]),
    );
    if (nextAfter !== null) {
      const limit = args.limit === DEFAULT_DESTINATION_LIMIT ? '' : ` --limit ${args.limit}`;
      writeLine(
        io.stdout,
        `next page: outbox destinations${limit} --after ${shellWord(nextAfter)}`,
      );
    }
    return ExitCode.ok;
  },
});

function optionalDestination(text: string | undefined): string | undefined {
  return text === undefined ? undefined : destinationName(text, '--after');
}

/** `name` as one shell word: as it is when it needs no quoting, else in single quotes. */
function shellWord(name: string): string {
  return SHELL_WORD.test(name) ? name : `'${name.replaceAll("'", `'\\''`)}'`;
}
