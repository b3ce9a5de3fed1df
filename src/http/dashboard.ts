/**
 * The operator dashboard at `GET /admin`: server-rendered HTML with inline CSS and an inline SVG
 * chart, no scripts and no external requests, so it works on Workers, Lambda and Node alike and
 * under a Content-Security-Policy that allows nothing else. Every action is a plain HTML form
 * (works without JavaScript) that posts back here, carries the CSRF token, and redirects 303 to
 * `/admin` with a flash in the query string (post/redirect/get: a reload never repeats it).
 *
 * Authentication is `adminAuth`'s (mounted by app.ts): a browser signs in once through the token
 * form, which sets the `ADMIN_COOKIE` session cookie.
 */
import { type Context, Hono } from 'hono';
import { deleteCookie, setCookie } from 'hono/cookie';
import type { ContentfulStatusCode } from 'hono/utils/http-status';
import type { AppEnv, ResolvedDeps } from '../../examples/reference-service/app-deps.js';
import { isMessageId } from '../core/message-id.js';
import type { MessageRecord, OutboxStats } from '../core/outbox-store.js';
import type { DeliveryCount } from '../store/postgres-store.js';
import {
  ADMIN_COOKIE,
  type AdminAuthMethod,
  CSRF_FIELD,
  csrfToken,
  tokensMatch,
} from './admin-auth.js';
import { lastHour } from './admin-routes.js';

/** Where app.ts mounts the dashboard. Forms and redirects need absolute paths. */
const DASHBOARD_PATH = '/admin';

/**
 * The token form posts to the dashboard's own path. app.ts lets `LOGIN_PATH` through `adminAuth`
 * without a session, and Hono's `/admin/*` also matches `/admin` itself: `/admin` is the one path
 * both of app.ts's admin middlewares allow anonymously, so the form must post there.
 */
export const LOGIN_PATH = DASHBOARD_PATH;
const LOGOUT_PATH = `${DASHBOARD_PATH}/logout`;
const ACTIONS_PATH = `${DASHBOARD_PATH}/dashboard/messages`;

/**
 * Twelve hours: a working day. The cookie is the admin token itself, so it should end with the
 * operator's session rather than linger in the browser for weeks.
 */
export const DASHBOARD_SESSION_MAX_AGE_SECONDS = 12 * 60 * 60;

/** Dead messages shown with Retry and Discard buttons: a screenful; the API pages through more. */
export const DASHBOARD_DEAD_LIMIT = 50;

/** Recent failures shown: enough to spot a pattern, few enough to read. */
export const DASHBOARD_RECENT_ERRORS_LIMIT = 20;

/** Characters of an error shown in a table cell; the full text (to a limit) is in its tooltip. */
const ERROR_PREVIEW_CHARS = 160;
const ERROR_TOOLTIP_CHARS = 2_000;
/** Characters of a payload shown in a dead row's expandable preview. */
const PAYLOAD_PREVIEW_CHARS = 2_000;

const MINUTE_MS = 60_000;
const CHART_MINUTES = 60;

/**
 * Nothing may load or run but the inline styles: no script (so injected markup stays inert), no
 * remote image or font, forms post only here, and no other site may frame the page (clickjacking).
 */
export const DASHBOARD_CSP =
  "default-src 'none'; style-src 'unsafe-inline'; img-src data:; form-action 'self'; frame-ancestors 'none'";

/**
 * The dashboard routes, mounted under `/admin` after `adminAuth`:
 *
 * - `GET /admin`: the token form without a session; the dashboard with one.
 * - `POST /admin` ({@link LOGIN_PATH}, field `token`): sets the session cookie, 303 to `/admin`;
 *   a wrong token gets the form again with 401.
 * - `POST /admin/logout`: clears the cookie.
 * - `POST /admin/dashboard/messages/:id/retry`, `.../:id/discard`, `.../retry-dead`: the
 *   buttons; each 303s back to `/admin?done=...`.
 *
 * State changes made with the cookie must carry the CSRF token (`adminAuth` checks the `csrf`
 * field); every form on the page has it.
 */
