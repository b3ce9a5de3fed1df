import type { EnqueueArguments } from '../arguments.js';
import { ExitCode } from '../cli-errors.js';
import { type CliIo, writeJson, writeLine } from '../cli-io.js';
import { outboxFromEnv, withDatabase } from '../database-from-env.js';

/**
 * `outbox enqueue`: writes one message and prints its key (the existing message's key when the
 * dedupe key is taken). The message is validated before connecting, so a rejected one exits 2
 * having written nothing, whatever the database's state.
 */
export async function runEnqueue(args: EnqueueArguments, io: CliIo): Promise<ExitCode> {
  const outbox = outboxFromEnv(io.env);
  // Builds the statement without running it: throws ValidationError naming the field.
  outbox.enqueueStatement(args.message);
  const [key] = await withDatabase(io, outbox, ({ db }) => outbox.enqueue(db, args.message));
  if (args.json) {
    writeJson(io.stdout, { key });
  } else {
    writeLine(io.stdout, key);
  }
  return ExitCode.ok;
}
