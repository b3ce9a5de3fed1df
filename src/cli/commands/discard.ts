import type { DiscardArguments } from '../arguments.js';
import { CliError, ExitCode } from '../cli-errors.js';
import { type CliIo, writeJson, writeLine } from '../cli-io.js';
import { outboxFromEnv, withDatabase } from '../database-from-env.js';

/**
 * `outbox discard <id>`: deletes a message that is not being delivered. A claimed message is
 * refused (exit 1): its drain may be sending it right now.
 */
export async function runDiscard(args: DiscardArguments, io: CliIo): Promise<ExitCode> {
  const outbox = outboxFromEnv(io.env);
  return withDatabase(io, outbox, async ({ store }) => {
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
}
