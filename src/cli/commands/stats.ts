import { ExitCode } from '../cli-errors.js';
import { writeJson, writeLine } from '../cli-io.js';
import { defineCommand, JSON_FLAG } from '../command.js';
import { outboxFromEnv, withDatabase } from '../database-from-env.js';
import { formatDuration, formatTable, formatTime } from '../text-format.js';

export interface StatsArguments {
  json: boolean;
}

/** `outbox stats`: counts by state, and how far behind the drains are. */
export const statsCommand = defineCommand({
  name: 'stats',
  summary: 'count messages by state and show the delivery lag',
  usage: '[--json]',
  details: [
    'Lag is the age of the oldest message a drain could take now and has not: how far behind the drains are.',
    'Held messages are due but wait behind an unfinished earlier message of their ordering key (a dead one too, with deadHeadBlocks); they are counted apart, not as due and not in the lag.',
  ],
  flags: { json: JSON_FLAG },
  parse: (input): StatsArguments => ({ json: input.has('json') }),
  async run(args, { io, config }) {
    const outbox = outboxFromEnv(io.env, config);
    const stats = await withDatabase({ io, config }, outbox, ({ store }) =>
      store.stats(new Date(), { deadHeadBlocks: config.drain?.deadHeadBlocks }),
    );
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
        [
          'pending',
          String(stats.pending),
          stats.held > 0
            ? `${stats.due} due now, ${stats.held} held by ordering key`
            : `${stats.due} due now`,
        ],
        [
          'claimed',
          String(inFlight),
          stats.leaseExpired > 0
            ? `${stats.leaseExpired} with an expired lease (drain stopped)`
            : '',
        ],
        ['delivered', String(stats.delivered), ''],
        ['dead', String(stats.dead), stats.dead > 0 ? 'see: outbox list --state dead' : ''],
      ]),
    );
    writeLine(io.stdout, `lag ${lag}`);
    return ExitCode.ok;
  },
});
