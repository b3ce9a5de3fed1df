/** The dashboard's routes through `app.request`: sign-in, headers, escaping, the buttons. */
import { describe, expect, it } from 'vitest';
import { createApp } from '../../examples/reference-service/app.js';
import { drainOnce } from '../../src/core/drain.js';
import { PermanentDeliveryError } from '../../src/core/errors.js';
import type { JsonValue } from '../../src/core/message.js';
import { pgExecutor } from '../../src/drivers/node-pg.js';
import { csrfToken } from '../../src/http/admin-auth.js';
import {
  DASHBOARD_CSP,
  escapeHtml,
  formatDuration,
  LOGIN_PATH,
  minuteBuckets,
} from '../../src/http/dashboard.js';
import { createOutbox } from '../../src/outbox.js';
import { useTestDatabase } from '../support/database.js';

const database = useTestDatabase();
const ADMIN_TOKEN = 'dashboard-test-token';
const KIND = 'demo.notify';
const SESSION = { cookie: `outbox_admin=${ADMIN_TOKEN}` };

const outbox = createOutbox({ kinds: { [KIND]: true } });

function dashboardApp(options: { adminToken?: string } = { adminToken: ADMIN_TOKEN }) {
  return createApp({ db: pgExecutor(database.pool), outbox, adminToken: options.adminToken });
}

function form(fields: Record<string, string>, headers: Record<string, string> = {}) {
  return {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded', ...headers },
    body: new URLSearchParams(fields).toString(),
  };
}

/** Enqueues one message per error and drains just those, so each ends dead with that error. */
async function deadMessages(
  errors: string[],
  payload: (index: number) => JsonValue = (index) => ({ index }),
): Promise<string[]> {
  const db = pgExecutor(database.pool);
  const keys = await outbox.enqueue(
    db,
    errors.map((_, index) => ({ kind: KIND, payload: payload(index) })),
  );
  await drainOnce({
    store: outbox.store(db),
    keys,
    senders: {
      [KIND]: async (message) => {
        throw new PermanentDeliveryError(errors[keys.indexOf(message.key)] ?? 'no');
      },
    },
  });
  const { rows } = await database.pool.query<{ id: string; state: string }>(
    'SELECT id::text, state FROM outbox.messages WHERE key = ANY($1::uuid[]) ORDER BY id',
    [keys],
  );
  expect(rows.map((row) => row.state)).toEqual(errors.map(() => 'dead'));
  return rows.map((row) => row.id);
}

async function stateOf(id: string): Promise<string | undefined> {
  const { rows } = await database.pool.query<{ state: string }>(
    'SELECT state FROM outbox.messages WHERE id = $1',
    [id],
  );
  return rows[0]?.state;
}

