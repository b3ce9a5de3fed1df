import type { MessageRecord, MessageState } from '../../core/outbox-store.js';
import type { ListArguments } from '../arguments.js';
import { ExitCode } from '../cli-errors.js';
import { type CliIo, writeJson, writeLine } from '../cli-io.js';
import { outboxFromEnv, withDatabase } from '../database-from-env.js';
import { formatTable, formatTime } from '../text-format.js';

/** The time column that matters for each state, and its heading. */
const TIME_COLUMN: Readonly<Record<MessageState, [string, (m: MessageRecord) => Date | null]>> = {
  pending: ['DUE', (m) => m.dueAt],
  claimed: ['LEASE ENDS', (m) => m.dueAt],
  delivered: ['DELIVERED', (m) => m.deliveredAt],
  dead: ['DEAD SINCE', (m) => m.deadAt],
};

/** `outbox list`: one page of messages in a state; prints the cursor of the next page. */
export async function runList(args: ListArguments, io: CliIo): Promise<ExitCode> {
  const outbox = outboxFromEnv(io.env);
  const page = await withDatabase(io, outbox, ({ store }) =>
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
}
