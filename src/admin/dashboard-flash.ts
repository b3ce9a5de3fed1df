import type { Context } from 'hono';
import { isMessageId } from '../core/message-id.js';
import { formatCount } from './display-format.js';
import type { Flash } from './page-layout.js';

/**
 * The note shown after an action's redirect. Chosen from fixed sentences by code; the query
 * string never reaches the page except as a checked message id or count.
 */
export function flashFromQuery(c: Context): Flash | null {
  const done = c.req.query('done');
  const idText = c.req.query('id') ?? '';
  const id = isMessageId(idText) ? idText : null;
  const countText = c.req.query('count') ?? '';
  const count = /^[0-9]{1,9}$/.test(countText) ? Number(countText) : null;
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
