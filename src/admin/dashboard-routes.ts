/**
 * The operator dashboard: server-rendered HTML, no scripts, no external requests, so it works on
 * Workers, Lambda and Node alike under a CSP that allows nothing else. Every action is a plain
 * HTML form that carries the session's CSRF token and redirects 303 back with a flash code in
 * the query string (post/redirect/get: a reload never repeats it). Paths, under the mount path:
 *
 * - `GET /`: the token form without a session; the overview with one.
 * - `POST /login` (field `token`): sets the session cookie, 303 to `/`; a wrong token gets the
 *   form again with 401; too many wrong tokens from one address, 429 (see login-throttle); a
 *   post from another site, 403, and a body over 4 KiB, 413 (see login-guards), both unread.
 * - `POST /logout`: ends the session (revoked, cookie cleared).
 * - `GET /dashboard/messages?state=&kind=&cursor=`: a list page by page; `GET
 *   /dashboard/messages/:id`: one message whole; `GET /dashboard/find?key=`: by key or id.
 * - `POST /dashboard/messages/:id/retry`, `.../:id/discard`, `.../retry-dead`: the buttons.
 */
import type { Context, Hono, MiddlewareHandler } from 'hono';
import { deleteCookie } from 'hono/cookie';
import type { ContentfulStatusCode } from 'hono/utils/http-status';
import { isValidationError } from '../core/errors.js';
import { isMessageId } from '../core/message-id.js';
import { MESSAGE_STATES, type MessageRecord, type MessageState } from '../core/outbox-store.js';
import { chain, checkAdminToken, isHttps, requireAdmin, setSessionCookie } from './admin-auth.js';
import type { AdminEnv, ResolvedAdmin } from './admin-options.js';
import { adminPaths } from './admin-paths.js';
import { ADMIN_SESSION_COOKIE, SESSION_MAX_MS } from './admin-session.js';
import { flashFromQuery } from './dashboard-flash.js';
import { adminFormBodyLimit, refuseCrossSiteLogin } from './login-guards.js';
import type { Markup } from './markup.js';
import { messageListPage, messagePage } from './message-pages.js';
import { lastHour } from './metrics.js';
import { overviewPage } from './overview-page.js';
import { loginPage, noticePage, type PageFrame } from './page-layout.js';

/** Dead messages on the overview with Retry and Discard buttons: a screenful; the list pages on. */
export const DASHBOARD_DEAD_LIMIT = 50;

/** Recent failures shown: enough to spot a pattern, few enough to read. */
export const DASHBOARD_RECENT_ERRORS_LIMIT = 20;

/** Rows per page of the message list: a screenful or two. */
export const DASHBOARD_PAGE_SIZE = 50;

const UUID_TEXT = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/**
 * Registers the dashboard on `app`. `anonymous` runs before every route (headers, 404 without a
 * token); `identify` reads the session.
 */
