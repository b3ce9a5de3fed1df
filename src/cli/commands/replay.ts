import { userInfo } from 'node:os';
import { isValidationError } from '../../core/errors.js';
import {
  DEFAULT_REPLAY_BATCH_SIZE,
  DEFAULT_REPLAY_RATE_PER_SECOND,
  MAX_REPLAY_BATCH_SIZE,
  MAX_REPLAY_RATE_PER_SECOND,
  type ReplayProgress,
  type ReplayReport,
  replayMessages,
} from '../../core/replay.js';
import { checkReplaySelection, type ReplaySelection } from '../../core/replay-selection.js';
import { CliError, ExitCode, usageError } from '../cli-errors.js';
import { type CliIo, writeJson, writeLine, writeNote } from '../cli-io.js';
import { defineCommand, JSON_FLAG } from '../command.js';
import { outboxFromEnv, withDatabase } from '../database-from-env.js';
import { optionalInteger, parseDuration } from '../flag-values.js';
import { count, formatDuration, formatTable } from '../text-format.js';

export interface ReplayArguments {
  selection: ReplaySelection;
  execute: boolean;
  ratePerSecond: number;
  batchSize: number;
  /** Who the audit row names; undefined: the OS user. */
  by: string | undefined;
  json: boolean;
}

/** A progress line at most this often on a long run: often enough to see it move. */
export const REPLAY_PROGRESS_EVERY_MS = 1000;

/** The selection's fields by the flag that sets them, so a refused value names its flag. */
const FLAG_OF_FIELD: Readonly<Record<string, string>> = {
  state: '--state',
  kinds: '--kind',
  destination: '--destination',
  orderingKeys: '--ordering-key',
  errorContains: '--error',
  since: '--since',
  until: '--until',
  ids: '--ids',
  afterId: '--after-id',
};

/**
 * `outbox replay --state dead|delivered [filters]`: a dry run (count and sample) unless
 * `--execute`, which then replays the selection in batches at `--rate`, with a progress line a
 * second on stderr. The first Ctrl-C stops before the next batch: what was replayed stays
 * replayed, the audit row says `stopped` and how many, and the command exits 1 naming the
 * `--after-id` to go on from.
 */
