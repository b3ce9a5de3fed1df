import { DEFAULT_PURGE_LIMIT, purgeOnce } from '../../core/purge.js';
import { ExitCode, usageError } from '../cli-errors.js';
import { writeJson, writeLine } from '../cli-io.js';
import { defineCommand, JSON_FLAG } from '../command.js';
import { outboxFromEnv, withDatabase } from '../database-from-env.js';
import { optionalInteger, parseDuration } from '../flag-values.js';

export interface PurgeArguments {
  /** null keeps delivered messages. */
  deliveredOlderThanMs: number | null;
  /** null keeps dead messages. */
  deadOlderThanMs: number | null;
  limit: number;
  json: boolean;
}

/**
 * `outbox purge`: deletes delivered and dead messages older than the given ages, oldest first,
 * in bounded statements, at most `--limit` rows. Pending and claimed messages are never touched.
 */
export const purgeCommand = defineCommand({
  name: 'purge',
  summary: 'delete old delivered and dead messages, in bounded batches',
  usage: '--older-than 7d | --delivered-older-than D | --dead-older-than D [--limit N] [--json]',
  details: [
    '--older-than applies to both delivered and dead messages; the specific flags override it for one state, and a state with no age is kept. Pending and claimed messages are never touched.',
  ],
  flags: {
    'older-than': {
      type: 'string',
      placeholder: 'DURATION',
      description: 'delete delivered and dead messages older than this',
    },
    'delivered-older-than': {
      type: 'string',
      placeholder: 'DURATION',
      description: 'delete delivered messages older than this',
    },
    'dead-older-than': {
      type: 'string',
      placeholder: 'DURATION',
      description: 'delete dead messages older than this',
    },
    limit: {
      type: 'string',
      placeholder: 'N',
      description: `delete at most this many rows in all (default ${DEFAULT_PURGE_LIMIT})`,
    },
    json: JSON_FLAG,
  },
  parse(input): PurgeArguments {
    const age = (name: string) => {
      const text = input.string(name);
      return text === undefined ? undefined : parseDuration(text, `--${name}`);
    };
    const both = age('older-than');
    const delivered = age('delivered-older-than') ?? both;
    const deadAge = age('dead-older-than') ?? both;
    if (delivered === undefined && deadAge === undefined) {
      throw usageError(
        'purge: give --older-than (or --delivered-older-than / --dead-older-than): purge never guesses an age',
      );
    }
    return {
      deliveredOlderThanMs: delivered ?? null,
      deadOlderThanMs: deadAge ?? null,
      limit:
        optionalInteger(input.string('limit'), '--limit', 1, Number.MAX_SAFE_INTEGER) ??
        DEFAULT_PURGE_LIMIT,
      json: input.has('json'),
    };
  },
  async run(args, { io, config }) {
    const outbox = outboxFromEnv(io.env, config);
    const report = await withDatabase({ io, config }, outbox, ({ store }) =>
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
  },
});
