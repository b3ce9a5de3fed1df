import type { MigrateArguments } from '../arguments.js';
import { ExitCode } from '../cli-errors.js';
import { type CliIo, writeJson, writeLine } from '../cli-io.js';
import { outboxFromEnv, withDatabase } from '../database-from-env.js';

/** `outbox migrate`: brings OUTBOX_SCHEMA up to date; safe to run again, and concurrently. */
export async function runMigrate(args: MigrateArguments, io: CliIo): Promise<ExitCode> {
  const outbox = outboxFromEnv(io.env);
  const result = await withDatabase(io, outbox, ({ db }) => outbox.migrate(db));
  if (args.json) {
    writeJson(io.stdout, result);
  } else if (result.applied.length === 0) {
    writeLine(io.stdout, `schema ${result.schema} is up to date (version ${result.version})`);
  } else {
    writeLine(
      io.stdout,
      `schema ${result.schema}: applied ${result.applied.join(', ')}; now at version ${result.version}`,
    );
  }
  return ExitCode.ok;
}
