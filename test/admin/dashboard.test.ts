/** The dashboard pages of `outboxAdmin` through `app.request`: headers, escaping, finding, buttons. */
import { describe, expect, it } from 'vitest';
import { minuteBuckets } from '../../src/admin/delivery-chart.js';
import { formatDuration } from '../../src/admin/display-format.js';
import { ADMIN_CSP, DASHBOARD_PAGE_SIZE } from '../../src/admin/index.js';
import { useTestDatabase } from '../support/database.js';
import {
  ADMIN_TOKEN,
  deadMessages,
  deliveredMessages,
  form,
  mountAdmin,
  OTHER_KIND,
  type SignedIn,
  signIn,
  stateOf,
} from './admin-harness.js';

const database = useTestDatabase();

async function signedInApp(): Promise<{ app: ReturnType<typeof mountAdmin>; session: SignedIn }> {
  const app = mountAdmin(database);
  return { app, session: await signIn(app) };
}

describe('the sign-in page', () => {
  it('shows the token form to an anonymous visitor, with the security headers', async () => {
    const response = await mountAdmin(database).request('/admin');
    expect(response.status).toBe(200);
    expect(response.headers.get('content-security-policy')).toBe(ADMIN_CSP);
    expect(response.headers.get('x-content-type-options')).toBe('nosniff');
    expect(response.headers.get('referrer-policy')).toBe('no-referrer');
    expect(response.headers.get('x-frame-options')).toBe('DENY');
    expect(response.headers.get('cache-control')).toBe('no-store');
    const page = await response.text();
    expect(page).toContain('<form class="panel login-card" method="post" action="/admin/login">');
    expect(page).toContain('name="token"');
    expect(page).not.toContain('Dead letters');
  });

  it('answers a wrong token with 401 and the form again, setting no cookie', async () => {
    const response = await mountAdmin(database).request(
      '/admin/login',
      form({ token: 'wrong' }, { 'x-test-client': 'typist' }),
    );
    expect(response.status).toBe(401);
    expect(response.headers.get('set-cookie')).toBeNull();
    expect(await response.text()).toContain('That token is not right');
  });

  it('sends an anonymous visitor of an inner page to sign in', async () => {
    const response = await mountAdmin(database).request('/admin/dashboard/messages');
    expect(response.status).toBe(401);
    expect(await response.text()).toContain('Sign in first.');
  });
});

