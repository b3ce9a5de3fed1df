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
 * - `GET /dashboard/messages?state=&kind=&error=&orderingKey=&from=&until=&cursor=`: a list
 *   page by page, with its actions (see dashboard-list-routes); `GET /dashboard/messages/:id`:
 *   one message whole, and the head it waits for; `GET /dashboard/find?key=`: by key or id.
 * - `POST /dashboard/messages/:id/retry`, `.../:id/discard`: the message page's buttons;
 *   `.../retry-dead`: every dead message at once (kept for forms and scripts that post it).
 * - `/dashboard/replays...`: replay and resend with a dry run first, and the audit (see
 *   dashboard-replay-routes).
 * - `/dashboard/destinations...`: destination health, with pause and resume (see
 *   dashboard-destination-routes).
 */
import type { Context, Hono, MiddlewareHandler } from 'hono';
import { deleteCookie } from 'hono/cookie';
import { UUID_PATTERN } from '../core/message.js';
import { isMessageId } from '../core/message-id.js';
import type { MessageRecord } from '../core/outbox-store.js';
import { chain, checkAdminToken, isHttps, requireAdmin, setSessionCookie } from './admin-auth.js';
import type { AdminEnv, ResolvedAdmin } from './admin-options.js';
import { ADMIN_SESSION_COOKIE, SESSION_MAX_MS } from './admin-session.js';
import { registerDestinationPages } from './dashboard-destination-routes.js';
import { flashFromQuery } from './dashboard-flash.js';
import { registerListRoutes } from './dashboard-list-routes.js';
import { registerReplayPages } from './dashboard-replay-routes.js';
import { frameOf, notice, pathsOf, render } from './dashboard-replies.js';
import { adminFormBodyLimit, refuseCrossSiteLogin } from './login-guards.js';
import { messagePage } from './message-pages.js';
import { lastHour } from './metrics.js';
import { overviewPage } from './overview-page.js';
import { loginPage } from './page-layout.js';

/** Recent failures shown: enough to spot a pattern, few enough to read. */
export const DASHBOARD_RECENT_ERRORS_LIMIT = 20;

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
    const [stats, hour, errors, frame] = await Promise.all([
      store.stats(now, { deadHeadBlocks: admin.deadHeadBlocks }),
      lastHour(store, now),
      store.recentErrors(DASHBOARD_RECENT_ERRORS_LIMIT),
      frameOf(admin, c, now),
    ]);
    return render(
      c,
      200,
      overviewPage(frame, {
        stats,
        perMinute: hour.perMinute,
        errors,
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

  registerListRoutes(app, admin, signedIn);
  registerReplayPages(app, admin, signedIn);
  registerDestinationPages(app, admin, signedIn);

  app.get('/dashboard/find', signedIn, async (c) => {
    const wanted = (c.req.query('key') ?? '').trim();
    let message: MessageRecord | null;
    if (isMessageId(wanted)) message = await store.get(wanted);
    else if (UUID_PATTERN.test(wanted)) message = await store.getByKey(wanted);
    else return notice(c, 400, 'Bad request', 'Enter a message key (a UUID) or a message id.');
    if (!message) return notice(c, 404, 'Not found', `No message has the key or id ${wanted}.`);
    return c.redirect(pathsOf(c).message(message.id), 303);
  });

  app.get('/dashboard/messages/:id', signedIn, async (c) => {
    const id = c.req.param('id');
    if (!isMessageId(id)) return notice(c, 400, 'Bad request', 'That is not a message id.');
    const message = await store.get(id);
    if (!message) return notice(c, 404, 'Not found', `There is no message ${id}.`);
    const heads = message.orderingKey
      ? await store.holdingHeads([id], { deadHeadBlocks: admin.deadHeadBlocks })
      : new Map();
    const frame = await frameOf(admin, c, clock.now());
    return render(c, 200, messagePage(frame, message, null, heads.get(id) ?? null));
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

type FlashCode = 'retried' | 'retried-all' | 'discarded' | 'not-dead' | 'missing';

function backToOverview(
  c: Context<AdminEnv>,
  done: FlashCode,
  params: Record<string, string>,
): Response {
  const query = new URLSearchParams({ done, ...params });
  return c.redirect(`${pathsOf(c).home}?${query}`, 303);
}
