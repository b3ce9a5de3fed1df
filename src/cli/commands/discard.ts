import { CliError, ExitCode } from '../cli-errors.js';
import { writeJson, writeLine } from '../cli-io.js';
import { defineCommand, JSON_FLAG } from '../command.js';
import { outboxFromEnv, withDatabase } from '../database-from-env.js';
import { singleMessageId } from '../flag-values.js';

export interface DiscardArguments {
  id: string;
  json: boolean;
}

/**
 * `outbox discard <id>`: deletes a message that is not being delivered. A claimed message is
 * refused (exit 1): its drain may be sending it right now.
 */
export const discardCommand = defineCommand({
  name: 'discard',
  summary: 'delete one message that is not being delivered',
  usage: '<id> [--json]',
  details: [
    'Cannot be undone. Refused (exit 1) while the message is claimed: its drain may be sending it; try again once it settles.',
  ],
  flags: { json: JSON_FLAG },
  positionals: true,
  parse: (input): DiscardArguments => ({
    id: singleMessageId('discard', input.positionals),
    json: input.has('json'),
  }),
  async run(args, { io, config }) {
    const outbox = outboxFromEnv(io.env, config);
    return withDatabase({ io, config }, outbox, async ({ store }) => {
      const previousState = await store.discard(args.id);
      if (previousState === null) {
        // discard says only "not deleted"; read the row to say why.
        const message = await store.get(args.id);
        throw new CliError(
          'CLI_FAILED',
          message === null
            ? `discard: no message with id ${args.id}`
            : message.state === 'claimed'
              ? `discard: message ${args.id} is claimed: a drain may be sending it right now; try again once it settles`
              : `discard: message ${args.id} changed state while discarding (now ${message.state}); try again`,
        );
      }
      if (args.json) {
        writeJson(io.stdout, { id: args.id, discarded: true, previousState });
      } else {
        writeLine(io.stdout, `discarded message ${args.id} (was ${previousState})`);
      }
      return ExitCode.ok;
    });
  },
});