describe('the signed-in dashboard', () => {
  it('renders hostile payloads and errors as text', async () => {
    const hostile = '<script>alert("x")</script><img src=x onerror=alert(1)>';
    const {
      ids: [id],
    } = await deadMessages(database, [`bad & ${hostile}`], () => ({
      html: `</pre>${hostile}`,
      quote: `" onmouseover="alert(1)`,
    }));
    const { app, session } = await signedInApp();
    for (const path of [
      '/admin',
      `/admin/dashboard/messages/${id}`,
      '/admin/dashboard/messages?state=dead',
    ]) {
      const response = await app.request(path, { headers: { cookie: session.cookie } });
      expect(response.status, path).toBe(200);
      expect(response.headers.get('content-security-policy')).toBe(ADMIN_CSP);
      const page = await response.text();
      expect(page).toContain(`data-message-id="${id}"`);
      expect(page).not.toMatch(/<script|<img|" onmouseover/i);
      expect(page).toContain('bad &amp; &lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;');
    }
    const deadList = await (
      await app.request('/admin/dashboard/messages?state=dead', {
        headers: { cookie: session.cookie },
      })
    ).text();
    expect(deadList).toContain('&lt;/pre&gt;&lt;script&gt;');
  });

  it('shows a 60-minute chart, and each dead message once: in recent errors, the actions on the dead list', async () => {
    const {
      ids: [id],
    } = await deadMessages(database, ['gone']);
    const { app, session } = await signedInApp();
    const page = await (
      await app.request('/admin', { headers: { cookie: session.cookie } })
    ).text();
    expect(page.match(/<g><title>/g)).toHaveLength(60);
    expect(page).toContain('aria-labelledby="chart-title chart-desc"');
    expect(page.match(new RegExp(`data-message-id="${id}"`, 'g'))).toHaveLength(1);
    expect(page).not.toContain(`/admin/dashboard/messages/${id}/retry`);
    expect(page).toContain('href="/admin/dashboard/messages?state=dead">Open the dead-letter list');

    const list = await (
      await app.request('/admin/dashboard/messages?state=dead', {
        headers: { cookie: session.cookie },
      })
    ).text();
    expect(list).toContain(
      `<form method="post" action="/admin/dashboard/messages/retry" aria-label="Selected messages">
      <input type="hidden" name="csrf" value="${session.csrf}">`,
    );
    expect(list).toContain(`<input type="checkbox" name="id" value="${id}"`);
    expect(list).toContain('formaction="/admin/dashboard/messages/discard"');
    expect(list).toContain('formaction="/admin/dashboard/messages/retry-matching"');
  });

  it('find a message by key and see it whole', async () => {
    const longError = `503 from the receiver: ${'x'.repeat(1000)} END-OF-ERROR`;
    const {
      ids: [id],
      keys: [key],
    } = await deadMessages(database, [longError], () => ({
      to: 'ops@example.com',
      body: `${'y'.repeat(3000)} END-OF-PAYLOAD`,
    }));
    const { app, session } = await signedInApp();
    const headers = { cookie: session.cookie };
    const found = await app.request(`/admin/dashboard/find?key=${key}`, { headers });
    expect(found.status).toBe(303);
    expect(found.headers.get('location')).toBe(`/admin/dashboard/messages/${id}`);
    // An id works in the same box.
    const byId = await app.request(`/admin/dashboard/find?key=${id}`, { headers });
    expect(byId.headers.get('location')).toBe(`/admin/dashboard/messages/${id}`);

    const page = await (await app.request(found.headers.get('location')!, { headers })).text();
    expect(page).toContain(`<code>${key}</code>`);
    expect(page).toContain('1 of ');
    expect(page).toContain('END-OF-ERROR');
    expect(page).toContain('END-OF-PAYLOAD');
    expect(page).toContain('&quot;to&quot;: &quot;ops@example.com&quot;');
    for (const label of ['Last due', 'Claimed at', 'Created', 'Dead at', 'Ordering key']) {
      expect(page).toContain(`<dt>${label}</dt>`);
    }
    expect(page).toContain(`action="/admin/dashboard/messages/${id}/retry"`);

    const missing = await app.request(
      '/admin/dashboard/find?key=00000000-0000-4000-8000-000000000000',
      { headers },
    );
    expect(missing.status).toBe(404);
    const nonsense = await app.request('/admin/dashboard/find?key=%3Cb%3Enope', { headers });
    expect(nonsense.status).toBe(400);
    expect(await nonsense.text()).not.toContain('<b>');
  });

  it('list delivered messages page by page, filtered by kind', async () => {
    const wanted = await deliveredMessages(database, OTHER_KIND, DASHBOARD_PAGE_SIZE + 3);
    const { app, session } = await signedInApp();
    const headers = { cookie: session.cookie };
    const first = await app.request(
      `/admin/dashboard/messages?state=delivered&kind=${OTHER_KIND}`,
      { headers },
    );
    expect(first.status).toBe(200);
    const firstPage = await first.text();
    expect(firstPage).toContain('<option value="delivered" selected>');
    expect(firstPage).toContain(`value="${OTHER_KIND}"`);
    const next = /href="([^"]+)" rel="next"/.exec(firstPage)?.[1]?.replaceAll('&amp;', '&');
    expect(next).toMatch(/^\/admin\/dashboard\/messages\?state=delivered&kind=demo\.other&cursor=/);
    const secondPage = await (await app.request(next!, { headers })).text();
    expect(secondPage).not.toContain('rel="next"');
    const rows = (page: string) =>
      [...page.matchAll(/<tr data-message-id="(\d+)">/g)].map((m) => m[1]);
    const shown = [...rows(firstPage), ...rows(secondPage)];
    expect(shown).toHaveLength(wanted.length);
    expect(new Set(shown).size).toBe(wanted.length);
    expect(`${firstPage}${secondPage}`).not.toContain('<code>demo.notify</code>');
    // Delivered messages wait for the purge: nothing to retry or discard, only a resend (through
    // its dry run, test/admin/dashboard-replay.test.ts).
    expect(firstPage).not.toContain('/admin/dashboard/messages/retry');
    expect(firstPage).not.toContain('/admin/dashboard/messages/discard');
    expect(firstPage).toContain('Resend selected…');

    const badCursor = await app.request('/admin/dashboard/messages?state=delivered&cursor=x', {
      headers,
    });
    expect(badCursor.status).toBe(400);
    const badState = await app.request('/admin/dashboard/messages?state=sent', { headers });
    expect(badState.status).toBe(400);
  });

  it('retries a dead message from its button and says so after the redirect', async () => {
    const {
      ids: [id],
    } = await deadMessages(database, ['gone']);
    const { app, session } = await signedInApp();
    const { cookie, csrf } = session;
    const refused = await app.request(
      `/admin/dashboard/messages/${id}/retry`,
      form({}, { cookie }),
    );
    expect(refused.status).toBe(403);
    expect(await stateOf(database, id!)).toBe('dead');

    const response = await app.request(
      `/admin/dashboard/messages/${id}/retry`,
      form({ csrf }, { cookie }),
    );
    expect(response.status).toBe(303);
    expect(response.headers.get('location')).toBe(`/admin?done=retried&id=${id}`);
    expect(await stateOf(database, id!)).toBe('pending');
    const page = await (
      await app.request(response.headers.get('location')!, { headers: { cookie } })
    ).text();
    expect(page).toContain(`Message ${id} is pending again`);

    const again = await app.request(
      `/admin/dashboard/messages/${id}/retry`,
      form({ csrf }, { cookie }),
    );
    expect(again.headers.get('location')).toBe(`/admin?done=not-dead&id=${id}`);
  });

  it('discards a dead message but not one retried since, and retries all dead at once', async () => {
    const {
      ids: [first, second, third],
    } = await deadMessages(database, ['a', 'b', 'c']);
    const { app, session } = await signedInApp();
    const { cookie, csrf } = session;
    const discarded = await app.request(
      `/admin/dashboard/messages/${first}/discard`,
      form({ csrf }, { cookie }),
    );
    expect(discarded.headers.get('location')).toBe(`/admin?done=discarded&id=${first}`);
    expect(await stateOf(database, first!)).toBeUndefined();

    await app.request(`/admin/dashboard/messages/${second}/retry`, form({ csrf }, { cookie }));
    const notDead = await app.request(
      `/admin/dashboard/messages/${second}/discard`,
      form({ csrf }, { cookie }),
    );
    expect(notDead.headers.get('location')).toBe(`/admin?done=not-dead&id=${second}`);
    expect(await stateOf(database, second!)).toBe('pending');

    const all = await app.request(
      '/admin/dashboard/messages/retry-dead',
      form({ csrf }, { cookie }),
    );
    expect(all.status).toBe(303);
    expect(all.headers.get('location')).toMatch(/^\/admin\?done=retried-all&count=[1-9][0-9]*$/);
    expect(await stateOf(database, third!)).toBe('pending');
  });

  it('refuses a malformed or out-of-range message id with 400', async () => {
    const { app, session } = await signedInApp();
    for (const id of ['1e3', '9223372036854775808', '0']) {
      const action = await app.request(
        `/admin/dashboard/messages/${id}/retry`,
        form({ csrf: session.csrf }, { cookie: session.cookie }),
      );
      expect(action.status, id).toBe(400);
      const view = await app.request(`/admin/dashboard/messages/${id}`, {
        headers: { cookie: session.cookie },
      });
      expect(view.status, id).toBe(400);
    }
  });

  it('never echoes the query string: a flash with a forged id shows nothing', async () => {
    const { app, session } = await signedInApp();
    const response = await app.request(
      '/admin?done=retried&id=%3Cscript%3Ealert(1)%3C%2Fscript%3E',
      { headers: { cookie: session.cookie } },
    );
    const page = await response.text();
    expect(page).not.toContain('is pending again');
    expect(page).not.toMatch(/<script/i);
  });

  it('serves a Bearer client the pages too, without a sign-out button', async () => {
    const response = await mountAdmin(database).request('/admin', {
      headers: { authorization: `Bearer ${ADMIN_TOKEN}` },
    });
    expect(response.status).toBe(200);
    const page = await response.text();
    expect(page).toContain('Dead letters');
    expect(page).not.toContain('Sign out');
  });
});

describe('dashboard pieces', () => {
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
