/**
 * Replay on the dashboard, script-free, under the mount path:
 *
 * - `POST /dashboard/replays/dry-run` (a list's filter with `scope=matching`, or its ticked `id`s
 *   with `scope=selected`; dead or delivered): counts what it would take ({@link countReplay}) and
 *   shows the count and a sample, with the button that runs it. Writes nothing.
 * - `POST /dashboard/replays` (`selection` as the confirmation wrote it, `seen` the count shown):
 *   replays it for at most {@link DASHBOARD_REPLAY_BUDGET_MS}, then 303 to its audit row. More
 *   matching now than `seen`: refused (409, the new count shown), nothing written. Nothing
 *   matching: nothing written, 303 to the replays page saying so.
 * - `GET /dashboard/replays?before=`: the audit rows, newest first; `GET /dashboard/replays/:id`
 *   one of them, with "continue" when a run stopped (its `lastId` in the query).
 *
 * A refused field is a 400 naming it, before anything is read or written.
 */
import type { Context, Hono, MiddlewareHandler } from 'hono';
import { isMessageId } from '../core/message-id.js';
import { countReplay, replayMessages } from '../core/replay.js';
import type { AdminEnv, ResolvedAdmin } from './admin-options.js';
import { frameOf, notice, pathsOf, refuse, render } from './dashboard-replies.js';
import type { FormBody } from './form-fields.js';
import { formText } from './form-fields.js';
import { filterQuery, readListFilter } from './list-filter.js';
import { readCarriedSelection, readFirstPress, readPositiveCount } from './replay-form.js';
import { replayConfirmPage, replayResultPage, replaysPage } from './replay-pages.js';
import { requester } from './replay-routes.js';

/**
 * One press replays for at most 5 s (about 5,000 messages at the default rate), then stops and
 * offers to continue: an operator waits that long for a page, and it stays far inside any
 * proxy's or serverless platform's request timeout (commonly 30 s and more).
 */
export const DASHBOARD_REPLAY_BUDGET_MS = 5_000;

/** Audit rows per page of the replays page. */
export const DASHBOARD_REPLAYS_PAGE_SIZE = 25;

/** Registers the replay routes on `app`, each behind `signedIn`. */
export function registerReplayPages(
  app: Hono<AdminEnv>,
  admin: ResolvedAdmin,
  signedIn: MiddlewareHandler<AdminEnv>,
): void {
  const { store, clock } = admin;

  app.post('/dashboard/replays/dry-run', signedIn, async (c) => {
    const form = (await c.req.parseBody({ all: true })) as FormBody;
    const read = readFirstPress(form, admin.kinds);
    if (!read.ok) return refuse(c, read.field, read.problem);
    const { matched, sample } = await countReplay(store.replays(), read.selection);
    const frame = await frameOf(admin, c, clock.now());
    return render(
      c,
      200,
      replayConfirmPage(frame, {
        selection: read.selection,
        matched,
        sample,
        backHref: backToList(c, form),
        seen: null,
        budgetMs: DASHBOARD_REPLAY_BUDGET_MS,
      }),
    );
  });

  app.post('/dashboard/replays', signedIn, async (c) => {
    const form = (await c.req.parseBody({ all: true })) as FormBody;
    const read = readCarriedSelection(form);
    if (!read.ok) return refuse(c, read.field, read.problem);
    const seen = readPositiveCount(form, 'seen');
    if (seen === null) return refuse(c, 'seen', 'must be the count the confirmation showed');
    const { selection } = read;
    const report = await replayMessages({
      store: store.replays(),
      selection,
      requestedBy: requester(c.get('adminAuth'), undefined),
      budgetMs: DASHBOARD_REPLAY_BUDGET_MS,
      matchedAtMost: seen,
      signal: c.req.raw.signal,
      clock,
    });
    const paths = pathsOf(c);
    if (report.outcome === 'grew') {
      const frame = await frameOf(admin, c, clock.now());
      return render(
        c,
        409,
        replayConfirmPage(frame, {
          selection,
          matched: report.matched,
          sample: report.sample,
          backHref: `${paths.messages}?state=${selection.state}`,
          seen,
          budgetMs: DASHBOARD_REPLAY_BUDGET_MS,
        }),
      );
    }
    if (report.auditId === null) return c.redirect(`${paths.replays}?done=empty`, 303);
    const query = report.lastId ? `?${new URLSearchParams({ lastId: report.lastId })}` : '';
    return c.redirect(`${paths.replay(report.auditId)}${query}`, 303);
  });

  app.get('/dashboard/replays', signedIn, async (c) => {
    const before = c.req.query('before') || undefined;
    if (before !== undefined && !isMessageId(before)) {
      return notice(c, 400, 'Bad request', 'Field before: must be a replay id.');
    }
    const audits = await store
      .replays()
      .listReplayAudits({ limit: DASHBOARD_REPLAYS_PAGE_SIZE, beforeId: before });
    const last = audits.at(-1);
    const paths = pathsOf(c);
    const frame = await frameOf(admin, c, clock.now());
    const empty = c.req.query('done') === 'empty';
    return render(
      c,
      200,
      replaysPage(frame, {
        audits,
        nextHref:
          last && audits.length === DASHBOARD_REPLAYS_PAGE_SIZE
            ? `${paths.replays}?${new URLSearchParams({ before: last.id })}`
            : null,
        paged: before !== undefined,
        flash: empty
          ? {
              tone: 'warn',
              text: 'Nothing matched that selection any more: nothing was replayed, and no row was written.',
            }
          : null,
      }),
    );
  });

  app.get('/dashboard/replays/:id', signedIn, async (c) => {
    const id = c.req.param('id');
    if (!isMessageId(id)) return notice(c, 400, 'Bad request', 'That is not a replay id.');
    // The audit lists by "before an id"; the row just above the one wanted is the way to it.
    const [audit] = await store
      .replays()
      .listReplayAudits({ limit: 1, beforeId: String(BigInt(id) + 1n) });
    if (!audit || audit.id !== id) return notice(c, 404, 'Not found', `There is no replay ${id}.`);
    const lastId = c.req.query('lastId') ?? '';
    const frame = await frameOf(admin, c, clock.now());
    return render(c, 200, replayResultPage(frame, audit, isMessageId(lastId) ? lastId : null));
  });
}

/** The list the first press came from, its filter kept. */
function backToList(c: Context<AdminEnv>, form: FormBody): string {
  const read = readListFilter((name) => formText(form, name), undefined);
  return `${pathsOf(c).messages}?${filterQuery(read.fields)}`;
}
