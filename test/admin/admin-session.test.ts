/** Dashboard sessions and CSRF of `outboxAdmin`, at more than one mount path. */
import { describe, expect, it } from 'vitest';
import { SESSION_IDLE_MS, SESSION_MAX_MS } from '../../src/admin/index.js';
import { useTestDatabase } from '../support/database.js';
import { fakeClock } from '../support/drain-fixtures.js';
import { ADMIN_TOKEN, deadMessages, form, mountAdmin, signIn, stateOf } from './admin-harness.js';

const database = useTestDatabase();
const MINUTE = 60_000;

function cookieValue(setCookie: string): string {
  return decodeURIComponent(setCookie.split(';')[0]!.split('=').slice(1).join('='));
}

describe('dashboard sessions', () => {
  it('the session cookie does not contain the admin token', async () => {
    const app = mountAdmin(database);
    const { setCookie } = await signIn(app);
    const value = cookieValue(setCookie);
    expect(value.length).toBeGreaterThan(40);
    const encodings = [
      ADMIN_TOKEN,
      Buffer.from(ADMIN_TOKEN).toString('base64'),
      Buffer.from(ADMIN_TOKEN).toString('base64url'),
      Buffer.from(ADMIN_TOKEN).toString('hex'),
      encodeURIComponent(ADMIN_TOKEN),
    ];
    for (const encoded of encodings) expect(setCookie).not.toContain(encoded);
    expect(setCookie).toContain('HttpOnly');
    expect(setCookie).toContain('SameSite=Strict');
    expect(setCookie).toContain(`Max-Age=${SESSION_IDLE_MS / 1000}`);
    expect(setCookie).not.toContain('Secure');
    // Two sign-ins are two sessions, not one reusable value.
    expect(cookieValue((await signIn(app)).setCookie)).not.toBe(value);
  });

  it.each([
    ['/admin', '/admin'],
    ['/ops/outbox', '/ops/outbox'],
    ['/', ''],
  ])(
    'mounted at %s, links, form actions, redirects and the cookie Path follow the mount',
    async (mount, prefix) => {
      const home = prefix || '/';
      const app = mountAdmin(database, { at: mount });
      const login = await (await app.request(home)).text();
      expect(login).toContain(`method="post" action="${prefix}/login"`);
      const session = await signIn(app, prefix);
      expect(session.setCookie).toContain(`Path=${home};`);
      const signedIn = await app.request(`${prefix}/login`, form({ token: ADMIN_TOKEN }));
      expect(signedIn.headers.get('location')).toBe(home);

      const {
        ids: [id],
      } = await deadMessages(database, ['gone']);
      const headers = { cookie: session.cookie };
      const page = await (await app.request(home, { headers })).text();
      expect(page).toContain(`action="${prefix}/logout"`);
      expect(page).toContain(`href="${prefix}/dashboard/messages?state=dead"`);
      expect(page).toContain(`action="${prefix}/dashboard/find"`);
      expect(page).toContain(`href="${prefix}/dashboard/messages/${id}"`);
      const list = await (
        await app.request(`${prefix}/dashboard/messages?state=dead`, { headers })
      ).text();
      expect(list).toContain(`action="${prefix}/dashboard/messages/retry"`);
      expect(list).toContain(`formaction="${prefix}/dashboard/messages/discard-matching"`);
      const message = await (
        await app.request(`${prefix}/dashboard/messages/${id}`, { headers })
      ).text();
      expect(message).toContain(`action="${prefix}/dashboard/messages/${id}/retry"`);
      for (const drawn of [page, list, message]) {
        const targets = [...drawn.matchAll(/(?:action|href)="([^"]*)"/g)].map((m) => m[1]!);
        for (const target of targets.filter((t) => t.startsWith('/'))) {
          expect(target.startsWith(`${prefix}/`) || target === home, target).toBe(true);
        }
      }

      const retried = await app.request(
        `${prefix}/dashboard/messages/${id}/retry`,
        form({ csrf: session.csrf }, { cookie: session.cookie }),
      );
      expect(retried.status).toBe(303);
      expect(retried.headers.get('location')).toBe(`${home}?done=retried&id=${id}`);
      expect(await stateOf(database, id!)).toBe('pending');

      const api = await app.request(`${prefix}/stats`, { headers: { cookie: session.cookie } });
      expect(api.status).toBe(200);
    },
  );

  it('a cookie from before logout no longer works', async () => {
    const app = mountAdmin(database);
    const { cookie, csrf } = await signIn(app);
    const {
      ids: [id],
    } = await deadMessages(database, ['gone']);

    const refused = await app.request('/admin/logout', form({}, { cookie }));
    expect(refused.status).toBe(403);
    expect((await app.request('/admin/stats', { headers: { cookie } })).status).toBe(200);

    const logout = await app.request('/admin/logout', form({ csrf }, { cookie }));
    expect(logout.status).toBe(303);
    expect(logout.headers.get('location')).toBe('/admin?done=signed-out');
    expect(logout.headers.get('set-cookie')).toMatch(/^outbox_admin=;.*Max-Age=0/);

    // Someone who kept a copy of the cookie gets nothing from it.
    expect((await app.request('/admin/stats', { headers: { cookie } })).status).toBe(401);
    const page = await (await app.request('/admin', { headers: { cookie } })).text();
    expect(page).toContain('name="token"');
    expect(page).not.toContain('Dead letters');
    const retry = await app.request(
      `/admin/dashboard/messages/${id}/retry`,
      form({ csrf }, { cookie }),
    );
    expect(retry.status).toBe(401);
    expect(await stateOf(database, id!)).toBe('dead');
  });

  it('a session slides while used, ends after idle time, and ends at the cap however busy', async () => {
    const clock = fakeClock();
    const app = mountAdmin(database, { clock });
    let { cookie } = await signIn(app);
    const stats = (cookie: string) => app.request('/admin/stats', { headers: { cookie } });

    // Idle past the expiry: over.
    const idle = cookie;
    clock.advance(SESSION_IDLE_MS + 1000);
    expect((await stats(idle)).status).toBe(401);

    // Used every 20 minutes: refreshed, and alive until the cap.
    ({ cookie } = await signIn(app));
    const signedInAt = clock.now().getTime();
    let refreshes = 0;
    while (clock.now().getTime() + 20 * MINUTE < signedInAt + SESSION_MAX_MS) {
      clock.advance(20 * MINUTE);
      const response = await stats(cookie);
      expect(response.status).toBe(200);
      const renewed = response.headers.get('set-cookie');
      if (renewed) {
        cookie = renewed.split(';')[0]!;
        refreshes += 1;
      }
    }
    expect(refreshes).toBeGreaterThan(20);
    clock.set(new Date(signedInAt + SESSION_MAX_MS));
    expect((await stats(cookie)).status).toBe(401);
  });

  it('refuses a tampered cookie and one signed under another token', async () => {
    const app = mountAdmin(database);
    const { cookie } = await signIn(app);
    const [name, value] = cookie.split('=') as [string, string];
    const parts = value.split('.');
    parts[3] = (Number.parseInt(parts[3]!, 36) + 10 * 24 * 60 * MINUTE).toString(36);
    const extended = `${name}=${parts.join('.')}`;
    expect((await app.request('/admin/stats', { headers: { cookie: extended } })).status).toBe(401);
    const otherApp = mountAdmin(database, { token: 'another-token-entirely' });
    expect((await otherApp.request('/admin/stats', { headers: { cookie } })).status).toBe(401);
  });

  it('needs the session CSRF token for a cookie state change, in a field or a header', async () => {
    const app = mountAdmin(database);
    const first = await signIn(app);
    const second = await signIn(app);
    expect(second.csrf).not.toBe(first.csrf);
    const retryAll = (headers: Record<string, string>) =>
      app.request('/admin/messages/retry-dead', { method: 'POST', headers });
    expect((await retryAll({ cookie: first.cookie })).status).toBe(403);
    expect((await retryAll({ cookie: first.cookie, 'x-csrf-token': second.csrf })).status).toBe(
      403,
    );
    expect((await retryAll({ cookie: first.cookie, 'x-csrf-token': first.csrf })).status).toBe(200);
    // Bearer clients send no cookie, so need no CSRF token.
    expect((await retryAll({ authorization: `Bearer ${ADMIN_TOKEN}` })).status).toBe(200);
  });

  it('marks the cookie Secure when the request came over https', async () => {
    const app = mountAdmin(database);
    const direct = await app.request(
      'https://ops.example/admin/login',
      form({ token: ADMIN_TOKEN }),
    );
    expect(direct.headers.get('set-cookie')).toContain('Secure');
    const proxied = await app.request(
      '/admin/login',
      form({ token: ADMIN_TOKEN }, { 'x-forwarded-proto': 'https' }),
    );
    expect(proxied.headers.get('set-cookie')).toContain('Secure');
  });
});