describe('signing in to the dashboard', () => {
  it('does not exist without an admin token: 404 for the page and the login', async () => {
    const app = dashboardApp({});
    expect((await app.request('/admin')).status).toBe(404);
    expect((await app.request(LOGIN_PATH, form({ token: 'anything' }))).status).toBe(404);
  });

  it('shows the token form to an anonymous visitor, with the security headers', async () => {
    const response = await dashboardApp().request('/admin');
    expect(response.status).toBe(200);
    expect(response.headers.get('content-security-policy')).toBe(DASHBOARD_CSP);
    expect(response.headers.get('x-content-type-options')).toBe('nosniff');
    expect(response.headers.get('referrer-policy')).toBe('no-referrer');
    const page = await response.text();
    expect(page).toContain(`<form class="panel login-card" method="post" action="${LOGIN_PATH}">`);
    expect(page).toContain('name="token"');
    expect(page).not.toContain('Dead letters');
  });

  it('answers a wrong token with 401 and the form again, setting no cookie', async () => {
    const response = await dashboardApp().request(LOGIN_PATH, form({ token: 'wrong' }));
    expect(response.status).toBe(401);
    expect(response.headers.get('set-cookie')).toBeNull();
    expect(await response.text()).toContain('That token is not right');
  });

  it('sets an HttpOnly, SameSite=Strict cookie on /admin and redirects 303 for the right token', async () => {
    const response = await dashboardApp().request(LOGIN_PATH, form({ token: ADMIN_TOKEN }));
    expect(response.status).toBe(303);
    expect(response.headers.get('location')).toBe('/admin');
    const cookie = response.headers.get('set-cookie') ?? '';
    expect(cookie).toMatch(/^outbox_admin=dashboard-test-token;/);
    expect(cookie).toContain('HttpOnly');
    expect(cookie).toContain('SameSite=Strict');
    expect(cookie).toContain('Path=/admin');
    expect(cookie).not.toContain('Secure');
  });

  it('marks the cookie Secure when the request came over https', async () => {
    const app = dashboardApp();
    const direct = await app.request(
      `https://ops.example${LOGIN_PATH}`,
      form({ token: ADMIN_TOKEN }),
    );
    expect(direct.headers.get('set-cookie')).toContain('Secure');
    const proxied = await app.request(
      LOGIN_PATH,
      form({ token: ADMIN_TOKEN }, { 'x-forwarded-proto': 'https' }),
    );
    expect(proxied.headers.get('set-cookie')).toContain('Secure');
  });

  it('signs out only with the CSRF token, clearing the cookie', async () => {
    const app = dashboardApp();
    expect((await app.request('/admin/logout', form({}, SESSION))).status).toBe(403);
    const response = await app.request(
      '/admin/logout',
      form({ csrf: await csrfToken(ADMIN_TOKEN) }, SESSION),
    );
    expect(response.status).toBe(303);
    expect(response.headers.get('set-cookie')).toMatch(/^outbox_admin=;.*Max-Age=0/);
  });
});

