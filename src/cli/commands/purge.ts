import { purgeOnce } from '../../core/purge.js';
import type { PurgeArguments } from '../arguments.js';
import { ExitCode } from '../cli-errors.js';
import { type CliIo, writeJson, writeLine } from '../cli-io.js';
import { outboxFromEnv, withDatabase } from '../database-from-env.js';

/**
 * `outbox purge`: deletes delivered and dead messages older than the given ages, oldest first,
 * in bounded statements, at most `--limit` rows. Pending and claimed messages are never touched.
 */
export async function runPurge(args: PurgeArguments, io: CliIo): Promise<ExitCode> {
  const outbox = outboxFromEnv(io.env);
  const report = await withDatabase(io, outbox, ({ store }) =>
    purgeOnce({
      store,
      deliveredOlderThanMs: args.deliveredOlderThanMs,
      deadOlderThanMs: args.deadOlderThanMs,
      limit: args.limit,
    }),
  );
  const deleted = report.deliveredDeleted + report.deadDeleted;
  const limitReached = deleted >= args.limit;
  if (args.json) {
    writeJson(io.stdout, { ...report, limitReached });
    return ExitCode.ok;
  }
  writeLine(
    io.stdout,
    `purged ${report.deliveredDeleted} delivered and ${report.deadDeleted} dead ${deleted === 1 ? 'message' : 'messages'}`,
  );
  if (limitReached) {
    writeLine(io.stdout, `stopped at --limit ${args.limit}: run again to purge more`);
  }
  return ExitCode.ok;
}