export const replayCommand = defineCommand({
  name: 'replay',
  summary: 'send dead or delivered messages again, by filter (dry run unless --execute)',
  usage:
    '--state dead|delivered [--kind K,..] [--destination D] [--ordering-key K] [--error TEXT] [--since T] [--until T] [--ids N,..] [--after-id N] [--execute [--rate N] [--batch-size N]] [--by NAME] [--json]',
  details: [
    'Dead messages go back to pending in place; delivered ones are taken out of history and sent again. Either way a message keeps its id and key (receivers drop a copy they already have) and gets a fresh set of attempts, due now, so per-key order holds: a replayed message goes before the later messages of its ordering key.',
    'Filters narrow the selection and combine: --destination is the start of a webhook URL without its scheme (hooks.example.com/orders) or text in an email recipient (@example.com); --error is text in the last error; both ignore case and take % and _ as plain text. --since and --until take an ISO time or an age (2h: two hours ago) and compare the dead or delivered time.',
    'Without --execute, prints the exact count and a few matching messages, and writes nothing but an audit row. Every run that matches anything writes one audit row (who: --by, else the OS user). A run that matches nothing writes nothing.',
    'With --execute, the first Ctrl-C stops before the next batch: the batches done stay done, and the command exits 1 saying how many and where to go on (--after-id).',
  ],
  flags: {
    state: {
      type: 'string',
      placeholder: 'STATE',
      description: 'dead (redrive) or delivered (resend)',
    },
    kind: { type: 'string', placeholder: 'K,..', description: 'only these kinds' },
    destination: {
      type: 'string',
      placeholder: 'D',
      description: 'webhook URL prefix (host/path) or email recipient text',
    },
    'ordering-key': { type: 'string', placeholder: 'K', description: 'only this ordering key' },
    error: { type: 'string', placeholder: 'TEXT', description: 'last error contains this' },
    since: {
      type: 'string',
      placeholder: 'T',
      description: 'dead or delivered at or after (ISO or age)',
    },
    until: {
      type: 'string',
      placeholder: 'T',
      description: 'dead or delivered before (ISO or age)',
    },
    ids: { type: 'string', placeholder: 'N,..', description: 'only these message ids' },
    'after-id': {
      type: 'string',
      placeholder: 'N',
      description: 'only ids above this (go on after a stop)',
    },
    execute: { type: 'boolean', description: 'replay them (without it: a dry run)' },
    rate: {
      type: 'string',
      placeholder: 'N',
      description: `messages per second, 1 to ${MAX_REPLAY_RATE_PER_SECOND} (default ${DEFAULT_REPLAY_RATE_PER_SECOND})`,
    },
    'batch-size': {
      type: 'string',
      placeholder: 'N',
      description: `messages per statement, 1 to ${MAX_REPLAY_BATCH_SIZE} (default ${DEFAULT_REPLAY_BATCH_SIZE})`,
    },
    by: {
      type: 'string',
      placeholder: 'NAME',
      description: 'who the audit row names (default: OS user)',
    },
    json: JSON_FLAG,
  },
  parse(input): ReplayArguments {
    const state = input.string('state');
    if (state === undefined) {
      throw usageError('--state: give dead (redrive) or delivered (resend): replay never guesses');
    }
    const now = Date.now();
    const list = (name: string) =>
      input
        .string(name)
        ?.split(',')
        .map((each) => each.trim());
    const time = (name: string) => {
      const text = input.string(name);
      if (text === undefined || /^\d{4}-/.test(text)) return text;
      return new Date(now - parseDuration(text, `--${name}`)).toISOString();
    };
    const given = {
      state,
      kinds: list('kind'),
      destination: input.string('destination'),
      orderingKeys:
        input.string('ordering-key') === undefined ? undefined : [input.string('ordering-key')],
      errorContains: input.string('error'),
      since: time('since'),
      until: time('until'),
      ids: list('ids'),
      afterId: input.string('after-id'),
    };
    let selection: ReplaySelection;
    try {
      selection = checkReplaySelection(
        Object.fromEntries(Object.entries(given).filter(([, value]) => value !== undefined)),
      );
    } catch (error) {
      if (!isValidationError(error)) throw error;
      const [field = ''] = error.field.replace(/^selection\./, '').split(/[.[]/);
      const reason = error.message.slice(error.field.length + 2);
      throw usageError(`${FLAG_OF_FIELD[field] ?? field}: ${reason}`);
    }
    const execute = input.has('execute');
    const rate = input.string('rate');
    const batch = input.string('batch-size');
    if (!execute && (rate !== undefined || batch !== undefined)) {
      throw usageError(`--${rate === undefined ? 'batch-size' : 'rate'}: only with --execute`);
    }
    const by = input.string('by');
    if (by !== undefined && (by.trim() === '' || by.length > 200)) {
      throw usageError('--by: expected a name of 1 to 200 characters');
    }
    return {
      selection,
      execute,
      ratePerSecond:
        optionalInteger(rate, '--rate', 1, MAX_REPLAY_RATE_PER_SECOND) ??
        DEFAULT_REPLAY_RATE_PER_SECOND,
      batchSize:
        optionalInteger(batch, '--batch-size', 1, MAX_REPLAY_BATCH_SIZE) ??
        DEFAULT_REPLAY_BATCH_SIZE,
      by,
      json: input.has('json'),
    };
  },
  async run(args, { io, config }) {
    const outbox = outboxFromEnv(io.env, config);
    const report = await withDatabase({ io, config }, outbox, async ({ store }) => {
      let lastLineAt = 0;
      return replayMessages({
        store: store.replays(),
        selection: args.selection,
        requestedBy: args.by ?? operatorName(io),
        dryRun: !args.execute,
        ratePerSecond: args.ratePerSecond,
        batchSize: args.batchSize,
        signal: io.signal,
        onProgress: (progress) => {
          if (progress.elapsedMs - lastLineAt < REPLAY_PROGRESS_EVERY_MS) return;
          lastLineAt = progress.elapsedMs;
          writeNote(io, progressLine(progress));
        },
      });
    });
    if (args.json) writeJson(io.stdout, report);
    else writeReport(io, args.selection, report);
    if (report.outcome !== 'stopped') return ExitCode.ok;
    if (args.json) return ExitCode.failed;
    throw new CliError(
      'CLI_FAILED',
      `replay: stopped after ${count(report.replayed, 'message')} of ${report.matched} (those stay replayed)${
        report.lastId === null ? '' : `; go on with --after-id ${report.lastId}`
      }`,
    );
  },
});

/** The OS user, for the audit row: what a shared bastion's operators are told apart by. */
function operatorName(io: CliIo): string {
  try {
    return userInfo().username || io.env.USER || 'unknown';
  } catch {
    return io.env.USER || 'unknown';
  }
}

function progressLine(progress: ReplayProgress): string {
  const share = Math.floor((progress.replayed * 100) / Math.max(1, progress.matched));
  return `replayed ${progress.replayed} of ${progress.matched} (${share}%) in ${formatDuration(progress.elapsedMs)}`;
}

function writeReport(io: CliIo, selection: ReplaySelection, report: ReplayReport): void {
  const what = `${selection.state} ${report.matched === 1 ? 'message' : 'messages'}`;
  if (report.outcome === 'empty') {
    writeLine(io.stdout, `no ${selection.state} messages match; nothing written`);
    return;
  }
  writeLine(io.stdout, `${report.matched} ${what} match${report.matched === 1 ? 'es' : ''}`);
  if (report.dryRun) {
    writeLine(
      io.stdout,
      formatTable([
        ['ID', 'KIND', 'ORDERING KEY', 'KEY', 'LAST ERROR'],
        ...report.sample.map((each) => [
          each.id,
          each.kind,
          each.orderingKey ?? '-',
          each.key,
          each.lastError ?? '-',
        ]),
      ]),
    );
    writeLine(
      io.stdout,
      `dry run (audit #${report.auditId}): run again with --execute to replay them`,
    );
    return;
  }
  writeLine(
    io.stdout,
    `replayed ${report.replayed} in ${count(report.batches, 'batch', 'batches')}, ${formatDuration(report.durationMs)} (audit #${report.auditId})`,
  );
}
