/**
 * The dashboard's lists through `app.request`: the trailing-slash home, filters with real
 * choices, the ordering-key column and the head that holds a message, and the list actions
 * (ticked rows, all that match), each refusing bad input by field and changing nothing.
 */
import { beforeEach, describe, expect, it } from 'vitest';
import {
  ADMIN_FORM_MAX_BODY_BYTES,
  DASHBOARD_PAGE_SIZE,
  FILTER_TEXT_MAX_CHARS,
} from '../../src/admin/index.js';
import { drainOnce } from '../../src/core/drain.js';
import { PermanentDeliveryError } from '../../src/core/errors.js';
import { pgExecutor } from '../../src/drivers/node-pg.js';
import { useTestDatabase } from '../support/database.js';
import {
  ADMIN_TOKEN,
  deadMessages,
  form,
  KIND,
  mountAdmin,
  OTHER_KIND,
  outbox,
  signIn,
  stateOf,
} from './admin-harness.js';

const database = useTestDatabase();
// Each test counts rows of its own: start every one with an empty outbox.
beforeEach(async () => {
  await database.pool.query('DELETE FROM outbox.messages');
});
const KINDS = [OTHER_KIND, KIND];

async function signedInApp() {
  const app = mountAdmin(database, { kinds: KINDS });
  return { app, session: await signIn(app) };
}

async function pageText(app: ReturnType<typeof mountAdmin>, path: string, cookie: string) {
  const response = await app.request(path, { headers: { cookie } });
  return { status: response.status, text: await response.text() };
}

/** The ids of the rows a list page shows, in order. */
function rowIds(page: string): string[] {
  return [...page.matchAll(/<tr data-message-id="(\d+)"/g)].map((match) => match[1]!);
}

async function deadCount(): Promise<number> {
  const { rows } = await database.pool.query<{ n: number }>(
    "SELECT count(*)::int AS n FROM outbox.messages WHERE state = 'dead'",
  );
  return rows[0]!.n;
}

describe('the dashboard home', () => {
  it('answers /admin/ with a redirect to /admin that keeps the query, wherever it is mounted', async () => {
    const app = mountAdmin(database);
    app.get('/admin/host-route', (c) => c.text('the host app under /admin'));
    const slash = await app.request('/admin/?done=signed-out');
    expect(slash.status).toBe(308);
    expect(slash.headers.get('location')).toBe('/admin?done=signed-out');
    const followed = await app.request(slash.headers.get('location')!);
    expect(followed.status).toBe(200);
    expect(await followed.text()).toContain('You are signed out.');

    const nested = mountAdmin(database, { at: '/ops/outbox' });
    expect((await nested.request('/ops/outbox/')).headers.get('location')).toBe('/ops/outbox');
    // The host app's own routes under and beside the mount path are untouched.
    expect(await (await app.request('/admin/host-route')).text()).toBe('the host app under /admin');
    expect((await app.request('/admin/nowhere')).status).toBe(404);
    // Without a token the admin does not exist, trailing slash or not.
    const off = mountAdmin(database, { token: undefined });
    expect((await off.request('/admin/')).status).toBe(404);
  });
});

