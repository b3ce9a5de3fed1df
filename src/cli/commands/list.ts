import { MESSAGE_STATES, type MessageRecord, type MessageState } from '../../core/outbox-store.js';
import { MAX_LIST_LIMIT } from '../../store/postgres-store.js';
import { ExitCode, usageError } from '../cli-errors.js';
import { writeJson, writeLine } from '../cli-io.js';
import { defineCommand, JSON_FLAG } from '../command.js';
import { outboxFromEnv, withDatabase } from '../database-from-env.js';
import { optionalInteger } from '../flag-values.js';
import { formatTable, formatTime } from '../text-format.js';

export interface ListArguments {
  state: MessageState;
  kind: string | undefined;
  limit: number | undefined;
  cursor: string | undefined;
  json: boolean;
}

/** The time column that matters for each state, and its heading. */
const TIME_COLUMN: Readonly<Record<MessageState, [string, (m: MessageRecord) => Date | null]>> = {
  pending: ['DUE', (m) => m.dueAt],
  claimed: ['LEASE ENDS', (m) => m.dueAt],
  delivered: ['DELIVERED', (m) => m.deliveredAt],
  dead: ['DEAD SINCE', (m) => m.deadAt],
};

function isMessageState(text: string): text is MessageState {
  return (MESSAGE_STATES as readonly string[]).includes(text);
}

/** `outbox list`: one page of messages in a state; prints the cursor of the next page. */
export const listCommand = defineCommand({
  name: 'list',
  summary: 'list the messages in one state, a page at a time',
  usage: '--state pending|claimed|delivered|dead [--kind K] [--limit N] [--cursor C] [--json]',
  details: [
    'Pending and claimed messages come in due order, delivered and dead ones newest first. When there is another page, the last line shows the --cursor that fetches it.',
  ],
  flags: {
    state: { type: 'string', placeholder: 'STATE', description: MESSAGE_STATES.join(', ') },
    kind: { type: 'string', placeholder: 'K', description: 'only messages of this kind' },
    limit: {
      type: 'string',
      placeholder: 'N',
      description: `messages per page, 1 to ${MAX_LIST_LIMIT} (default 50)`,
    },
    cursor: { type: 'string', placeholder: 'C', description: 'the cursor a previous page printed' },
    json: JSON_FLAG,
  },
  parse(input): ListArguments {
    const state = input.string('state');
    if (state === undefined) {
      throw usageError(`--state: required, one of ${MESSAGE_STATES.join(', ')}`);
    }
    if (!isMessageState(state)) {
      throw usageError(
        `--state: unknown state "${state}"; expected one of ${MESSAGE_STATES.join(', ')}`,
      );
    }
    return {
      state,
      kind: input.string('kind'),
      limit: optionalInteger(input.string('limit'), '--limit', 1, MAX_LIST_LIMIT),
      cursor: input.string('cursor'),
      json: input.has('json'),
    };
  },
  async run(args, { io, config }) {
    const outbox = outboxFromEnv(io.env, config);
    const page = await withDatabase({ io, config }, outbox, ({ store }) =>
      store.list({ state: args.state, kind: args.kind, limit: args.limit, cursor: args.cursor }),
    );
    if (args.json) {
      writeJson(io.stdout, page);
      return ExitCode.ok;
    }
    if (page.messages.length === 0) {
      const kind = args.kind === undefined ? '' : ` of kind ${args.kind}`;
      writeLine(io.stdout, `no ${args.state} messages${kind}${args.cursor ? ' on this page' : ''}`);
      return ExitCode.ok;
    }
    const [timeHeading, timeOf] = TIME_COLUMN[args.state];
    const showError = args.state !== 'delivered';
    const rows = page.messages.map((m) => [
      m.id,
      m.kind,
      m.key,
      `${m.attempts}/${m.maxAttempts}`,
      formatTime(timeOf(m)),
      m.orderingKey ?? '-',
      ...(showError ? [m.lastError ?? '-'] : []),
    ]);
    const header = ['ID', 'KIND', 'KEY', 'ATTEMPTS', timeHeading, 'ORDERING KEY'];
    writeLine(io.stdout, formatTable([showError ? [...header, 'LAST ERROR'] : header, ...rows]));
    if (page.nextCursor !== null) {
      const kind = args.kind === undefined ? '' : ` --kind ${args.kind}`;
      const limit = args.limit === undefined ? '' : ` --limit ${args.limit}`;
      writeLine(
        io.stdout,
        `next page: outbox list --state ${args.state}${kind}${limit} --cursor ${page.nextCursor}`,
      );
    }
    return ExitCode.ok;
  },
});