export function registerDashboardRoutes(
  app: Hono<AdminEnv>,
  admin: ResolvedAdmin,
  anonymous: MiddlewareHandler<AdminEnv>,
  identify: MiddlewareHandler<AdminEnv>,
): void {
  const { store, clock } = admin;
  // Before `identify`, which reads a cookie state change's form for its CSRF token.
  const formLimit = adminFormBodyLimit();
  const page = chain(anonymous, formLimit, identify);
  const signedIn = chain(
    page,
    requireAdmin((c) => render(c, 401, loginPage(pathsOf(c), { error: 'Sign in first.' }))),
  );

  app.get('/', page, async (c) => {
    if (!c.get('adminAuth')) {
      const signedOut = c.req.query('done') === 'signed-out';
      const notice = signedOut ? 'You are signed out.' : null;
      return render(c, 200, loginPage(pathsOf(c), { notice }));
    }
    const now = clock.now();
    const [stats, hour, errors, deadPage, frame] = await Promise.all([
      store.stats(now, { deadHeadBlocks: admin.deadHeadBlocks }),
      lastHour(store, now),
      store.recentErrors(DASHBOARD_RECENT_ERRORS_LIMIT),
      store.list({ state: 'dead', limit: DASHBOARD_DEAD_LIMIT }),
      frameOf(admin, c, now),
    ]);
    return render(
      c,
      200,
      overviewPage(frame, {
        stats,
        perMinute: hour.perMinute,
        errors,
        dead: deadPage.messages,
        moreDead: deadPage.nextCursor !== null,
        deadLimit: DASHBOARD_DEAD_LIMIT,
        flash: flashFromQuery(c),
      }),
    );
  });

  app.post('/login', anonymous, refuseCrossSiteLogin(), formLimit, async (c) => {
    const paths = pathsOf(c);
    const form = await c.req.parseBody();
    const token = typeof form.token === 'string' ? form.token.trim() : '';
    const check = await checkAdminToken(admin, c, token, 'form');
    if (!check.ok) {
      if (!check.throttled) {
        return render(c, 401, loginPage(paths, { error: 'That token is not right. Try again.' }));
      }
      const seconds = Math.ceil(check.waitMs / 1000);
      c.header('Retry-After', String(seconds));
      const error = `Too many wrong tokens from this address: wrong ones are refused for ${seconds} s. The right token still signs in.`;
      return render(c, 429, loginPage(paths, { error }));
    }
    const now = clock.now();
    const { session, cookie } = await admin.signer!.issue(now);
    setSessionCookie(c, cookie, session, now);
    return c.redirect(paths.home, 303);
  });

  app.post('/logout', signedIn, async (c) => {
    const auth = c.get('adminAuth');
    const paths = pathsOf(c);
    if (auth?.method === 'cookie') {
      // Revoked until it would have expired anyway: a copy of the cookie is dead too.
      const until = new Date(auth.session.issuedAt + SESSION_MAX_MS);
      await admin.revokedSessions.revoke(auth.session.id, until);
    }
    deleteCookie(c, ADMIN_SESSION_COOKIE, { path: paths.home, secure: isHttps(c) });
    return c.redirect(`${paths.home}?done=signed-out`, 303);
  });

  app.get('/dashboard/messages', signedIn, async (c) => {
    const paths = pathsOf(c);
    const state = c.req.query('state') || 'pending';
    if (!MESSAGE_STATES.includes(state as MessageState)) {
      return notice(c, 400, 'Bad request', `State must be one of ${MESSAGE_STATES.join(', ')}.`);
    }
    const kind = (c.req.query('kind') ?? '').trim();
    const cursor = c.req.query('cursor') || undefined;
    const frame = await frameOf(admin, c, clock.now());
    const filter = { state: state as MessageState, kind };
    try {
      const list = await store.list({
        ...filter,
        kind: kind || undefined,
        limit: DASHBOARD_PAGE_SIZE,
        cursor,
      });
      const nextHref = list.nextCursor
        ? `${paths.messages}?${new URLSearchParams({ state, ...(kind ? { kind } : {}), cursor: list.nextCursor })}`
        : null;
      const view = { ...filter, messages: list.messages, nextHref, paged: cursor !== undefined };
      return render(c, 200, messageListPage(frame, { ...view, problem: null }));
    } catch (error) {
      if (!isValidationError(error)) throw error;
      const view = { ...filter, messages: [], nextHref: null, paged: true, problem: error.message };
      return render(c, 400, messageListPage(frame, view));
    }
  });

  app.get('/dashboard/find', signedIn, async (c) => {
    const wanted = (c.req.query('key') ?? '').trim();
    let message: MessageRecord | null;
    if (isMessageId(wanted)) message = await store.get(wanted);
    else if (UUID_TEXT.test(wanted)) message = await store.getByKey(wanted);
    else return notice(c, 400, 'Bad request', 'Enter a message key (a UUID) or a message id.');
    if (!message) return notice(c, 404, 'Not found', `No message has the key or id ${wanted}.`);
    return c.redirect(pathsOf(c).message(message.id), 303);
  });

  app.get('/dashboard/messages/:id', signedIn, async (c) => {
    const id = c.req.param('id');
    if (!isMessageId(id)) return notice(c, 400, 'Bad request', 'That is not a message id.');
    const message = await store.get(id);
    if (!message) return notice(c, 404, 'Not found', `There is no message ${id}.`);
    return render(c, 200, messagePage(await frameOf(admin, c, clock.now()), message, null));
  });

  app.post('/dashboard/messages/retry-dead', signedIn, async (c) => {
    const retried = await store.retryAllDead(clock.now());
    return backToOverview(c, 'retried-all', { count: String(retried) });
  });

  app.post('/dashboard/messages/:id/retry', signedIn, async (c) => {
    const id = c.req.param('id');
    if (!isMessageId(id)) return notice(c, 400, 'Bad request', 'That is not a message id.');
    if (await store.retryDead(id, clock.now())) return backToOverview(c, 'retried', { id });
    const message = await store.get(id);
    return backToOverview(c, message ? 'not-dead' : 'missing', { id });
  });

  app.post('/dashboard/messages/:id/discard', signedIn, async (c) => {
    const id = c.req.param('id');
    if (!isMessageId(id)) return notice(c, 400, 'Bad request', 'That is not a message id.');
    // The button sits on a dead message. If it was retried since the page was drawn, it is live
    // work again, not what the operator chose to throw away. (A retry landing between this read
    // and the delete can still lose; the store's discard takes any unclaimed row.)
    const message = await store.get(id);
    if (!message) return backToOverview(c, 'missing', { id });
    if (message.state !== 'dead') return backToOverview(c, 'not-dead', { id });
    if (await store.discard(id)) return backToOverview(c, 'discarded', { id });
    return backToOverview(c, 'missing', { id });
  });
}

function pathsOf(c: Context<AdminEnv>) {
  return adminPaths(c.get('adminBase'));
}

async function frameOf(admin: ResolvedAdmin, c: Context<AdminEnv>, now: Date): Promise<PageFrame> {
  const auth = c.get('adminAuth');
  const session = auth?.method === 'cookie' ? auth.session : null;
  return {
    paths: pathsOf(c),
    now,
    csrf: session ? await admin.signer!.csrfToken(session) : null,
    canSignOut: session !== null,
  };
}

function render(
  c: Context,
  status: ContentfulStatusCode,
  page: Markup,
): Response | Promise<Response> {
  return c.html(page, status);
}

function notice(
  c: Context<AdminEnv>,
  status: ContentfulStatusCode,
  title: string,
  text: string,
): Response | Promise<Response> {
  return render(c, status, noticePage(pathsOf(c), title, text));
}

type FlashCode = 'retried' | 'retried-all' | 'discarded' | 'not-dead' | 'missing';

function backToOverview(
  c: Context<AdminEnv>,
  done: FlashCode,
  params: Record<string, string>,
): Response {
  const query = new URLSearchParams({ done, ...params });
  return c.redirect(`${pathsOf(c).home}?${query}`, 303);
}
