import { ExitCode } from '../cli-errors.js';
import { writeJson, writeLine } from '../cli-io.js';
import { defineCommand, JSON_FLAG } from '../command.js';
import { outboxFromEnv, withDatabase } from '../database-from-env.js';

export interface MigrateArguments {
  json: boolean;
}

/** `outbox migrate`: brings the outbox schema up to date; safe to run again, and concurrently. */
export const migrateCommand = defineCommand({
  name: 'migrate',
  summary: 'create or update the outbox schema (idempotent)',
  usage: '[--json]',
  details: [
    "Applies the bundled migrations to the outbox schema (the config's schema, else OUTBOX_SCHEMA) in one transaction behind an advisory lock, so concurrent runs are safe.",
  ],
  flags: { json: JSON_FLAG },
  parse: (input): MigrateArguments => ({ json: input.has('json') }),
  async run(args, { io, config }) {
    const outbox = outboxFromEnv(io.env, config);
    const result = await withDatabase({ io, config }, outbox, ({ db }) => outbox.migrate(db));
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
  },
});
