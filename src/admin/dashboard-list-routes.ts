/**
 * The dashboard's message lists and their actions, under the mount path:
 *
 * - `GET /dashboard/messages?state=&kind=&error=&orderingKey=&from=&until=&cursor=`: one state,
 *   filtered, page by page; pending rows held behind the head of their ordering key name it.
 * - `POST /dashboard/messages/retry`, `.../discard` (fields `id`, repeated, and the filter): the
 *   ticked rows, those still in the list's state.
 * - `POST /dashboard/messages/retry-matching`, `.../discard-matching` (the filter and
 *   `confirm=all`): every row of the state that matches, at most {@link DASHBOARD_MATCH_LIMIT}
 *   per press, in one statement.
 *
 * Only dead and pending rows are acted on (a claimed row is its drain's). A refused field is a
 * 400 that names it, and nothing is written; a done action redirects 303 back to the same list
 * with a count (post/redirect/get).
 */
import type { Context, Hono, MiddlewareHandler } from 'hono';
import { isValidationError } from '../core/errors.js';
import { isMessageId } from '../core/message-id.js';
import type { MessageRecord } from '../core/outbox-store.js';
import { ACTIONABLE_STATES, type HoldingHead } from '../store/message-filter.js';
import type { AdminEnv, ResolvedAdmin } from './admin-options.js';
import { type ListFlashCode, listFlashFromQuery } from './dashboard-flash.js';
import { frameOf, pathsOf, refuse, render } from './dashboard-replies.js';
import { type FormBody, formText, formTexts } from './form-fields.js';
import { filterQuery, type ListFilterFields, readListFilter } from './list-filter.js';
import { messageListPage } from './message-list-page.js';

/** Rows per page of the message list: a screenful or two, and the most one selection holds. */
export const DASHBOARD_PAGE_SIZE = 50;

/**
 * The most one "all that match" press changes: a thousand row locks in one short statement, so
 * a press never turns into a long transaction. More than that, and the page says to press again.
 */
export const DASHBOARD_MATCH_LIMIT = 1000;

/** Registers the list and its actions on `app`, each behind `signedIn`. */
export function registerListRoutes(
  app: Hono<AdminEnv>,
  admin: ResolvedAdmin,
  signedIn: MiddlewareHandler<AdminEnv>,
): void {
  const { store, clock } = admin;

  app.get('/dashboard/messages', signedIn, async (c) => {
    const read = readListFilter((name) => c.req.query(name), admin.kinds);
    const cursor = c.req.query('cursor') || undefined;
    const frame = await frameOf(admin, c, clock.now());
    const view = {
      fields: read.fields,
      kinds: admin.kinds,
      matchLimit: DASHBOARD_MATCH_LIMIT,
      messages: [] as MessageRecord[],
      heads: new Map<string, HoldingHead>(),
      nextHref: null as string | null,
      paged: cursor !== undefined,
      flash: null,
    };
    if (!read.ok) {
      const problem = `Filter ${read.field}: ${read.problem}.`;
      return render(c, 400, messageListPage(frame, { ...view, problem }));
    }
    try {
      const list = await store.list({ ...read.filter, limit: DASHBOARD_PAGE_SIZE, cursor });
      view.messages = list.messages;
      if (read.filter.state === 'pending') {
        const keyed = list.messages.filter((message) => message.orderingKey !== null);
        view.heads = await store.holdingHeads(
          keyed.map((message) => message.id),
          { deadHeadBlocks: admin.deadHeadBlocks },
        );
      }
      if (list.nextCursor) {
        const query = filterQuery(read.fields);
        query.set('cursor', list.nextCursor);
        view.nextHref = `${pathsOf(c).messages}?${query}`;
      }
    } catch (error) {
      if (!isValidationError(error)) throw error;
      // The error's message already starts with its field: `cursor: is not a cursor ...`.
      const problem = `Filter ${error.message}.`;
      return render(c, 400, messageListPage(frame, { ...view, paged: true, problem }));
    }
    const flash = listFlashFromQuery(c, read.filter.state);
    return render(c, 200, messageListPage(frame, { ...view, flash, problem: null }));
  });

  for (const action of ['retry', 'discard'] as const) {
    app.post(`/dashboard/messages/${action}`, signedIn, async (c) => {
      const form = (await c.req.parseBody({ all: true })) as FormBody;
      const read = actionFilter(c, admin, form);
      if (!read.ok) return read.refusal;
      const ids = formTexts(form, 'id');
      if (ids.length === 0) return refuse(c, 'id', 'tick at least one message');
      if (ids.length > DASHBOARD_PAGE_SIZE) {
        return refuse(c, 'id', `at most ${DASHBOARD_PAGE_SIZE} messages at once`);
      }
      if (!ids.every(isMessageId)) return refuse(c, 'id', 'each must be a message id');
      const wanted = [...new Set(ids)];
      const { state } = read.fields;
      const changed =
        action === 'retry'
          ? await store.retryMessages(wanted, state, clock.now())
          : await store.discardMessages(wanted, state);
      const done: ListFlashCode = action === 'retry' ? 'retried' : 'discarded';
      return backToList(c, read.fields, done, { count: changed.length, of: wanted.length });
    });

    app.post(`/dashboard/messages/${action}-matching`, signedIn, async (c) => {
      const form = (await c.req.parseBody({ all: true })) as FormBody;
      const read = actionFilter(c, admin, form);
      if (!read.ok) return read.refusal;
      if (formText(form, 'confirm') !== 'all') {
        return refuse(c, 'confirm', 'tick the box to act on every message that matches');
      }
      const count =
        action === 'retry'
          ? await store.retryMatching(read.filter, DASHBOARD_MATCH_LIMIT, clock.now())
          : await store.discardMatching(read.filter, DASHBOARD_MATCH_LIMIT);
      const done: ListFlashCode = action === 'retry' ? 'retried-matching' : 'discarded-matching';
      return backToList(c, read.fields, done, { count, limit: DASHBOARD_MATCH_LIMIT });
    });
  }
}

/**
 * The filter an action form carries, checked as the list checks it; and its state, which must
 * be given and be one an operator may act on.
 */
function actionFilter(c: Context<AdminEnv>, admin: ResolvedAdmin, form: FormBody) {
  const read = readListFilter((name) => formText(form, name), admin.kinds);
  if (!read.ok) return { ok: false as const, refusal: refuse(c, read.field, read.problem) };
  if (formText(form, 'state') === undefined) {
    return { ok: false as const, refusal: refuse(c, 'state', 'is missing') };
  }
  if (!ACTIONABLE_STATES.includes(read.filter.state)) {
    const states = ACTIONABLE_STATES.join(' or ');
    return {
      ok: false as const,
      refusal: refuse(c, 'state', `must be ${states}: only those can be retried or discarded`),
    };
  }
  return read;
}

function backToList(
  c: Context<AdminEnv>,
  fields: ListFilterFields,
  done: ListFlashCode,
  counts: Record<string, number>,
): Response {
  const query = filterQuery(fields);
  query.set('done', done);
  for (const [name, count] of Object.entries(counts)) query.set(name, String(count));
  return c.redirect(`${pathsOf(c).messages}?${query}`, 303);
}
