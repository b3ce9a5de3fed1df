/**
 * Replay on the dashboard refusing: a second press when more match than were shown, a selection
 * that matches nothing, bad input by field, and requests without a session or CSRF token. Each
 * writes nothing: no message changes, no audit row.
 */
import { beforeEach, describe, expect, it } from 'vitest';
import { useTestDatabase } from '../support/database.js';
import { auditRows } from '../support/replay-fixtures.js';
import {
  ADMIN_TOKEN,
  deadMessages,
  form,
  KIND,
  mountAdmin,
  OTHER_KIND,
  signIn,
  stateOf,
  statesOf,
} from './admin-harness.js';
import { carried, getPage, postForm } from './replay-page-harness.js';

const database = useTestDatabase();
beforeEach(async () => {
  await database.pool.query('TRUNCATE outbox.messages, outbox.replays');
});

async function signedInApp() {
  const app = mountAdmin(database, { kinds: [OTHER_KIND, KIND] });
  return { app, session: await signIn(app) };
}

describe('replay on the dashboard refuses', () => {
  it('refuses the second press when more match than the operator saw, and replays nothing', async () => {
    const { ids } = await deadMessages(database, ['HTTP 503 a', 'HTTP 503 b']);
    const { app, session } = await signedInApp();
    const run = await postForm(
      app,
      '/admin/dashboard/replays',
      { csrf: session.csrf, selection: '{"state":"dead"}', seen: '1' },
      session.cookie,
    );
    expect(run.response.status).toBe(409);
    expect(run.text).toContain(
      'Nothing was replayed: 2 messages match now, more than the 1 you confirmed.',
    );
    // The page shows the new count, ready to confirm again.
    expect(carried(run.text).seen).toBe('2');
    expect(await statesOf(database, ids)).toEqual(['dead', 'dead']);
    expect(await auditRows(database.pool, 'outbox')).toEqual([]);
  });

  it('says when nothing matches, at either press, and writes nothing', async () => {
    const { ids } = await deadMessages(database, ['HTTP 503']);
    const { app, session } = await signedInApp();
    const confirm = await postForm(
      app,
      '/admin/dashboard/replays/dry-run',
      { csrf: session.csrf, state: 'dead', error: 'no such error', scope: 'matching' },
      session.cookie,
    );
    expect(confirm.response.status).toBe(200);
    expect(confirm.text).toContain(
      'No dead messages match this selection. Nothing would be replayed',
    );
    expect(confirm.text).not.toContain('name="selection"');
    const run = await postForm(
      app,
      '/admin/dashboard/replays',
      {
        csrf: session.csrf,
        selection: '{"state":"dead","errorContains":"no such error"}',
        seen: '1',
      },
      session.cookie,
    );
    expect(run.response.status).toBe(303);
    expect(run.response.headers.get('location')).toBe('/admin/dashboard/replays?done=empty');
    const page = await getPage(app, run.response.headers.get('location')!, session.cookie);
    expect(page.text).toContain('Nothing matched that selection any more: nothing was replayed');
    expect(await statesOf(database, ids)).toEqual(['dead']);
    expect(await auditRows(database.pool, 'outbox')).toEqual([]);
  });

  it('refuses bad input by field and writes nothing', async () => {
    const { ids } = await deadMessages(database, ['gone']);
    const [id] = ids as [string];
    const { app, session } = await signedInApp();
    const { csrf, cookie } = session;
    const refusals: [string, Record<string, string>, string][] = [
      ['dry-run', { csrf, scope: 'matching' }, 'Field state: is missing.'],
      [
        'dry-run',
        { csrf, state: 'pending', scope: 'matching' },
        'Field state: must be dead or delivered',
      ],
      ['dry-run', { csrf, state: 'dead' }, 'Field scope: must be matching or selected.'],
      [
        'dry-run',
        { csrf, state: 'dead', scope: 'selected' },
        'Field id: tick at least one message.',
      ],
      [
        'dry-run',
        { csrf, state: 'dead', scope: 'selected', id: '1e3' },
        'Field id: each must be a message id.',
      ],
      [
        'dry-run',
        { csrf, state: 'dead', scope: 'matching', kind: 'demo.nope' },
        'Field kind: must be one of the configured kinds',
      ],
      [
        'dry-run',
        { csrf, state: 'dead', scope: 'matching', from: 'soon' },
        'Field from: must be a UTC time',
      ],
      ['', { csrf, seen: '1' }, 'Field selection: is missing.'],
      ['', { csrf, selection: '{', seen: '1' }, 'Field selection: is not JSON.'],
      [
        '',
        { csrf, selection: '{"state":"pending"}', seen: '1' },
        'Field selection.state: expected one of dead, delivered',
      ],
      [
        '',
        { csrf, selection: '{"state":"dead","kinds":["Bad"]}', seen: '1' },
        'Field selection.kinds[0]: is not a valid value',
      ],
      [
        '',
        { csrf, selection: '{"state":"dead","everything":true}', seen: '1' },
        'Field selection.everything: unknown field',
      ],
      [
        '',
        { csrf, selection: '{"state":"dead"}' },
        'Field seen: must be the count the confirmation showed.',
      ],
      [
        '',
        { csrf, selection: '{"state":"dead"}', seen: '0' },
        'Field seen: must be the count the confirmation showed.',
      ],
    ];
    for (const [path, fields, problem] of refusals) {
      const url = path ? `/admin/dashboard/replays/${path}` : '/admin/dashboard/replays';
      const { response, text } = await postForm(app, url, fields, cookie);
      expect(response.status, problem).toBe(400);
      expect(text, problem).toContain(problem);
      expect(await stateOf(database, id), problem).toBe('dead');
    }
    expect(await auditRows(database.pool, 'outbox')).toEqual([]);
  });

  it('answers an anonymous or forged replay with 401 or 403 and changes nothing', async () => {
    const { ids } = await deadMessages(database, ['gone']);
    const { app, session } = await signedInApp();
    const presses: [string, Record<string, string>][] = [
      ['/admin/dashboard/replays/dry-run', { state: 'dead', scope: 'matching' }],
      ['/admin/dashboard/replays', { selection: '{"state":"dead"}', seen: '1' }],
    ];
    for (const [path, fields] of presses) {
      expect((await app.request(path, form(fields))).status, path).toBe(401);
      const wrongToken = await app.request(
        path,
        form(fields, { authorization: `Bearer not-${ADMIN_TOKEN}`, 'x-test-client': path }),
      );
      expect(wrongToken.status, path).toBe(401);
      const noCsrf = await app.request(path, form(fields, { cookie: session.cookie }));
      expect(noCsrf.status, path).toBe(403);
    }
    expect(await stateOf(database, ids[0]!)).toBe('dead');
    expect(await auditRows(database.pool, 'outbox')).toEqual([]);
    for (const path of ['/admin/dashboard/replays', '/admin/dashboard/replays/1']) {
      const page = await app.request(path);
      expect(page.status, path).toBe(401);
      expect(await page.text()).toContain('Sign in first.');
    }
  });
});