export function dashboardRoutes(deps: ResolvedDeps): Hono<AppEnv> {
  const app = new Hono<AppEnv>();

  app.get('/', async (c) => {
    const adminToken = deps.adminToken;
    if (!adminToken) return notFound(c);
    const auth = sessionOf(c);
    if (!auth) {
      const signedOut = c.req.query('done') === 'signed-out';
      return htmlResponse(c, 200, loginPage({ notice: signedOut ? 'You are signed out.' : null }));
    }
    const now = deps.clock.now();
    const [stats, hour, errors, deadPage, csrf] = await Promise.all([
      deps.store.stats(now),
      lastHour(deps, now),
      deps.store.recentErrors(DASHBOARD_RECENT_ERRORS_LIMIT),
      deps.store.list({ state: 'dead', limit: DASHBOARD_DEAD_LIMIT }),
      csrfToken(adminToken),
    ]);
    const page = dashboardPage({
      now,
      stats,
      perMinute: hour.perMinute,
      errors,
      dead: deadPage.messages,
      moreDead: deadPage.nextCursor !== null,
      csrf,
      canSignOut: auth === 'cookie',
      flash: flashFromQuery(c),
    });
    return htmlResponse(c, 200, page);
  });

  // LOGIN_PATH is `/admin`: this is the login.
  app.post('/', async (c) => {
    const adminToken = deps.adminToken;
    if (!adminToken) return notFound(c);
    const form = await c.req.parseBody();
    const token = typeof form.token === 'string' ? form.token.trim() : '';
    if (token === '' || !(await tokensMatch(token, adminToken))) {
      return htmlResponse(c, 401, loginPage({ error: 'That token is not right. Try again.' }));
    }
    setCookie(c, ADMIN_COOKIE, adminToken, {
      httpOnly: true,
      sameSite: 'Strict',
      path: DASHBOARD_PATH,
      secure: isHttps(c),
      maxAge: DASHBOARD_SESSION_MAX_AGE_SECONDS,
    });
    return c.redirect(DASHBOARD_PATH, 303);
  });

  app.post('/logout', (c) => {
    if (!sessionOf(c)) return unauthorized(c);
    deleteCookie(c, ADMIN_COOKIE, { path: DASHBOARD_PATH, secure: isHttps(c) });
    return c.redirect(`${DASHBOARD_PATH}?done=signed-out`, 303);
  });

  app.post('/dashboard/messages/retry-dead', async (c) => {
    if (!sessionOf(c)) return unauthorized(c);
    const retried = await deps.store.retryAllDead(deps.clock.now());
    return backToDashboard(c, 'retried-all', { count: String(retried) });
  });

  app.post('/dashboard/messages/:id/retry', async (c) => {
    if (!sessionOf(c)) return unauthorized(c);
    const id = c.req.param('id');
    if (!isMessageId(id)) return badMessageId(c);
    if (await deps.store.retryDead(id, deps.clock.now())) {
      return backToDashboard(c, 'retried', { id });
    }
    const message = await deps.store.get(id);
    return backToDashboard(c, message ? 'not-dead' : 'missing', { id });
  });

  app.post('/dashboard/messages/:id/discard', async (c) => {
    if (!sessionOf(c)) return unauthorized(c);
    const id = c.req.param('id');
    if (!isMessageId(id)) return badMessageId(c);
    // The button sits on a dead row. If the message was retried since the page was drawn, it
    // is live work again, not what the operator chose to throw away. (A retry landing between
    // this read and the delete can still lose; the store's discard takes any unclaimed row.)
    const message = await deps.store.get(id);
    if (!message) return backToDashboard(c, 'missing', { id });
    if (message.state !== 'dead') return backToDashboard(c, 'not-dead', { id });
    if (await deps.store.discard(id)) return backToDashboard(c, 'discarded', { id });
    return backToDashboard(c, 'missing', { id });
  });

  return app;
}

// ---------------------------------------------------------------------------------------------
// HTML building: every interpolated value is escaped unless it is already built markup.

/** Markup built by {@link html}, or a constant of this file: safe to insert as is. */
class SafeHtml {
  constructor(readonly text: string) {}
  toString(): string {
    return this.text;
  }
}

type HtmlValue = SafeHtml | string | number | null | undefined | false | readonly HtmlValue[];

const HTML_ESCAPES: Record<string, string> = {
  '&': '&amp;',
  '<': '&lt;',
  '>': '&gt;',
  '"': '&quot;',
  "'": '&#39;',
};

/**
 * Escapes text for HTML element content and for quoted attribute values (and SVG, which is
 * parsed as HTML here). Payloads, keys, kinds and errors are attacker-controllable.
 */
export function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (char) => HTML_ESCAPES[char] ?? char);
}

/** A template tag that escapes every interpolation, so escaping cannot be forgotten. */
function html(strings: TemplateStringsArray, ...values: HtmlValue[]): SafeHtml {
  let text = strings[0] ?? '';
  for (let index = 0; index < values.length; index++) {
    text += renderHtmlValue(values[index]) + (strings[index + 1] ?? '');
  }
  return new SafeHtml(text);
}

