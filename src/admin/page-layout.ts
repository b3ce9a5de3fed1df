/** The frame every dashboard page shares: document head, top bar with search, sign-in form. */
import { html, raw } from 'hono/html';
import { CSRF_FIELD } from './admin-auth.js';
import type { AdminPaths } from './admin-paths.js';
import { formatTime } from './display-format.js';
import type { Markup } from './markup.js';
import { DASHBOARD_STYLES } from './styles.js';

/** What the top bar of a signed-in page needs. */
export interface PageFrame {
  paths: AdminPaths;
  now: Date;
  /** The session's CSRF token; every form on the page carries it. */
  csrf: string | null;
  /** A cookie session can sign out; a Bearer client has nothing to sign out of. */
  canSignOut: boolean;
}

export interface Flash {
  tone: 'ok' | 'warn';
  text: string;
}

/** The hidden CSRF field for a form that changes something. */
export function csrfField(frame: PageFrame): Markup {
  return html`<input type="hidden" name="${CSRF_FIELD}" value="${frame.csrf ?? ''}">`;
}

export function layout(title: string, body: Markup): Markup {
  return html`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="robots" content="noindex">
<title>${title}</title>
<link rel="icon" href="data:,">
<style>${raw(DASHBOARD_STYLES)}</style>
</head>
<body>
${body}
</body>
</html>
`;
}

/** A signed-in page: the top bar, an optional flash, then `main`. */
export function signedInPage(
  title: string,
  frame: PageFrame,
  main: Markup,
  flash: Flash | null = null,
): Markup {
  const { paths } = frame;
  return layout(
    title,
    html`<header class="topbar">
  <div class="wrap topbar-inner">
    <h1 class="brand"><a href="${paths.home}">outbox-relay <span>admin</span></a></h1>
    <form class="search" method="get" action="${paths.find}" role="search">
      <label class="visually-hidden" for="find-key">Message key or id</label>
      <input id="find-key" name="key" type="search" placeholder="Message key (UUID) or id" required>
      <button class="btn" type="submit">Find</button>
    </form>
    <div class="topbar-meta">
      <span class="muted">As of ${formatTime(frame.now)} UTC</span>
      <a class="btn" href="${paths.messages}">Messages</a>
      <a class="btn" href="${paths.replays}">Replays</a>
      <a class="btn" href="${paths.destinations}">Destinations</a>
      <a class="btn" href="${paths.home}">Overview</a>
      ${
        frame.canSignOut
          ? html`<form method="post" action="${paths.logout}">${csrfField(frame)}<button class="btn" type="submit">Sign out</button></form>`
          : ''
      }
    </div>
  </div>
</header>
<main class="wrap">
  ${flash ? html`<p class="flash flash-${flash.tone}" role="status">${flash.text}</p>` : ''}
  ${main}
</main>`,
  );
}

export function loginPage(
  paths: AdminPaths,
  options: { error?: string; notice?: string | null },
): Markup {
  return layout(
    'Sign in · outbox-relay',
    html`<main class="login">
  <form class="panel login-card" method="post" action="${paths.login}">
    <h1 class="brand">outbox-relay <span>admin</span></h1>
    <p class="muted">Enter the admin token to open the dashboard.</p>
    ${options.error ? html`<p class="flash flash-warn" role="alert">${options.error}</p>` : ''}
    ${options.notice ? html`<p class="flash flash-ok" role="status">${options.notice}</p>` : ''}
    <label for="token">Admin token</label>
    <input id="token" name="token" type="password" autocomplete="current-password" required autofocus>
    <button class="btn btn-primary" type="submit">Sign in</button>
  </form>
</main>`,
  );
}

/** A short page that says one thing, with a way back. */
export function noticePage(paths: AdminPaths, title: string, text: string): Markup {
  return layout(
    `${title} · outbox-relay`,
    html`<main class="login"><div class="panel login-card">
  <h1 class="brand">${title}</h1>
  <p>${text}</p>
  <p><a href="${paths.home}">Back to the dashboard</a></p>
</div></main>`,
  );
}
