/**
 * The dashboard's destinations page through `app.request` over a real database: health made by
 * a real drain whose sender fails; the rows, their escaping, and the pause and resume buttons
 * with their redirects, notes and refusals.
 */
import { beforeEach, describe, expect, it } from 'vitest';
import { pgExecutor } from '../../src/drivers/node-pg.js';
import { useTestDatabase } from '../support/database.js';
import { enqueueTo, failDeliveries } from '../support/destination-fixtures.js';
import { fakeClock } from '../support/drain-fixtures.js';
import { ADMIN_TOKEN, form, mountAdmin, type SignedIn, signIn } from './admin-harness.js';

const database = useTestDatabase();
const DOWN = 'https://down.example';
const UP = 'https://up.example';
const PAGE = '/admin/dashboard/destinations';

beforeEach(async () => {
  await database.pool.query(
    'TRUNCATE outbox.messages, outbox.delivered_groups, outbox.destinations',
  );
});

async function signedInApp(clock = fakeClock()) {
  const app = mountAdmin(database, { clock });
  return { app, session: await signIn(app), clock };
}

async function pageOf(app: ReturnType<typeof mountAdmin>, session: SignedIn, path = PAGE) {
  const response = await app.request(path, { headers: { cookie: session.cookie } });
  return { status: response.status, page: await response.text() };
}

/** The `<tr>` of one destination, as the page has it (its name escaped as `html` escapes). */
function rowOf(page: string, escapedName: string): string {
  const start = page.indexOf(`<tr data-destination="${escapedName}"`);
  expect(start, escapedName).toBeGreaterThan(-1);
  return page.slice(start, page.indexOf('</tr>', start));
}

async function destinationRows() {
  const { rows } = await database.pool.query(
    'SELECT destination, paused_by, paused_until, failures FROM outbox.destinations ORDER BY destination',
  );
  return rows;
}

