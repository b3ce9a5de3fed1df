import type { Context } from 'hono';
import type { DestinationRecord } from '../core/destination-health.js';
import { isMessageId } from '../core/message-id.js';
import type { MessageState } from '../core/outbox-store.js';
import { pausedUntilResumed } from '../store/destination-store.js';
import { formatCount, formatTime } from './display-format.js';
import type { Flash } from './page-layout.js';

/**
 * The note shown after an action's redirect. Chosen from fixed sentences by code; the query
 * string never reaches the page except as a checked message id or count.
 */
export function flashFromQuery(c: Context): Flash | null {
  const done = c.req.query('done');
  const idText = c.req.query('id') ?? '';
  const id = isMessageId(idText) ? idText : null;
  const count = countFromQuery(c, 'count');
  switch (done) {
    case 'retried':
      return id
        ? { tone: 'ok', text: `Message ${id} is pending again; the next drain will send it.` }
        : null;
    case 'retried-all':
      if (count === null) return null;
      if (count === 0) return { tone: 'warn', text: 'There were no dead messages to retry.' };
      return {
        tone: 'ok',
        text: `${formatCount(count)} dead ${count === 1 ? 'message is' : 'messages are'} pending again.`,
      };
    case 'discarded':
      return id ? { tone: 'ok', text: `Message ${id} was discarded.` } : null;
    case 'not-dead':
      return id
        ? { tone: 'warn', text: `Message ${id} is no longer dead; nothing changed.` }
        : null;
    case 'missing':
      return id ? { tone: 'warn', text: `Message ${id} no longer exists.` } : null;
    default:
      return null;
  }
}

/** The codes a list action redirects with. */
export type ListFlashCode = 'retried' | 'discarded' | 'retried-matching' | 'discarded-matching';

/**
 * The note on a list page after one of its actions: `count` changed, of `of` ticked (a
 * selection) or of at most `limit` (all that match). Fixed sentences again; only checked counts
 * and the list's own (checked) state reach the page.
 */
export function listFlashFromQuery(c: Context, state: MessageState): Flash | null {
  const done = c.req.query('done');
  const count = countFromQuery(c, 'count');
  if (count === null) return null;
  const messages = `${formatCount(count)} ${count === 1 ? 'message' : 'messages'}`;
  const changed =
    done === 'retried' || done === 'retried-matching'
      ? state === 'dead'
        ? 'pending again'
        : 'due now'
      : 'discarded';
  switch (done) {
    case 'retried':
    case 'discarded': {
      const of = countFromQuery(c, 'of');
      if (of === null || of < count) return null;
      const left = of - count;
      const text = `${messages} of the ${formatCount(of)} ticked ${count === 1 ? 'is' : 'are'} ${changed}.`;
      if (left === 0) return { tone: 'ok', text };
      return {
        tone: 'warn',
        text: `${text} ${formatCount(left)} had left the ${state} state since the page was drawn and ${left === 1 ? 'was' : 'were'} left as ${left === 1 ? 'it was' : 'they were'}.`,
      };
    }
    case 'retried-matching':
    case 'discarded-matching': {
      const limit = countFromQuery(c, 'limit');
      if (count === 0)
        return { tone: 'warn', text: `No ${state} messages matched; nothing changed.` };
      const text = `${messages} that matched ${count === 1 ? 'is' : 'are'} ${changed}.`;
      if (limit === null || count < limit) return { tone: 'ok', text };
      return {
        tone: 'warn',
        text: `${text} That is the most one press takes (${formatCount(limit)}): more may match, so press again for the rest.`,
      };
    }
    default:
      return null;
  }
}

/** The codes a destination's buttons redirect with. */
export type DestinationFlashCode = 'paused' | 'resumed' | 'missing';

/**
 * The note on the destinations page after a pause or resume. The query's destination is named
 * only when it is one of the rows shown (and then as that row has it), so a forged link cannot
 * make the page say something of a name it made up; the pause's end is the row's own.
 */
export function destinationFlashFromQuery(
  c: Context,
  shown: readonly DestinationRecord[],
): Flash | null {
  const done = c.req.query('done');
  const count = countFromQuery(c, 'count');
  const named = c.req.query('destination');
  const record = shown.find((each) => each.destination === named);
  const messages = (noun: string) =>
    count === null ? '' : ` ${formatCount(count)} ${noun}${count === 1 ? '' : 's'}`;
  switch (done) {
    case 'paused': {
      if (!record || record.pausedUntil === null) return { tone: 'ok', text: 'Paused.' };
      const until = pausedUntilResumed(record)
        ? 'until resumed'
        : `until ${formatTime(record.pausedUntil)} UTC`;
      const held = count === null ? '' : `:${messages('pending message')} held`;
      return { tone: 'ok', text: `${record.destination} is paused ${until}${held}.` };
    }
    case 'resumed': {
      if (!record) return { tone: 'ok', text: 'Resumed.' };
      const due = count === null ? '' : `:${messages('message')} due now`;
      return { tone: 'ok', text: `${record.destination} is sent to again${due}.` };
    }
    case 'missing':
      return {
        tone: 'warn',
        text: 'That destination has no record (it never failed and was never paused): there was nothing to resume.',
      };
    default:
      return null;
  }
}

function countFromQuery(c: Context, name: string): number | null {
  const text = c.req.query(name) ?? '';
  return /^[0-9]{1,9}$/.test(text) ? Number(text) : null;
}