function renderHtmlValue(value: HtmlValue): string {
  if (value instanceof SafeHtml) return value.text;
  if (Array.isArray(value)) return value.map(renderHtmlValue).join('');
  if (value === null || value === undefined || value === false) return '';
  return escapeHtml(String(value));
}

// ---------------------------------------------------------------------------------------------
// Responses

function sessionOf(c: Context<AppEnv>): AdminAuthMethod | undefined {
  // Unset on the anonymous paths adminAuth lets through; the type cannot say so.
  return c.get('adminAuth') as AdminAuthMethod | undefined;
}

function htmlResponse(c: Context, status: ContentfulStatusCode, page: SafeHtml): Response {
  c.header('Content-Security-Policy', DASHBOARD_CSP);
  c.header('X-Content-Type-Options', 'nosniff');
  c.header('Referrer-Policy', 'no-referrer');
  // Operational data and a CSRF token: keep it out of shared and back-button caches.
  c.header('Cache-Control', 'no-store');
  return c.html(page.text, status);
}

function notFound(c: Context): Response {
  return htmlResponse(c, 404, messagePage('Not found', 'There is nothing here.'));
}

function unauthorized(c: Context): Response {
  return htmlResponse(c, 401, loginPage({ error: 'Sign in first.' }));
}

function badMessageId(c: Context): Response {
  return htmlResponse(c, 400, messagePage('Bad request', 'That is not a message id.'));
}

/** Secure cookies need https; behind a TLS-terminating proxy the proxy says so. */
function isHttps(c: Context): boolean {
  if (new URL(c.req.url).protocol === 'https:') return true;
  return c.req.header('x-forwarded-proto')?.split(',')[0]?.trim().toLowerCase() === 'https';
}

type FlashCode = 'retried' | 'retried-all' | 'discarded' | 'not-dead' | 'missing';

function backToDashboard(c: Context, done: FlashCode, params: Record<string, string>): Response {
  const query = new URLSearchParams({ done, ...params });
  return c.redirect(`${DASHBOARD_PATH}?${query}`, 303);
}

interface Flash {
  tone: 'ok' | 'warn';
  text: string;
}

/**
 * The flash is chosen from fixed sentences by code; the query string never reaches the page
 * except as a checked message id or count.
 */