describe('the signed-in dashboard', () => {
  it('renders hostile payloads and errors as text', async () => {
    const hostile = '<script>alert("x")</script><img src=x onerror=alert(1)>';
    const [id] = await deadMessages([`bad & ${hostile}`], () => ({
      html: `</pre>${hostile}`,
      quote: `" onmouseover="alert(1)`,
    }));
    const response = await dashboardApp().request('/admin', { headers: SESSION });
    expect(response.status).toBe(200);
    expect(response.headers.get('content-security-policy')).toBe(DASHBOARD_CSP);
    const page = await response.text();
    expect(page).toContain(`data-message-id="${id}"`);
    expect(page).not.toMatch(/<script|<img|" onmouseover/i);
    expect(page).toContain('bad &amp; &lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;');
    expect(page).toContain('&lt;/pre&gt;&lt;script&gt;');
  });

  it('shows a 60-minute chart and one Retry and Discard form per dead message, each with the CSRF field', async () => {
    const [id] = await deadMessages(['gone']);
    const page = await (await dashboardApp().request('/admin', { headers: SESSION })).text();
    const csrf = await csrfToken(ADMIN_TOKEN);
    expect(page.match(/<g><title>/g)).toHaveLength(60);
    expect(page).toContain('aria-labelledby="chart-title chart-desc"');
    for (const action of ['retry', 'discard']) {
      expect(page).toContain(
        `<form method="post" action="/admin/dashboard/messages/${id}/${action}"><input type="hidden" name="csrf" value="${csrf}">`,
      );
    }
    expect(page).toContain('action="/admin/dashboard/messages/retry-dead"');
  });

  it('retries a dead message from its button and says so after the redirect', async () => {
    const [id] = await deadMessages(['gone']);
    const app = dashboardApp();
    const csrf = await csrfToken(ADMIN_TOKEN);
    const refused = await app.request(`/admin/dashboard/messages/${id}/retry`, form({}, SESSION));
    expect(refused.status).toBe(403);
    expect(await stateOf(id!)).toBe('dead');

    const response = await app.request(
      `/admin/dashboard/messages/${id}/retry`,
      form({ csrf }, SESSION),
    );
    expect(response.status).toBe(303);
    expect(response.headers.get('location')).toBe(`/admin?done=retried&id=${id}`);
    expect(await stateOf(id!)).toBe('pending');
    const page = await (
      await app.request(response.headers.get('location')!, { headers: SESSION })
    ).text();
    expect(page).toContain(`Message ${id} is pending again`);

    const again = await app.request(
      `/admin/dashboard/messages/${id}/retry`,
      form({ csrf }, SESSION),
    );
    expect(again.headers.get('location')).toBe(`/admin?done=not-dead&id=${id}`);
  });

  it('discards a dead message but not one retried since, and retries all dead at once', async () => {
    const [first, second, third] = await deadMessages(['a', 'b', 'c']);
    const app = dashboardApp();
    const csrf = await csrfToken(ADMIN_TOKEN);
    const discarded = await app.request(
      `/admin/dashboard/messages/${first}/discard`,
      form({ csrf }, SESSION),
    );
    expect(discarded.headers.get('location')).toBe(`/admin?done=discarded&id=${first}`);
    expect(await stateOf(first!)).toBeUndefined();

    await app.request(`/admin/dashboard/messages/${second}/retry`, form({ csrf }, SESSION));
    const notDead = await app.request(
      `/admin/dashboard/messages/${second}/discard`,
      form({ csrf }, SESSION),
    );
    expect(notDead.headers.get('location')).toBe(`/admin?done=not-dead&id=${second}`);
    expect(await stateOf(second!)).toBe('pending');

    const all = await app.request('/admin/dashboard/messages/retry-dead', form({ csrf }, SESSION));
    expect(all.status).toBe(303);
    expect(all.headers.get('location')).toMatch(/^\/admin\?done=retried-all&count=[1-9][0-9]*$/);
    expect(await stateOf(third!)).toBe('pending');
  });

  it('refuses a malformed message id with 400', async () => {
    const response = await dashboardApp().request(
      '/admin/dashboard/messages/1e3/retry',
      form({ csrf: await csrfToken(ADMIN_TOKEN) }, SESSION),
    );
    expect(response.status).toBe(400);
  });

  it('never echoes the query string: a flash with a forged id shows nothing', async () => {
    const response = await dashboardApp().request(
      '/admin?done=retried&id=%3Cscript%3Ealert(1)%3C%2Fscript%3E',
      { headers: SESSION },
    );
    const page = await response.text();
    expect(page).not.toContain('is pending again');
    expect(page).not.toMatch(/<script/i);
  });
});

describe('dashboard helpers', () => {
  it('escapes the five HTML-significant characters', () => {
    expect(escapeHtml(`<a href="x" title='y'>&</a>`)).toBe(
      '&lt;a href=&quot;x&quot; title=&#39;y&#39;&gt;&amp;&lt;/a&gt;',
    );
  });

  it('fills 60 one-minute buckets ending at the current minute, zero where nothing happened', () => {
    const now = new Date('2025-01-01T12:34:56Z');
    const buckets = minuteBuckets(
      [
        { minute: new Date('2025-01-01T11:35:00Z'), delivered: 2, failed: 3, dead: 1 },
        { minute: new Date('2025-01-01T12:34:00Z'), delivered: 5, failed: 0, dead: 0 },
      ],
      now,
    );
    expect(buckets).toHaveLength(60);
    expect(buckets[0]).toEqual({
      minute: new Date('2025-01-01T11:35:00Z'),
      delivered: 2,
      retried: 2,
      dead: 1,
    });
    expect(buckets[59]).toMatchObject({ minute: new Date('2025-01-01T12:34:00Z'), delivered: 5 });
    expect(buckets.slice(1, 59).every((b) => b.delivered + b.retried + b.dead === 0)).toBe(true);
  });

  it('formats lag as a short duration', () => {
    expect(formatDuration(0)).toBe('0 s');
    expect(formatDuration(192_000)).toBe('3 m 12 s');
    expect(formatDuration(3 * 60 * 60 * 1000 + 5 * 60 * 1000)).toBe('3 h 5 m');
    expect(formatDuration(3 * 24 * 60 * 60 * 1000)).toBe('3 d 0 h');
  });
});
