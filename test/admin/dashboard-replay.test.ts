/**
 * Replay on the dashboard through `app.request`: the buttons on the dead and delivered lists and
 * a message's page, the dry run's count and sample (the list's filter as the selection), the
 * second press that replays what was counted, the bounded run that stops and continues, and the
 * Replays page. Refusals are in dashboard-replay-refusals.test.ts.
 */
import { beforeEach, describe, expect, it } from 'vitest';
import { DASHBOARD_REPLAYS_PAGE_SIZE } from '../../src/admin/dashboard-replay-routes.js';
import { pgExecutor } from '../../src/drivers/node-pg.js';
import { useTestDatabase } from '../support/database.js';
import { auditRows, insertDeadMessages } from '../support/replay-fixtures.js';
import {
  deadMessages,
  deliveredMessages,
  KIND,
  mountAdmin,
  OTHER_KIND,
  outbox,
  signIn,
  stateOf,
  statesOf,
} from './admin-harness.js';
import { carried, getPage, postForm, rowIds } from './replay-page-harness.js';

const database = useTestDatabase();
beforeEach(async () => {
  await database.pool.query('TRUNCATE outbox.messages, outbox.replays');
});
const KINDS = [OTHER_KIND, KIND];

async function signedInApp(options: Parameters<typeof mountAdmin>[1] = {}) {
  const app = mountAdmin(database, { kinds: KINDS, ...options });
  return { app, session: await signIn(app) };
}

async function keysOf(ids: string[]): Promise<string[]> {
  const { rows } = await database.pool.query<{ key: string }>(
    'SELECT key::text FROM outbox.all_messages WHERE id = ANY($1::bigint[]) ORDER BY id',
    [ids],
  );
  return rows.map((row) => row.key);
}

