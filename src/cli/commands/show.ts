import { UUID_PATTERN } from '../../core/message.js';
import { isMessageId } from '../../core/message-id.js';
import type { MessageRecord } from '../../core/outbox-store.js';
import { traceIdOf } from '../../core/trace-context.js';
import { CliError, ExitCode, usageError } from '../cli-errors.js';
import { writeJson, writeLine } from '../cli-io.js';
import { defineCommand, JSON_FLAG } from '../command.js';
import { outboxFromEnv, withDatabase } from '../database-from-env.js';
import { formatTable, formatTime } from '../text-format.js';

export interface ShowArguments {
  /** The message id or key, as given. */
  target: { id: string } | { key: string };
  json: boolean;
}

/**
 * `outbox show <id|key>`: one message with its attempt history, found by its id (as `outbox
 * list` shows it) or by its key (as a receiver logged it).
 */
export const showCommand = defineCommand({
  name: 'show',
  summary: 'show one message and its attempts, by id or key',
  usage: '<id|key> [--json]',
  details: [
    'The key is the UUID receivers deduplicate on (the webhook-id header, the X-Outbox-Message-Key of an email). Each attempt shows when it started, how long it took, its outcome, the HTTP status or provider code, where it went and its error.',
  ],
  flags: { json: JSON_FLAG },
  positionals: true,
  parse(input): ShowArguments {
    const [target, extra] = input.positionals;
    if (target === undefined) {
      throw usageError('show: give a message id (as `outbox list` shows it) or key (a UUID)');
    }
    if (extra !== undefined) throw usageError('show: one message at a time');
    if (isMessageId(target)) return { target: { id: target }, json: input.has('json') };
    if (UUID_PATTERN.test(target)) return { target: { key: target }, json: input.has('json') };
    throw usageError(
      `show: "${target}" is neither a message id (a positive integer) nor a message key (a UUID)`,
    );
  },
  async run(args, { io, config }) {
    const outbox = outboxFromEnv(io.env, config);
    const { target } = args;
    const message = await withDatabase({ io, config }, outbox, ({ store }) =>
      'id' in target ? store.get(target.id) : store.getByKey(target.key),
    );
    if (message === null) {
      throw new CliError(
        'CLI_FAILED',
        'id' in target
          ? `show: no message with id ${target.id}`
          : `show: no message with key ${target.key}`,
      );
    }
    if (args.json) {
      writeJson(io.stdout, { message });
      return ExitCode.ok;
    }
    writeLine(io.stdout, formatTable(fieldRows(message)));
    writeLine(io.stdout);
    writeLine(io.stdout, attemptLines(message));
    return ExitCode.ok;
  },
});

function fieldRows(message: MessageRecord): string[][] {
  return [
    ['id', message.id],
    ['key', message.key],
    ['kind', message.kind],
    ['state', message.state],
    ['attempts', `${message.attempts} of ${message.maxAttempts}`],
    ['created', formatTime(message.createdAt)],
    [message.state === 'claimed' ? 'lease ends' : 'due', formatTime(message.dueAt)],
    ...(message.deliveredAt ? [['delivered', formatTime(message.deliveredAt)]] : []),
    ...(message.deadAt ? [['dead since', formatTime(message.deadAt)]] : []),
    ...(message.orderingKey ? [['ordering key', message.orderingKey]] : []),
    ...(message.dedupeKey ? [['dedupe key', message.dedupeKey]] : []),
    // The id to look the trace up by in a tracing backend; the full traceparent for tooling.
    ...(message.traceContext
      ? [
          ['trace id', traceIdOf(message.traceContext.traceparent) ?? '?'],
          ['traceparent', message.traceContext.traceparent],
        ]
      : []),
    ...(message.lastError ? [['last error', message.lastError]] : []),
  ];
}

/**
 * The attempts as a table, oldest first, or a line saying there are none; then how many were
 * counted but not recorded, if any.
 */
function attemptLines(message: MessageRecord): string {
  const attempts = message.attemptLog ?? [];
  const unrecorded = message.state === 'claimed' ? 0 : message.attempts - attempts.length;
  const note =
    unrecorded > 0
      ? `\n${unrecorded} attempt(s) not recorded: made before attempt history, or by a drain that stopped before recording the outcome (the gaps in the numbers)`
      : '';
  if (attempts.length === 0) return `no attempt recorded${note}`;
  const rows = attempts.map((attempt) => [
    attempt.attempt === null ? '-' : String(attempt.attempt),
    formatTime(attempt.at),
    attempt.durationMs === null ? '-' : `${attempt.durationMs}ms`,
    attempt.outcome,
    attempt.status === null ? '-' : String(attempt.status),
    attempt.providerCode ?? '-',
    attempt.destination ?? '-',
    attempt.error ?? '-',
  ]);
  const table = formatTable([
    ['ATTEMPT', 'TIME', 'DURATION', 'OUTCOME', 'STATUS', 'CODE', 'DESTINATION', 'ERROR'],
    ...rows,
  ]);
  return `${table}${note}`;
}
