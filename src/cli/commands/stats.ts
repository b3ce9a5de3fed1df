import type { StatsArguments } from '../arguments.js';
import { ExitCode } from '../cli-errors.js';
import { type CliIo, writeJson, writeLine } from '../cli-io.js';
import { outboxFromEnv, withDatabase } from '../database-from-env.js';
import { formatDuration, formatTable, formatTime } from '../text-format.js';

/** `outbox stats`: counts by state, and how far behind the drains are. */
export async function runStats(args: StatsArguments, io: CliIo): Promise<ExitCode> {
  const outbox = outboxFromEnv(io.env);
  const stats = await withDatabase(io, outbox, ({ store }) => store.stats(new Date()));
  if (args.json) {
    writeJson(io.stdout, stats);
    return ExitCode.ok;
  }
  const lag =
    stats.oldestDueAt === null
      ? '0s (nothing waiting)'
      : `${formatDuration(stats.lagMs)} (oldest due ${formatTime(stats.oldestDueAt)})`;
  const inFlight = stats.claimed + stats.leaseExpired;
  writeLine(
    io.stdout,
    formatTable([
      ['pending', String(stats.pending), `${stats.due} due now`],
      [
        'claimed',
        String(inFlight),
        stats.leaseExpired > 0 ? `${stats.leaseExpired} with an expired lease (drain stopped)` : '',
      ],
      ['delivered', String(stats.delivered), ''],
      ['dead', String(stats.dead), stats.dead > 0 ? 'see: outbox list --state dead' : ''],
    ]),
  );
  writeLine(io.stdout, `lag ${lag}`);
  return ExitCode.ok;
}