function flashFromQuery(c: Context): Flash | null {
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
      return count === null
        ? null
        : {
            tone: count > 0 ? 'ok' : 'warn',
            text:
              count > 0
                ? `${formatCount(count)} dead ${count === 1 ? 'message is' : 'messages are'} pending again.`
                : 'There were no dead messages to retry.',
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

// ---------------------------------------------------------------------------------------------
// Pages

function layout(title: string, body: SafeHtml): SafeHtml {
  return html`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="robots" content="noindex">
<title>${title}</title>
<link rel="icon" href="data:,">
<style>${STYLES}</style>
</head>
<body>
${body}
</body>
</html>
`;
}

function loginPage(options: { error?: string; notice?: string | null }): SafeHtml {
  return layout(
    'Sign in · outbox-relay',
    html`<main class="login">
  <form class="panel login-card" method="post" action="${LOGIN_PATH}">
    <h1 class="brand">outbox-relay <span>admin</span></h1>
    <p class="muted">Enter the admin token (<code>ADMIN_TOKEN</code>) to open the dashboard.</p>
    ${options.error ? html`<p class="flash flash-warn" role="alert">${options.error}</p>` : ''}
    ${options.notice ? html`<p class="flash flash-ok" role="status">${options.notice}</p>` : ''}
    <label for="token">Admin token</label>
    <input id="token" name="token" type="password" autocomplete="current-password" required autofocus>
    <button class="btn btn-primary" type="submit">Sign in</button>
  </form>
</main>`,
  );
}

function messagePage(title: string, text: string): SafeHtml {
  return layout(
    `${title} · outbox-relay`,
    html`<main class="login"><div class="panel login-card">
  <h1 class="brand">${title}</h1>
  <p>${text}</p>
  <p><a href="${DASHBOARD_PATH}">Back to the dashboard</a></p>
</div></main>`,
  );
}

interface DashboardView {
  now: Date;
  stats: OutboxStats;
  perMinute: readonly DeliveryCount[];
  errors: readonly MessageRecord[];
  dead: readonly MessageRecord[];
  moreDead: boolean;
  csrf: string;
  canSignOut: boolean;
  flash: Flash | null;
}

function dashboardPage(view: DashboardView): SafeHtml {
  const { stats, now } = view;
  const csrfField = html`<input type="hidden" name="${CSRF_FIELD}" value="${view.csrf}">`;
  const claimedTotal = stats.claimed + stats.leaseExpired;
  return layout(
    'outbox-relay admin',
    html`<header class="topbar">
  <div class="wrap topbar-inner">
    <h1 class="brand">outbox-relay <span>admin</span></h1>
    <div class="topbar-meta">
      <span class="muted">As of ${formatTime(now)} UTC</span>
      <a class="btn" href="${DASHBOARD_PATH}">Refresh</a>
      ${
        view.canSignOut
          ? html`<form method="post" action="${LOGOUT_PATH}">${csrfField}<button class="btn" type="submit">Sign out</button></form>`
          : ''
      }
    </div>
  </div>
</header>
<main class="wrap">
  ${view.flash ? html`<p class="flash flash-${view.flash.tone}" role="status">${view.flash.text}</p>` : ''}
  <section class="cards" aria-label="Messages by state">
    ${statCard('pending', 'Pending', stats.pending, `${formatCount(stats.due)} due now`)}
    ${statCard(
      'claimed',
      'Claimed',
      claimedTotal,
      stats.leaseExpired > 0
        ? `${formatCount(stats.leaseExpired)} lease expired`
        : 'being sent right now',
      stats.leaseExpired > 0 ? 'warn' : null,
    )}
    ${statCard('delivered', 'Delivered', stats.delivered, 'kept until purged')}
    ${statCard('dead', 'Dead', stats.dead, 'waiting for an operator', stats.dead > 0 ? 'bad' : null)}
    <div class="card${stats.lagMs >= 5 * MINUTE_MS ? ' card-warn' : ''}" data-metric="lag">
      <div class="card-label">Lag</div>
      <div class="card-value">${formatDuration(stats.lagMs)}</div>
      <div class="card-note">${
        stats.oldestDueAt
          ? `oldest since ${formatSince(stats.oldestDueAt, now)}`
          : 'nothing waiting'
      }</div>
    </div>
  </section>

  <section class="panel">
    <div class="panel-head">
      <h2>Last hour</h2>
      ${chartLegend()}
    </div>
    ${deliveryChart(view.perMinute, now)}
  </section>

  <section class="panel">
    <div class="panel-head">
      <h2>Recent errors</h2>
      <span class="muted">Messages that failed at least once and are not delivered, newest first</span>
    </div>
    ${recentErrorsTable(view.errors, now)}
  </section>

  <section class="panel" id="dead">
    <div class="panel-head">
      <h2>Dead letters <span class="count">${formatCount(stats.dead)}</span></h2>
      ${
        stats.dead > 0
          ? html`<form method="post" action="${ACTIONS_PATH}/retry-dead">${csrfField}<button class="btn btn-primary" type="submit">Retry all dead</button></form>`
          : ''
      }
    </div>
    ${deadTable(view.dead, csrfField, now)}
    ${
      view.moreDead
        ? html`<p class="muted table-note">Showing the ${DASHBOARD_DEAD_LIMIT} most recent. Page through the rest with <code>GET /admin/messages?state=dead</code> or <code>outbox list --state dead</code>.</p>`
        : ''
    }
  </section>
</main>`,
  );
}

function statCard(
  state: string,
  label: string,
  value: number,
  note: string,
  tone: 'warn' | 'bad' | null = null,
): SafeHtml {
  return html`<div class="card${tone ? ` card-${tone}` : ''}" data-state="${state}">
      <div class="card-label">${label}</div>
      <div class="card-value">${formatCount(value)}</div>
      <div class="card-note">${note}</div>
    </div>`;
}

function recentErrorsTable(errors: readonly MessageRecord[], now: Date): SafeHtml {
  if (errors.length === 0) return html`<p class="empty">No recent errors.</p>`;
  const rows = errors.map((message) => {
    const at = message.state === 'dead' && message.deadAt ? message.deadAt : message.dueAt;
    const label = message.state === 'dead' ? 'dead' : at > now ? 'next try' : 'due';
    return html`<tr>
      <td class="nowrap">${timeCell(at, now, label)}</td>
      <td><code>${message.kind}</code></td>
      <td><code class="key">${message.key}</code></td>
      <td class="num">${message.attempts}/${message.maxAttempts}</td>
      <td>${stateBadge(message.state)}</td>
      <td class="error">${errorCell(message.lastError)}</td>
    </tr>`;
  });
  return html`<div class="table-wrap"><table>
    <thead><tr><th>Time (UTC)</th><th>Kind</th><th>Key</th><th class="num">Attempts</th><th>State</th><th>Last error</th></tr></thead>
    <tbody>${rows}</tbody>
  </table></div>`;
}

function deadTable(dead: readonly MessageRecord[], csrfField: SafeHtml, now: Date): SafeHtml {
  if (dead.length === 0) return html`<p class="empty">No dead messages.</p>`;
  const rows = dead.map((message) => {
    const actions = `${ACTIONS_PATH}/${message.id}`;
    return html`<tr data-message-id="${message.id}">
      <td class="num">${message.id}</td>
      <td class="nowrap">${message.deadAt ? timeCell(message.deadAt, now) : '–'}</td>
      <td><code>${message.kind}</code></td>
      <td><code class="key">${message.key}</code>${payloadPreview(message)}</td>
      <td class="num">${message.attempts}/${message.maxAttempts}</td>
      <td class="error">${errorCell(message.lastError)}</td>
      <td class="actions">
        <form method="post" action="${actions}/retry">${csrfField}<button class="btn btn-primary btn-small" type="submit" aria-label="Retry message ${message.id}">Retry</button></form>
        <form method="post" action="${actions}/discard">${csrfField}<button class="btn btn-danger btn-small" type="submit" aria-label="Discard message ${message.id}">Discard</button></form>
      </td>
    </tr>`;
  });
  return html`<div class="table-wrap"><table>
    <thead><tr><th class="num">Id</th><th>Dead at (UTC)</th><th>Kind</th><th>Key</th><th class="num">Attempts</th><th>Last error</th><th><span class="visually-hidden">Actions</span></th></tr></thead>
    <tbody>${rows}</tbody>
  </table></div>`;
}

function payloadPreview(message: MessageRecord): SafeHtml {
  const json = JSON.stringify(message.payload, null, 2) ?? 'null';
  return html`<details><summary>payload</summary><pre>${truncate(json, PAYLOAD_PREVIEW_CHARS)}</pre></details>`;
}

function errorCell(error: string | null): SafeHtml {
  if (!error) return html`<span class="muted">–</span>`;
  return html`<span title="${truncate(error, ERROR_TOOLTIP_CHARS)}">${truncate(error, ERROR_PREVIEW_CHARS)}</span>`;
}

function timeCell(at: Date, now: Date, label?: string): SafeHtml {
  const relative = formatRelative(at, now);
  return html`<time datetime="${at.toISOString()}">${formatTime(at)}</time><div class="muted small">${label ? `${label} ${relative}` : relative}</div>`;
}

function stateBadge(state: MessageRecord['state']): SafeHtml {
  const label = state === 'pending' ? 'retrying' : state;
  return html`<span class="badge badge-${state}">${label}</span>`;
}

// ---------------------------------------------------------------------------------------------
// The chart: one stacked bar per minute, oldest on the left, the current minute on the right.

const CHART = {
  width: 960,
  height: 220,
  left: 48,
  right: 12,
  top: 12,
  bottom: 30,
} as const;

const SERIES = [
  { field: 'delivered', label: 'Delivered', color: '#2f9e5b' },
  { field: 'retried', label: 'Failed, will retry', color: '#e0a100' },
  { field: 'dead', label: 'Failed, dead', color: '#d64545' },
] as const;

interface MinuteBucket {
  minute: Date;
  delivered: number;
  retried: number;
  dead: number;
}

/** 60 one-minute buckets ending with the current minute, zero where nothing was settled. */
export function minuteBuckets(perMinute: readonly DeliveryCount[], now: Date): MinuteBucket[] {
  const byMinute = new Map(perMinute.map((count) => [count.minute.getTime(), count]));
  const currentMinute = Math.floor(now.getTime() / MINUTE_MS) * MINUTE_MS;
  return Array.from({ length: CHART_MINUTES }, (_, index) => {
    const minute = currentMinute - (CHART_MINUTES - 1 - index) * MINUTE_MS;
    const count = byMinute.get(minute);
    const dead = count?.dead ?? 0;
    return {
      minute: new Date(minute),
      delivered: count?.delivered ?? 0,
      // `failed` counts every failed attempt, dead ones included.
      retried: Math.max(0, (count?.failed ?? 0) - dead),
      dead,
    };
  });
}

function chartLegend(): SafeHtml {
  return html`<ul class="legend" aria-hidden="true">${SERIES.map(
    (series) =>
      html`<li><span class="swatch" style="background:${series.color}"></span>${series.label}</li>`,
  )}</ul>`;
}

function deliveryChart(perMinute: readonly DeliveryCount[], now: Date): SafeHtml {
  const buckets = minuteBuckets(perMinute, now);
  const totals = buckets.reduce(
    (sum, bucket) => ({
      delivered: sum.delivered + bucket.delivered,
      retried: sum.retried + bucket.retried,
      dead: sum.dead + bucket.dead,
    }),
    { delivered: 0, retried: 0, dead: 0 },
  );
  const peak = Math.max(0, ...buckets.map((b) => b.delivered + b.retried + b.dead));
  const step = niceStep(peak / 4);
  const yMax = step * 4;
  const plotWidth = CHART.width - CHART.left - CHART.right;
  const plotHeight = CHART.height - CHART.top - CHART.bottom;
  const slot = plotWidth / CHART_MINUTES;
  const barWidth = Math.max(1, slot * 0.72);
  const y = (value: number) => CHART.top + plotHeight - (value / yMax) * plotHeight;

  const gridLines = [0, 1, 2, 3, 4].map((tick) => {
    const value = tick * step;
    const at = y(value);
    return html`<line x1="${CHART.left}" x2="${CHART.width - CHART.right}" y1="${at.toFixed(1)}" y2="${at.toFixed(1)}" class="${tick === 0 ? 'axis' : 'grid'}"/><text x="${CHART.left - 8}" y="${(at + 4).toFixed(1)}" text-anchor="end" class="tick">${formatCount(value)}</text>`;
  });

  const bars = buckets.map((bucket, index) => {
    const x = CHART.left + index * slot + (slot - barWidth) / 2;
    let base = 0;
    const segments = SERIES.map((series) => {
      const value = bucket[series.field];
      if (value === 0) return '';
      const top = y(base + value);
      const height = y(base) - top;
      base += value;
      return html`<rect x="${x.toFixed(1)}" y="${top.toFixed(1)}" width="${barWidth.toFixed(1)}" height="${Math.max(height, 0.5).toFixed(1)}" fill="${series.color}"/>`;
    });
    const label = `${formatClock(bucket.minute)} UTC: ${bucket.delivered} delivered, ${bucket.retried} failed and will retry, ${bucket.dead} failed and dead`;
    // A full-height transparent target, so the tooltip shows even over an empty minute.
    return html`<g><title>${label}</title><rect x="${(CHART.left + index * slot).toFixed(1)}" y="${CHART.top}" width="${slot.toFixed(1)}" height="${plotHeight}" fill="transparent"/>${segments}</g>`;
  });

  // Ticks on the quarter hours, and the current minute at the right edge.
  const xLabels = buckets.map((bucket, index) => {
    const isLast = index === CHART_MINUTES - 1;
    const onQuarter = bucket.minute.getUTCMinutes() % 15 === 0;
    if (!isLast && !(onQuarter && index < CHART_MINUTES - 6)) return '';
    const x = CHART.left + index * slot + slot / 2;
    const labelX = isLast ? CHART.width - CHART.right : x;
    return html`<line x1="${x.toFixed(1)}" x2="${x.toFixed(1)}" y1="${CHART.height - CHART.bottom}" y2="${CHART.height - CHART.bottom + 4}" class="axis"/><text x="${labelX.toFixed(1)}" y="${CHART.height - 8}" text-anchor="${isLast ? 'end' : 'middle'}" class="tick">${formatClock(bucket.minute)}</text>`;
  });

  const first = buckets[0]!.minute;
  const last = buckets[CHART_MINUTES - 1]!.minute;
  const description =
    `From ${formatClock(first)} to ${formatClock(last)} UTC: ${formatCount(totals.delivered)} delivered, ` +
    `${formatCount(totals.retried + totals.dead)} failed attempts (${formatCount(totals.dead)} dead). ` +
    `Busiest minute: ${formatCount(peak)} outcomes.`;

  return html`<figure class="chart">
    <svg viewBox="0 0 ${CHART.width} ${CHART.height}" role="img" aria-labelledby="chart-title chart-desc" preserveAspectRatio="xMidYMid meet">
      <title id="chart-title">Deliveries and failures per minute, last 60 minutes</title>
      <desc id="chart-desc">${description}</desc>
      ${gridLines}
      ${bars}
      ${xLabels}
    </svg>
    <figcaption class="muted">
      Per minute, UTC. Totals: <strong>${formatCount(totals.delivered)}</strong> delivered,
      <strong>${formatCount(totals.retried)}</strong> failed and retried,
      <strong>${formatCount(totals.dead)}</strong> failed and dead.
    </figcaption>
  </figure>`;
}

/** The smallest 1, 2 or 5 times a power of ten at or above `raw` (at least 1): tidy ticks. */
function niceStep(raw: number): number {
  if (raw <= 1) return 1;
  const power = 10 ** Math.floor(Math.log10(raw));
  for (const factor of [1, 2, 5, 10]) {
    if (factor * power >= raw) return factor * power;
  }
  return 10 * power;
}

// ---------------------------------------------------------------------------------------------
// Formatting

const countFormat = new Intl.NumberFormat('en-US');

function formatCount(value: number): string {
  return countFormat.format(value);
}

/** `2024-05-01 12:34:56`, UTC: the server cannot know the reader's zone without a script. */
function formatTime(at: Date): string {
  return at.toISOString().slice(0, 19).replace('T', ' ');
}

/** A time of today as `12:34:56 UTC`; an older one with its date. */
function formatSince(at: Date, now: Date): string {
  const sameDay = at.toISOString().slice(0, 10) === now.toISOString().slice(0, 10);
  return `${sameDay ? at.toISOString().slice(11, 19) : formatTime(at)} UTC`;
}

function formatClock(at: Date): string {
  return at.toISOString().slice(11, 16);
}

export function formatDuration(ms: number): string {
  const seconds = Math.floor(Math.max(0, ms) / 1000);
  if (seconds < 60) return `${seconds} s`;
  const minutes = Math.floor(seconds / 60);
  if (minutes < 60) return `${minutes} m ${seconds % 60} s`;
  const hours = Math.floor(minutes / 60);
  if (hours < 48) return `${hours} h ${minutes % 60} m`;
  return `${Math.floor(hours / 24)} d ${hours % 24} h`;
}

function formatRelative(at: Date, now: Date): string {
  const difference = at.getTime() - now.getTime();
  if (Math.abs(difference) < 1000) return 'now';
  const text = formatDuration(Math.abs(difference));
  return difference < 0 ? `${text} ago` : `in ${text}`;
}

function truncate(text: string, max: number): string {
  if (text.length <= max) return text;
  // Do not cut a surrogate pair in half.
  return `${text.slice(0, max - 1).replace(/[\uD800-\uDBFF]$/, '')}…`;
}

// ---------------------------------------------------------------------------------------------

const STYLES = new SafeHtml(`
:root {
  --bg: #f5f6f8; --panel: #fff; --line: #e2e5ea; --text: #1b2230; --muted: #5d6675;
  --blue: #2458d6; --green: #2f9e5b; --amber: #b07a00; --red: #c93838;
  color-scheme: light;
}
* { box-sizing: border-box; }
body {
  margin: 0; background: var(--bg); color: var(--text);
  font: 15px/1.5 system-ui, -apple-system, "Segoe UI", Roboto, "Helvetica Neue", Arial, sans-serif;
}
code, pre { font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, "Liberation Mono", monospace; font-size: 13px; }
a { color: var(--blue); }
h1, h2 { margin: 0; }
h2 { font-size: 17px; font-weight: 600; }
.wrap { max-width: 1200px; margin: 0 auto; padding: 0 24px; }
.muted { color: var(--muted); }
.small { font-size: 12px; }
.nowrap { white-space: nowrap; }
.visually-hidden { position: absolute; width: 1px; height: 1px; overflow: hidden; clip: rect(0 0 0 0); white-space: nowrap; }
.brand { font-size: 18px; font-weight: 700; letter-spacing: -0.01em; }
.brand span { font-weight: 500; color: var(--muted); }
.topbar { background: var(--panel); border-bottom: 1px solid var(--line); margin-bottom: 24px; }
.topbar-inner { display: flex; align-items: center; justify-content: space-between; gap: 16px; min-height: 60px; flex-wrap: wrap; }
.topbar-meta { display: flex; align-items: center; gap: 12px; font-size: 14px; }
.topbar-meta form { margin: 0; }
.btn {
  display: inline-block; font: inherit; font-size: 14px; font-weight: 500; line-height: 20px;
  padding: 6px 14px; border-radius: 6px; border: 1px solid #cfd4dc; background: #fff;
  color: var(--text); text-decoration: none; cursor: pointer;
}
.btn:hover { background: #f0f2f5; }
.btn:focus-visible, input:focus-visible, summary:focus-visible { outline: 3px solid #9bb8f5; outline-offset: 1px; }
.btn-primary { background: var(--blue); border-color: var(--blue); color: #fff; }
.btn-primary:hover { background: #1c47b3; }
.btn-danger { color: var(--red); border-color: #e8b4b4; }
.btn-danger:hover { background: #fdf0f0; }
.btn-small { padding: 3px 10px; font-size: 13px; }
.flash { margin: 0 0 20px; padding: 10px 14px; border-radius: 6px; border: 1px solid; }
.flash-ok { background: #eaf7ef; border-color: #b6e2c6; color: #1d6b3d; }
.flash-warn { background: #fff6e5; border-color: #f0d49b; color: #7a5200; }
.cards { display: grid; grid-template-columns: repeat(auto-fit, minmax(170px, 1fr)); gap: 16px; margin-bottom: 24px; }
.card { background: var(--panel); border: 1px solid var(--line); border-radius: 10px; padding: 16px 18px; border-top: 4px solid #c5cbd5; }
.card[data-state="pending"] { border-top-color: var(--blue); }
.card[data-state="claimed"] { border-top-color: #7c5cd6; }
.card[data-state="delivered"] { border-top-color: var(--green); }
.card[data-state="dead"] { border-top-color: #c5cbd5; }
.card-bad[data-state="dead"] { border-top-color: var(--red); }
.card-bad .card-value { color: var(--red); }
.card-warn { border-top-color: #e0a100; }
.card-warn .card-value { color: var(--amber); }
.card-label { font-size: 13px; font-weight: 600; text-transform: uppercase; letter-spacing: 0.04em; color: var(--muted); }
.card-value { font-size: 34px; font-weight: 650; line-height: 1.2; margin: 4px 0 2px; font-variant-numeric: tabular-nums; }
.card-note { font-size: 13px; color: var(--muted); }
.panel { background: var(--panel); border: 1px solid var(--line); border-radius: 10px; padding: 18px 20px; margin-bottom: 24px; }
.panel-head { display: flex; align-items: center; justify-content: space-between; gap: 12px; flex-wrap: wrap; margin-bottom: 12px; }
.panel-head form { margin: 0; }
.count { display: inline-block; min-width: 24px; padding: 0 8px; margin-left: 6px; border-radius: 999px; background: #eef0f3; font-size: 13px; text-align: center; vertical-align: 2px; }
.legend { display: flex; gap: 16px; margin: 0; padding: 0; list-style: none; font-size: 13px; color: var(--muted); }
.legend li { display: flex; align-items: center; gap: 6px; }
.swatch { width: 12px; height: 12px; border-radius: 3px; display: inline-block; }
.chart { margin: 0; }
.chart svg { display: block; width: 100%; height: auto; }
.chart .grid { stroke: #edf0f3; stroke-width: 1; }
.chart .axis { stroke: #aab1bc; stroke-width: 1; }
.chart .tick { fill: var(--muted); font-size: 12px; font-family: inherit; }
.chart g:hover rect[fill="transparent"] { fill: #f0f3f8; }
.chart figcaption { font-size: 13px; margin-top: 6px; }
.table-wrap { overflow-x: auto; }
table { width: 100%; border-collapse: collapse; font-size: 14px; }
th { text-align: left; font-size: 12px; font-weight: 600; text-transform: uppercase; letter-spacing: 0.04em; color: var(--muted); padding: 8px 10px; border-bottom: 1px solid var(--line); white-space: nowrap; }
td { padding: 10px; border-bottom: 1px solid #eef0f3; vertical-align: top; }
tbody tr:last-child td { border-bottom: none; }
tbody tr:hover { background: #fafbfc; }
.num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
.key { font-size: 12px; color: #3b4453; white-space: nowrap; }
.error { max-width: 420px; overflow-wrap: anywhere; color: #3b4453; }
.actions { white-space: nowrap; text-align: right; }
.actions form { display: inline; margin: 0 0 0 6px; }
details { margin-top: 4px; }
summary { cursor: pointer; font-size: 12px; color: var(--muted); }
pre { margin: 6px 0 0; padding: 8px 10px; background: #f6f7f9; border: 1px solid var(--line); border-radius: 6px; max-height: 240px; overflow: auto; white-space: pre-wrap; overflow-wrap: anywhere; font-size: 12px; }
.badge { display: inline-block; padding: 1px 8px; border-radius: 999px; font-size: 12px; font-weight: 600; }
.badge-dead { background: #fdecec; color: #a32626; }
.badge-pending { background: #fff4dc; color: #7a5200; }
.badge-claimed { background: #efeafd; color: #5236a8; }
.badge-delivered { background: #e7f6ed; color: #1d6b3d; }
.empty { margin: 8px 0; color: var(--muted); }
.table-note { font-size: 13px; margin: 12px 0 0; }
.login { min-height: 100vh; display: flex; align-items: center; justify-content: center; padding: 24px; }
.login-card { width: 100%; max-width: 400px; margin: 0; padding: 28px; }
.login-card .brand { margin-bottom: 8px; }
.login-card label { display: block; font-size: 14px; font-weight: 600; margin: 16px 0 6px; }
.login-card input { width: 100%; font: inherit; padding: 8px 10px; border: 1px solid #cfd4dc; border-radius: 6px; }
.login-card .btn { margin-top: 16px; width: 100%; padding: 8px 14px; }
.login-card .flash { margin: 12px 0 0; }
`);