describe('the message lists', () => {
  it('offers the configured kinds as a select and refuses any other kind, naming the field', async () => {
    await deadMessages(database, ['gone']);
    const { app, session } = await signedInApp();
    const { text } = await pageText(
      app,
      `/admin/dashboard/messages?state=dead&kind=${KIND}`,
      session.cookie,
    );
    expect(text).toContain(
      `<select id="filter-kind" name="kind"><option value="">any kind</option><option value="${KIND}" selected>${KIND}</option><option value="${OTHER_KIND}">${OTHER_KIND}</option></select>`,
    );
    const refused = await pageText(
      app,
      '/admin/dashboard/messages?state=dead&kind=demo.nope',
      session.cookie,
    );
    expect(refused.status).toBe(400);
    expect(refused.text).toContain(
      `Filter kind: must be one of the configured kinds: ${KIND}, ${OTHER_KIND}.`,
    );
    expect(rowIds(refused.text)).toEqual([]);

    // Without configured kinds, a text box that takes any kind name.
    const plain = mountAdmin(database);
    const plainSession = await signIn(plain);
    const typed = await pageText(
      plain,
      '/admin/dashboard/messages?state=dead&kind=demo.nope',
      plainSession.cookie,
    );
    expect(typed.status).toBe(200);
    expect(typed.text).toContain('<input id="filter-kind" name="kind" value="demo.nope"');
  });

  it('filters by error text, ordering key and time, refusing each bad field by name', async () => {
    const { ids } = await deadMessages(database, [
      'HTTP 503 upstream',
      'HTTP 410 gone',
      'dns failure',
    ]);
    const { app, session } = await signedInApp();
    const list = async (query: string) =>
      pageText(app, `/admin/dashboard/messages?state=dead&${query}`, session.cookie);
    expect(rowIds((await list('error=http')).text).sort()).toEqual([ids[0], ids[1]].sort());
    expect(rowIds((await list('error=503')).text)).toEqual([ids[0]]);
    expect(rowIds((await list('orderingKey=nobody')).text)).toEqual([]);
    const nextYear = new Date().getUTCFullYear() + 1;
    expect(rowIds((await list(`from=${nextYear}-01-01T00:00`)).text)).toEqual([]);
    expect(rowIds((await list(`until=${nextYear}-01-01T00:00`)).text)).toHaveLength(3);

    const refusals: [string, string][] = [
      ['state=sent', 'Filter state: must be one of pending, claimed, delivered, dead.'],
      ['from=yesterday', 'Filter from: must be a UTC time like'],
      ['from=2026-02-31T10:00', 'Filter from: must be a UTC time like'],
      ['from=2026-01-02T00:00&until=2026-01-01T00:00', 'Filter until: must be later than from.'],
      [`error=${'x'.repeat(101)}`, 'Filter error: must be at most 100 characters.'],
      [`orderingKey=${'k'.repeat(101)}`, 'Filter orderingKey: must be at most 100 characters.'],
      ['cursor=nope', 'Filter cursor: is not a cursor this API returned.'],
    ];
    for (const [query, problem] of refusals) {
      const refused = await pageText(app, `/admin/dashboard/messages?${query}`, session.cookie);
      expect(refused.status, query).toBe(400);
      expect(refused.text, query).toContain(problem);
    }
  });

  it('escapes hostile filter text wherever the page writes it back', async () => {
    await deadMessages(database, ['gone']);
    const { app, session } = await signedInApp();
    const hostile = encodeURIComponent('"><script>alert(1)</script>');
    const { status, text } = await pageText(
      app,
      `/admin/dashboard/messages?state=dead&error=${hostile}&orderingKey=${hostile}`,
      session.cookie,
    );
    expect(status).toBe(200);
    expect(text).not.toMatch(/<script|"><script/i);
    expect(text).toContain('value="&quot;&gt;&lt;script&gt;alert(1)&lt;/script&gt;"');
  });

  it('shows ordering keys, and on a pending message held behind a dead head, that head and why', async () => {
    const db = pgExecutor(database.pool);
    const [headKey, followerKey] = await outbox.enqueue(db, [
      { kind: KIND, payload: { n: 1 }, orderingKey: 'customer-42' },
      { kind: KIND, payload: { n: 2 }, orderingKey: 'customer-42' },
    ]);
    await drainOnce({
      store: outbox.store(db),
      keys: [headKey!, followerKey!],
      senders: {
        [KIND]: async () => {
          throw new PermanentDeliveryError('410 gone');
        },
      },
    });
    const { rows } = await database.pool.query<{ id: string; state: string }>(
      'SELECT id::text, state FROM outbox.messages WHERE key = ANY($1::uuid[]) ORDER BY id',
      [[headKey, followerKey]],
    );
    expect(rows.map((row) => row.state)).toEqual(['dead', 'pending']);
    const [head, follower] = rows.map((row) => row.id);
    const { app, session } = await signedInApp();
    const pending = await pageText(
      app,
      '/admin/dashboard/messages?state=pending&orderingKey=customer-42',
      session.cookie,
    );
    expect(pending.text).toContain('<th>Ordering key</th>');
    expect(pending.text).toContain(`<tr data-message-id="${follower}" data-held-by="${head}">`);
    expect(pending.text).toContain(
      `held by <a href="/admin/dashboard/messages/${head}">message ${head}</a>: dead head blocking`,
    );
    const page = await pageText(app, `/admin/dashboard/messages/${follower}`, session.cookie);
    expect(page.text).toContain(
      '<code>customer-42</code><div class="held small" data-head-state="dead">',
    );
    const headPage = await pageText(app, `/admin/dashboard/messages/${head}`, session.cookie);
    expect(headPage.text).not.toContain('held by');
  });
});

describe('the list actions', () => {
  it('retries the ticked dead messages and comes back to the same filtered list, saying how many', async () => {
    const { ids } = await deadMessages(database, ['503 a', '503 b', '503 c']);
    const [first, second, third] = ids as [string, string, string];
    const { app, session } = await signedInApp();
    const { cookie, csrf } = session;
    const body = `csrf=${csrf}&state=dead&kind=${KIND}&error=503&id=${first}&id=${second}`;
    const response = await app.request('/admin/dashboard/messages/retry', {
      method: 'POST',
      headers: { cookie, 'content-type': 'application/x-www-form-urlencoded' },
      body,
    });
    expect(response.status).toBe(303);
    expect(response.headers.get('location')).toBe(
      `/admin/dashboard/messages?state=dead&kind=${KIND}&error=503&done=retried&count=2&of=2`,
    );
    expect([await stateOf(database, first), await stateOf(database, second)]).toEqual([
      'pending',
      'pending',
    ]);
    expect(await stateOf(database, third)).toBe('dead');
    const after = await pageText(app, response.headers.get('location')!, cookie);
    expect(after.text).toContain('2 messages of the 2 ticked are pending again.');
    expect(rowIds(after.text)).toEqual([third]);

    // One already retried: discarding the two as dead takes only the one still dead.
    const discarded = await app.request(
      '/admin/dashboard/messages/discard',
      form({ csrf, state: 'dead', id: first }, { cookie }),
    );
    expect(discarded.headers.get('location')).toContain('done=discarded&count=0&of=1');
    const warned = await pageText(app, discarded.headers.get('location')!, cookie);
    expect(warned.text).toContain(
      '0 messages of the 1 ticked are discarded. 1 had left the dead state',
    );
    expect(await stateOf(database, first)).toBe('pending');
  });

  it('retries or discards all that match only when confirmed, and says when the bound was reached', async () => {
    const { ids } = await deadMessages(database, ['503 a', '503 b', '410 c']);
    const { app, session } = await signedInApp();
    const { cookie, csrf } = session;
    const unconfirmed = await app.request(
      '/admin/dashboard/messages/retry-matching',
      form({ csrf, state: 'dead', error: '503' }, { cookie }),
    );
    expect(unconfirmed.status).toBe(400);
    expect(await unconfirmed.text()).toContain('Field confirm: tick the box');
    expect(await deadCount()).toBe(3);

    const retried = await app.request(
      '/admin/dashboard/messages/retry-matching',
      form({ csrf, state: 'dead', error: '503', confirm: 'all' }, { cookie }),
    );
    expect(retried.headers.get('location')).toBe(
      '/admin/dashboard/messages?state=dead&error=503&done=retried-matching&count=2&limit=1000',
    );
    expect(await deadCount()).toBe(1);
    expect(await stateOf(database, ids[2]!)).toBe('dead');
    const page = await pageText(app, retried.headers.get('location')!, cookie);
    expect(page.text).toContain('2 messages that matched are pending again.');

    const discarded = await app.request(
      '/admin/dashboard/messages/discard-matching',
      form({ csrf, state: 'pending', error: '503', confirm: 'all' }, { cookie }),
    );
    expect(discarded.headers.get('location')).toContain('done=discarded-matching&count=2');
    expect(await stateOf(database, ids[0]!)).toBeUndefined();

    const bound = await pageText(
      app,
      '/admin/dashboard/messages?state=dead&done=retried-matching&count=1000&limit=1000',
      cookie,
    );
    expect(bound.text).toContain(
      'That is the most one press takes (1,000): more may match, so press again',
    );
  });

  it('refuses bad input by field and changes nothing', async () => {
    const { ids } = await deadMessages(database, ['gone']);
    const [id] = ids as [string];
    const { app, session } = await signedInApp();
    const { cookie, csrf } = session;
    const refusals: [string, Record<string, string>, string][] = [
      ['retry', { csrf, state: 'dead' }, 'Field id: tick at least one message.'],
      ['retry', { csrf, state: 'dead', id: '1e3' }, 'Field id: each must be a message id.'],
      ['discard', { csrf, id }, 'Field state: is missing.'],
      ['discard', { csrf, state: 'claimed', id }, 'Field state: must be dead or pending'],
      ['discard', { csrf, state: 'delivered', id }, 'Field state: must be dead or pending'],
      [
        'retry',
        { csrf, state: 'dead', kind: 'demo.nope', id },
        'Field kind: must be one of the configured kinds',
      ],
      [
        'retry-matching',
        { csrf, state: 'dead', from: 'soon', confirm: 'all' },
        'Field from: must be a UTC time',
      ],
      [
        'discard-matching',
        { csrf, state: 'dead', error: 'e'.repeat(101), confirm: 'all' },
        'Field error: must be at most 100',
      ],
    ];
    for (const [action, fields, problem] of refusals) {
      const response = await app.request(
        `/admin/dashboard/messages/${action}`,
        form(fields, { cookie }),
      );
      expect(response.status, problem).toBe(400);
      expect(await response.text(), problem).toContain(`${problem}`);
      expect(await stateOf(database, id), problem).toBe('dead');
    }
    const many = Array.from({ length: 51 }, (_, index) => `id=${index + 1}`).join('&');
    const tooMany = await app.request('/admin/dashboard/messages/retry', {
      method: 'POST',
      headers: { cookie, 'content-type': 'application/x-www-form-urlencoded' },
      body: `csrf=${csrf}&state=dead&${many}`,
    });
    expect(tooMany.status).toBe(400);
    expect(await tooMany.text()).toContain('Field id: at most 50 messages at once.');
    expect(await stateOf(database, id)).toBe('dead');
  });

  it('takes a selection at its largest under the form body limit: 50 ids and the longest filter', async () => {
    const { app, session } = await signedInApp();
    const widest = '€'.repeat(FILTER_TEXT_MAX_CHARS);
    const fields = new URLSearchParams({
      csrf: session.csrf,
      state: 'dead',
      kind: 'k'.repeat(63),
      error: widest,
      orderingKey: widest,
      from: '2026-01-01T00:00:00',
      until: '2026-12-31T23:59:59',
    });
    for (let index = 0; index < DASHBOARD_PAGE_SIZE; index++) {
      fields.append('id', String(9_223_372_036_854_775_807n - BigInt(index)));
    }
    const body = fields.toString();
    expect(new TextEncoder().encode(body).length).toBeLessThanOrEqual(ADMIN_FORM_MAX_BODY_BYTES);
    // The kind is not a configured one, so it is refused by name: read whole, not cut off at 413.
    const response = await app.request('/admin/dashboard/messages/retry', {
      method: 'POST',
      headers: { cookie: session.cookie, 'content-type': 'application/x-www-form-urlencoded' },
      body,
    });
    expect(response.status).toBe(400);
    expect(await response.text()).toContain('Field kind: must be one of the configured kinds');
  });

  it('answers an anonymous or forged action with 401 or 403 and changes nothing', async () => {
    const { ids } = await deadMessages(database, ['gone']);
    const [id] = ids as [string];
    const { app, session } = await signedInApp();
    for (const action of ['retry', 'discard', 'retry-matching', 'discard-matching']) {
      const fields = { state: 'dead', id, confirm: 'all' };
      const anonymous = await app.request(`/admin/dashboard/messages/${action}`, form(fields));
      expect(anonymous.status, action).toBe(401);
      const wrongToken = await app.request(
        `/admin/dashboard/messages/${action}`,
        form(fields, { authorization: `Bearer not-${ADMIN_TOKEN}`, 'x-test-client': action }),
      );
      expect(wrongToken.status, action).toBe(401);
      const noCsrf = await app.request(
        `/admin/dashboard/messages/${action}`,
        form(fields, { cookie: session.cookie }),
      );
      expect(noCsrf.status, action).toBe(403);
      expect(await stateOf(database, id), action).toBe('dead');
    }
    const list = await app.request('/admin/dashboard/messages?state=dead');
    expect(list.status).toBe(401);
    expect(await list.text()).toContain('Sign in first.');
  });
});