describe('replay on the dashboard', () => {
  it('puts replay buttons on the dead and delivered lists and on such a message page, and none elsewhere', async () => {
    const { ids } = await deadMessages(database, ['HTTP 503']);
    await deliveredMessages(database, KIND, 1);
    const { app, session } = await signedInApp();
    const dryRun = 'formaction="/admin/dashboard/replays/dry-run"';
    const dead = await getPage(app, '/admin/dashboard/messages?state=dead', session.cookie);
    expect(dead.text).toContain(`name="scope" value="selected" ${dryRun}>Replay selected…`);
    expect(dead.text).toContain(
      `name="scope" value="matching" ${dryRun} formnovalidate>Replay all that match…`,
    );
    const delivered = await getPage(
      app,
      '/admin/dashboard/messages?state=delivered',
      session.cookie,
    );
    expect(delivered.text).toContain('<input type="checkbox" name="id"');
    expect(delivered.text).toContain(`name="scope" value="selected" ${dryRun}>Resend selected…`);
    expect(delivered.text).toContain('Resend all that match…');
    expect(delivered.text).not.toContain('Discard selected');
    const pending = await getPage(app, '/admin/dashboard/messages?state=pending', session.cookie);
    expect(pending.text).not.toContain('/replays/dry-run');
    const page = await getPage(app, `/admin/dashboard/messages/${ids[0]}`, session.cookie);
    expect(page.text).toContain('<input type="hidden" name="scope" value="selected">');
    expect(page.text).toContain('Replay…</button>');
    // The header links the audit from every signed-in page.
    expect((await getPage(app, '/admin', session.cookie)).text).toContain(
      '<a class="btn" href="/admin/dashboard/replays">Replays</a>',
    );
  });

  it('counts all that match the filter first, with a sample, and writes nothing', async () => {
    const { ids } = await deadMessages(database, ['HTTP 503 a', 'HTTP 410 gone', 'HTTP 503 b']);
    const { app, session } = await signedInApp();
    const { response, text } = await postForm(
      app,
      '/admin/dashboard/replays/dry-run',
      { csrf: session.csrf, state: 'dead', kind: KIND, error: '503', scope: 'matching' },
      session.cookie,
    );
    expect(response.status).toBe(200);
    expect(text).toContain('data-matched="2"');
    expect(text).toContain('<strong>2 messages</strong> match now.');
    expect(rowIds(text)).toEqual([ids[0], ids[2]]);
    expect(JSON.parse(carried(text).selection)).toEqual({
      state: 'dead',
      kinds: [KIND],
      errorContains: '503',
    });
    expect(carried(text).seen).toBe('2');
    // Back to the same filtered list.
    expect(text).toContain(
      `href="/admin/dashboard/messages?state=dead&amp;kind=${KIND}&amp;error=503"`,
    );
    expect(await statesOf(database, ids)).toEqual(['dead', 'dead', 'dead']);
    expect(await auditRows(database.pool, 'outbox')).toEqual([]);
  });

  it('counts by ordering key and time range exactly the rows the list shows for that filter', async () => {
    await insertDeadMessages(database.pool, 'outbox', 6, {
      kind: `'${KIND}'`,
      orderingKey: "'k-' || (g % 2)",
      deadAt: "now() - g * interval '1 hour'",
    });
    const hoursAgo = (hours: number) =>
      new Date(Date.now() - hours * 3_600_000).toISOString().slice(0, 16);
    const filter = {
      state: 'dead',
      orderingKey: 'k-0',
      from: hoursAgo(4.5),
      until: hoursAgo(1.5),
    };
    const { app, session } = await signedInApp();
    const list = await getPage(
      app,
      `/admin/dashboard/messages?${new URLSearchParams(filter)}`,
      session.cookie,
    );
    const listed = rowIds(list.text);
    expect(listed).toHaveLength(2);
    const { text } = await postForm(
      app,
      '/admin/dashboard/replays/dry-run',
      { csrf: session.csrf, scope: 'matching', ...filter },
      session.cookie,
    );
    expect(text).toContain('data-matched="2"');
    expect(rowIds(text)).toEqual([...listed].sort((a, b) => Number(a) - Number(b)));
    expect(JSON.parse(carried(text).selection)).toEqual({
      state: 'dead',
      orderingKeys: ['k-0'],
      since: `${filter.from}:00.000Z`,
      until: `${filter.until}:00.000Z`,
    });
  });

  it('replays what was counted on the second press, keeping ids and keys, and shows its audit row', async () => {
    const { ids, keys } = await deadMessages(database, [
      'HTTP 503 a',
      'HTTP 410 gone',
      'HTTP 503 b',
    ]);
    const { app, session } = await signedInApp();
    const confirm = await postForm(
      app,
      '/admin/dashboard/replays/dry-run',
      { csrf: session.csrf, state: 'dead', error: '503', scope: 'matching' },
      session.cookie,
    );
    const run = await postForm(
      app,
      '/admin/dashboard/replays',
      { csrf: session.csrf, ...carried(confirm.text) },
      session.cookie,
    );
    expect(run.response.status).toBe(303);
    const location = run.response.headers.get('location')!;
    expect(location).toMatch(/^\/admin\/dashboard\/replays\/\d+\?lastId=\d+$/);
    expect(await statesOf(database, ids)).toEqual(['pending', 'dead', 'pending']);
    expect(await keysOf(ids)).toEqual(keys);
    const [audit] = await auditRows(database.pool, 'outbox');
    expect(audit).toMatchObject({
      matched: '2',
      replayed: '2',
      outcome: 'finished',
      dry_run: false,
    });
    expect(String(audit!.requested_by)).toMatch(/^admin dashboard \(session [\w-]{8}\)$/);
    const result = await getPage(app, location, session.cookie);
    expect(result.status).toBe(200);
    expect(result.text).toContain('data-outcome="finished"');
    expect(result.text).toContain('2 of 2 messages are pending again.');
    expect(result.text).not.toContain('Continue');
  });

  it('replays the ticked dead rows and resends one delivered message from its page', async () => {
    const { ids } = await deadMessages(database, ['one', 'two', 'three']);
    const [deliveredKey] = await deliveredMessages(database, KIND, 1);
    const delivered = await outbox.store(pgExecutor(database.pool)).getByKey(deliveredKey!);
    const { app, session } = await signedInApp();
    const body = new URLSearchParams({ csrf: session.csrf, state: 'dead', scope: 'selected' });
    body.append('id', ids[0]!);
    body.append('id', ids[2]!);
    const ticked = await app.request('/admin/dashboard/replays/dry-run', {
      method: 'POST',
      headers: { cookie: session.cookie, 'content-type': 'application/x-www-form-urlencoded' },
      body: body.toString(),
    });
    const tickedPage = await ticked.text();
    expect(rowIds(tickedPage)).toEqual([ids[0], ids[2]]);
    expect(JSON.parse(carried(tickedPage).selection)).toEqual({
      state: 'dead',
      ids: [ids[0], ids[2]],
    });
    await postForm(
      app,
      '/admin/dashboard/replays',
      { csrf: session.csrf, ...carried(tickedPage) },
      session.cookie,
    );
    expect(await statesOf(database, ids)).toEqual(['pending', 'dead', 'pending']);

    // The message page's form posts the same fields for its one message.
    const resend = await postForm(
      app,
      '/admin/dashboard/replays/dry-run',
      { csrf: session.csrf, state: 'delivered', scope: 'selected', id: delivered!.id },
      session.cookie,
    );
    expect(resend.text).toContain('Resend 1 message</button>');
    const run = await postForm(
      app,
      '/admin/dashboard/replays',
      { csrf: session.csrf, ...carried(resend.text) },
      session.cookie,
    );
    expect(run.response.status).toBe(303);
    expect(await stateOf(database, delivered!.id)).toBe('pending');
    expect((await keysOf([delivered!.id]))[0]).toBe(deliveredKey);
  });

  it('stops a run when its time is up, says how far it got, and continues from there', async () => {
    // A clock that moves two seconds each time it is read: a run's budget of five seconds ends
    // after its first batch, whatever the machine's speed.
    let at = Date.parse('2026-12-02T01:00:00Z');
    const clock = {
      now: () => {
        at += 2000;
        return new Date(at);
      },
    };
    await insertDeadMessages(database.pool, 'outbox', 1200, { kind: `'${KIND}'` });
    const { app, session } = await signedInApp({ clock });
    const confirm = await postForm(
      app,
      '/admin/dashboard/replays/dry-run',
      { csrf: session.csrf, state: 'dead', kind: KIND, scope: 'matching' },
      session.cookie,
    );
    expect(confirm.text).toContain('<strong>1,200 messages</strong> match now.');
    let fields = carried(confirm.text);
    const outcomes: string[] = [];
    for (let press = 0; press < 5 && fields; press++) {
      const run = await postForm(
        app,
        '/admin/dashboard/replays',
        { csrf: session.csrf, ...fields },
        session.cookie,
      );
      expect(run.response.status).toBe(303);
      const result = await getPage(app, run.response.headers.get('location')!, session.cookie);
      const outcome = /data-outcome="(\w+)"/.exec(result.text)![1]!;
      outcomes.push(outcome);
      if (outcome === 'finished') break;
      expect(result.text).toMatch(
        /Stopped when its time ran out: 500 of [\d,]+ messages are pending again/,
      );
      expect(result.text).toContain('Continue: replay the other');
      fields = carried(result.text);
    }
    expect(outcomes).toEqual(['stopped', 'stopped', 'finished']);
    const rows = await auditRows(database.pool, 'outbox');
    expect(rows.map((row) => [row.matched, row.replayed, row.outcome])).toEqual([
      ['1200', '500', 'stopped'],
      ['700', '500', 'stopped'],
      ['200', '200', 'finished'],
    ]);
    // The continues went on after the last id each stopped at.
    expect(rows[1]!.selection).toMatchObject({ afterId: expect.any(String) });
    const { rows: left } = await database.pool.query(
      "SELECT count(*)::int AS n FROM outbox.messages WHERE state = 'dead'",
    );
    expect(left[0].n).toBe(0);
  });

  it('lists the audit newest first, a page at a time', async () => {
    const replays = outbox.store(pgExecutor(database.pool)).replays();
    const total = DASHBOARD_REPLAYS_PAGE_SIZE + 2;
    for (let index = 1; index <= total; index++) {
      await replays.startReplayAudit({
        requestedBy: `operator ${index}`,
        startedAt: new Date(Date.UTC(2026, 11, 1, 0, index)),
        finishedAt: new Date(Date.UTC(2026, 11, 1, 0, index, 5)),
        selection: { state: 'dead', kinds: [KIND] },
        dryRun: false,
        matched: index,
        outcome: 'finished',
      });
    }
    const { app, session } = await signedInApp();
    const first = await getPage(app, '/admin/dashboard/replays', session.cookie);
    const who = (page: string) => [...page.matchAll(/<td>(operator \d+)<\/td>/g)].map((m) => m[1]);
    expect(who(first.text)).toHaveLength(DASHBOARD_REPLAYS_PAGE_SIZE);
    expect(who(first.text)[0]).toBe(`operator ${total}`);
    expect(first.text).toContain(
      `<td class="selection"><code>state: dead</code> <code>kinds: ${KIND}</code> </td>`,
    );
    const older = /href="([^"]+)" rel="next">Older/.exec(first.text)![1]!.replaceAll('&amp;', '&');
    const second = await getPage(app, older, session.cookie);
    expect(who(second.text)).toEqual(['operator 2', 'operator 1']);
    expect(second.text).not.toContain('rel="next"');
    expect((await getPage(app, '/admin/dashboard/replays?before=x', session.cookie)).status).toBe(
      400,
    );
    expect((await getPage(app, '/admin/dashboard/replays/999999', session.cookie)).status).toBe(
      404,
    );
  });
});