describe('the destinations page', () => {
  it('shows each destination’s state, failures, cause, reopening, last error and waiting, paused first', async () => {
    const { app, session, clock } = await signedInApp();
    const db = pgExecutor(database.pool);
    await failDeliveries(db, UP, 2, { clock, error: 'HTTP 502 twice' });
    await failDeliveries(db, DOWN, 5, { clock });
    const { status, page } = await pageOf(app, session);
    expect(status).toBe(200);
    expect(page).toContain(`<a class="btn" href="${PAGE}">Destinations</a>`);
    expect(page.indexOf(`data-destination="${DOWN}"`)).toBeLessThan(
      page.indexOf(`data-destination="${UP}"`),
    );
    const down = rowOf(page, DOWN);
    expect(down).toContain('data-state="open"');
    expect(down).toContain('<span class="badge badge-dead">open</span>');
    expect(down).toContain('<td class="num">5</td>');
    expect(down).toContain('failures in a row');
    expect(down).toContain(`datetime="${new Date(clock.now().getTime() + 30_000).toISOString()}"`);
    expect(down).toContain('in 30 s');
    expect(down).toContain('HTTP 503 from the receiver');
    expect(down).toContain('>Pause again</button>');
    expect(down).toContain('>Resume</button>');
    const up = rowOf(page, UP);
    expect(up).toContain('<span class="badge badge-delivered">closed</span>');
    expect(up).toContain('HTTP 502 twice');
    expect(up).toContain('>Pause</button>');
    expect(up).not.toContain('Resume');
    for (const option of ['10 min', '1 h', 'until resumed'])
      expect(up).toContain(`>${option}</option>`);
    expect(up).toContain(`name="csrf" value="${session.csrf}"`);
  });

  it('says so when no destination has a record', async () => {
    const { app, session } = await signedInApp();
    expect((await pageOf(app, session)).page).toContain(
      'No destination has failed or been paused: every one is sent to as usual.',
    );
  });

  it('renders a hostile destination name and error as text, and a forged note names nothing', async () => {
    const { app, session, clock } = await signedInApp();
    const hostile = '<script>alert(1)</script>" onmouseover="alert(2)';
    await failDeliveries(pgExecutor(database.pool), hostile, 1, {
      clock,
      error: '<img src=x onerror=alert(3)>',
    });
    const { page } = await pageOf(app, session);
    expect(page).not.toMatch(/<script|<img|" onmouseover/i);
    const escaped = '&lt;script&gt;alert(1)&lt;/script&gt;&quot; onmouseover=&quot;alert(2)';
    expect(rowOf(page, escaped)).toContain(
      `<input type="hidden" name="destination" value="${escaped}">`,
    );
    expect(page).toContain('&lt;img src=x onerror=alert(3)&gt;');

    const forged = await pageOf(
      app,
      session,
      `${PAGE}?done=paused&destination=${encodeURIComponent('Your account is locked')}&count=1`,
    );
    expect(forged.page).not.toContain('Your account is locked');
    expect(forged.page).toContain('<p class="flash flash-ok" role="status">Paused.</p>');
  });

  it('pauses until resumed from its button, says so after the redirect, and resume sends again', async () => {
    const { app, session } = await signedInApp();
    const { cookie, csrf } = session;
    await enqueueTo(pgExecutor(database.pool), UP, 2);
    const paused = await app.request(
      `${PAGE}/pause`,
      form({ csrf, destination: UP, for: 'until-resumed' }, { cookie }),
    );
    expect(paused.status).toBe(303);
    const location = paused.headers.get('location')!;
    expect(location).toBe(`${PAGE}?done=paused&destination=${encodeURIComponent(UP)}&count=2`);
    expect(await destinationRows()).toMatchObject([
      { destination: UP, paused_by: 'operator', paused_until: new Date('9999-12-31T00:00:00Z') },
    ]);
    const after = await pageOf(app, session, location);
    expect(after.page).toContain(`${UP} is paused until resumed: 2 pending messages held.`);
    expect(rowOf(after.page, UP)).toContain('until resumed');

    const resumed = await app.request(
      `${PAGE}/resume`,
      form({ csrf, destination: UP }, { cookie }),
    );
    expect(resumed.status).toBe(303);
    const back = await pageOf(app, session, resumed.headers.get('location')!);
    expect(back.page).toContain(`${UP} is sent to again: 2 messages due now.`);
    expect(rowOf(back.page, UP)).toContain('data-state="closed"');
    expect(await destinationRows()).toMatchObject([
      { destination: UP, paused_by: null, paused_until: null },
    ]);
  });

  it('pauses for 10 minutes or an hour as the select says', async () => {
    const { app, session, clock } = await signedInApp();
    const { cookie, csrf } = session;
    for (const [choice, ms] of [
      ['10m', 600_000],
      ['1h', 3_600_000],
    ] as const) {
      const response = await app.request(
        `${PAGE}/pause`,
        form({ csrf, destination: DOWN, for: choice }, { cookie }),
      );
      expect(response.status).toBe(303);
      expect(await destinationRows()).toMatchObject([
        { destination: DOWN, paused_until: new Date(clock.now().getTime() + ms) },
      ]);
      const { page } = await pageOf(app, session, response.headers.get('location')!);
      expect(page).toContain(
        `${DOWN} is paused until ${new Date(clock.now().getTime() + ms).toISOString().slice(0, 19).replace('T', ' ')} UTC: 0 pending messages held.`,
      );
    }
  });

  it('resume of a destination with no record changes nothing and says so', async () => {
    const { app, session } = await signedInApp();
    const response = await app.request(
      `${PAGE}/resume`,
      form({ csrf: session.csrf, destination: UP }, { cookie: session.cookie }),
    );
    expect(response.headers.get('location')).toBe(`${PAGE}?done=missing`);
    expect((await pageOf(app, session, response.headers.get('location')!)).page).toContain(
      'That destination has no record',
    );
    expect(await destinationRows()).toEqual([]);
  });

  it.each([
    ['pause', { destination: UP, for: '2h' }, 'Field for: must be one of 10m, 1h, until-resumed'],
    ['pause', { destination: UP }, 'Field for: must be one of'],
    ['pause', { for: '10m' }, 'Field destination: must be a destination name'],
    ['pause', { destination: '', for: '10m' }, 'Field destination: must be a destination name'],
    ['pause', { destination: 'x'.repeat(301), for: '10m' }, 'Field destination:'],
    ['resume', {}, 'Field destination: must be a destination name'],
  ])(
    'refuses a %s with %j as a 400 naming the field, writing nothing',
    async (action, fields, text) => {
      const { app, session } = await signedInApp();
      await enqueueTo(pgExecutor(database.pool), UP, 1);
      const response = await app.request(
        `${PAGE}/${action}`,
        form({ csrf: session.csrf, ...fields }, { cookie: session.cookie }),
      );
      expect(response.status).toBe(400);
      const page = await response.text();
      expect(page).toContain(text);
      expect(page).toContain('Nothing was changed.');
      expect(await destinationRows()).toEqual([]);
    },
  );

  it('refuses a press without the CSRF token (403) or a session (401), writing nothing', async () => {
    const { app, session } = await signedInApp();
    const fields = { destination: UP, for: '10m' };
    const noCsrf = await app.request(`${PAGE}/pause`, form(fields, { cookie: session.cookie }));
    expect(noCsrf.status).toBe(403);
    const anonymous = await app.request(`${PAGE}/pause`, form(fields));
    expect(anonymous.status).toBe(401);
    const wrongBearer = await app.request(PAGE, { headers: { authorization: 'Bearer wrong' } });
    expect(wrongBearer.status).toBe(401);
    expect(await destinationRows()).toEqual([]);
    const bearer = await app.request(PAGE, { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } });
    expect(bearer.status).toBe(200);
  });

  it('pages by after, and refuses an after that cannot be a name', async () => {
    const { app, session } = await signedInApp();
    const { status, page } = await pageOf(app, session, `${PAGE}?after=${'x'.repeat(301)}`);
    expect(status).toBe(400);
    expect(page).toContain('Field after: must be a destination name.');
    await database.pool.query(
      `INSERT INTO outbox.destinations (destination, failures, updated_at)
       SELECT 'https://d' || lpad(n::text, 3, '0') || '.example', 1, now()
       FROM generate_series(1, 101) n`,
    );
    const first = await pageOf(app, session);
    expect(first.page.match(/<tr data-destination=/g)).toHaveLength(100);
    const next = `${PAGE}?after=${encodeURIComponent('https://d100.example')}`;
    expect(first.page).toContain(
      `<a class="btn" href="${next.replaceAll('&', '&amp;')}" rel="next">Next</a>`,
    );
    const second = await pageOf(app, session, next);
    expect(second.page.match(/<tr data-destination="([^"]+)"/g)).toEqual([
      '<tr data-destination="https://d101.example"',
    ]);
    expect(second.page).toContain(`<a class="btn" href="${PAGE}">First</a>`);
    expect(second.page).not.toContain('rel="next"');
  });
});
