/**
 * Replay on the dashboard in a real headless Chromium, end to end: webhooks to a receiver on
 * 127.0.0.1 die (503, and one 410) through the real drain; the operator filters the dead list by
 * kind and error text, presses "Replay all that match", checks the dry run's count and sample,
 * confirms, sees the messages pending again under their own keys, and a real drain delivers them
 * to the (now healthy) receiver under those keys; the Replays page lists the run. Each step's
 * screenshot goes to test-artifacts/ and is checked (size, and the colour of what it shows).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { drainOnce } from '../../src/core/drain.js';
import type { Sender } from '../../src/core/sender.js';
import { pgExecutor } from '../../src/drivers/node-pg.js';
import {
  type BrowserHarness,
  CHROMIUM_INSTALL_TIMEOUT_MS,
  ensureChromium,
  newWatchedPage,
  signInThroughForm,
  startBrowserHarness,
  tableRowIds,
} from '../support/chromium.js';
import { useTestDatabase } from '../support/database.js';
import { type LoopbackServer, startLoopbackServer } from '../support/loopback-http.js';
import { colourShare } from '../support/png.js';
import {
  checkedScreenshot,
  makeScreenshotDir,
  SCREENSHOT_VIEWPORT,
  shotOf,
} from '../support/screenshots.js';
import { loopbackWebhookSender } from '../support/webhook-receiver.js';
import { ADMIN_TOKEN, KIND, mountAdmin, OTHER_KIND, outbox, statesOf } from './admin-harness.js';

/** The primary button's blue and the done flash's green (styles.ts). */
const BUTTON_BLUE = '#2458d6';
const FLASH_OK_GREEN = '#eaf7ef';

const database = useTestDatabase();

/** While true the receiver answers each path as it is told; after the fix, 200 to all. */
let broken = true;
/** The `webhook-id` of every request the receiver answered 200, in arrival order. */
const deliveredKeys: string[] = [];

let receiver: LoopbackServer | undefined;
let harness: BrowserHarness | undefined;
/** One webhook sender, allowed to reach the receiver only, for both kinds. */
let senders: Record<string, Sender> = {};
let unavailable: string | undefined;

describe('replay on the dashboard in a browser', () => {
  beforeAll(async () => {
    const ready = await ensureChromium();
    if (ready !== true) {
      unavailable = ready;
      console.warn(`skipping the dashboard replay flow: ${unavailable}`);
      return;
    }
    receiver = await startLoopbackServer((request, response) => {
      if (broken) {
        response.statusCode = request.url?.endsWith('/gone') ? 410 : 503;
        response.end('not now');
        return;
      }
      deliveredKeys.push(String(request.headers['webhook-id']));
      response.statusCode = 200;
      response.end('ok');
    });
    const send = loopbackWebhookSender(receiver.port);
    senders = { [KIND]: send, [OTHER_KIND]: send };
    const app = mountAdmin(database, { kinds: [KIND, OTHER_KIND], clientAddress: () => 'browser' });
    harness = await startBrowserHarness(app.fetch);
    await makeScreenshotDir();
  }, CHROMIUM_INSTALL_TIMEOUT_MS);

  afterAll(async () => {
    await harness?.close();
    await receiver?.close();
  });

  it('filters the dead list, replays all that match through the dry run, and they are delivered under their own keys', async (context) => {
    if (unavailable) context.skip(unavailable);
    const { browser, baseUrl } = harness!;
    const seeded = await seedDeadWebhooks();
    const browserContext = await browser.newContext({ viewport: SCREENSHOT_VIEWPORT });
    const { page, dialogs } = await newWatchedPage(browserContext);
    try {
      await signInThroughForm(page, baseUrl, ADMIN_TOKEN);
      await Promise.all([
        page.waitForURL(`${baseUrl}/admin/dashboard/messages?state=dead`),
        page.getByRole('link', { name: 'Open the dead-letter list' }).click(),
      ]);
      expect(await tableRowIds(page)).toHaveLength(5);
      await page.getByLabel('Kind').selectOption(KIND);
      await page.getByLabel('Error contains').fill('HTTP 503');
      await Promise.all([
        page.waitForURL(/state=dead&kind=demo\.notify&error=HTTP\+503/),
        page.getByRole('button', { name: 'Show' }).click(),
      ]);
      expect((await tableRowIds(page)).sort()).toEqual([...seeded.ids].sort());
      await checkedScreenshot(page, 'dashboard-replay-dead-filtered.png');

      // The first press counts; nothing has changed yet.
      await Promise.all([
        page.waitForURL(`${baseUrl}/admin/dashboard/replays/dry-run`),
        page.getByRole('button', { name: 'Replay all that match…' }).click(),
      ]);
      await page.getByRole('heading', { name: 'Replay dead messages?' }).waitFor();
      expect(await page.locator('[data-matched]').getAttribute('data-matched')).toBe('3');
      expect(await tableRowIds(page)).toEqual(seeded.ids);
      expect(await page.locator('.selection').textContent()).toContain('HTTP 503');
      expect(await statesOf(database, seeded.ids)).toEqual(['dead', 'dead', 'dead']);
      const confirm = page.getByRole('button', { name: 'Replay 3 messages' });
      await checkedScreenshot(page, 'dashboard-replay-confirm.png');
      expect(colourShare(await shotOf(confirm), BUTTON_BLUE)).toBeGreaterThan(0.5);

      // The second press replays, then the page is the run's audit row (post/redirect/get).
      await Promise.all([
        page.waitForURL(/\/admin\/dashboard\/replays\/\d+\?lastId=\d+$/),
        confirm.click(),
      ]);
      const flash = page.getByRole('status');
      expect(await flash.textContent()).toBe('3 of 3 messages are pending again.');
      await checkedScreenshot(page, 'dashboard-replay-result.png');
      expect(colourShare(await shotOf(flash), FLASH_OK_GREEN)).toBeGreaterThan(0.5);

      // Pending again, each under its own key; the other dead ones untouched.
      await page.getByRole('link', { name: 'See the pending messages' }).click();
      await page.waitForURL(`${baseUrl}/admin/dashboard/messages?state=pending`);
      const shown = await page
        .locator('tbody tr[data-message-id]')
        .evaluateAll((rows) =>
          rows.map(
            (row) =>
              `${row.getAttribute('data-message-id')} ${row.querySelector('code.key')?.textContent}`,
          ),
        );
      expect(shown.sort()).toEqual(
        seeded.ids.map((id, index) => `${id} ${seeded.keys[index]}`).sort(),
      );
      expect(await statesOf(database, seeded.others)).toEqual(['dead', 'dead']);
      await checkedScreenshot(page, 'dashboard-replay-pending.png');

      // The receiver is fixed; a real drain sends them, under the keys they always had.
      broken = false;
      const report = await drainOnce({ store: outbox.store(pgExecutor(database.pool)), senders });
      expect(report).toMatchObject({ delivered: 3, dead: 0 });
      expect([...deliveredKeys].sort()).toEqual([...seeded.keys].sort());

      await page.getByRole('link', { name: 'Replays' }).click();
      await page.waitForURL(`${baseUrl}/admin/dashboard/replays`);
      const row = page.locator('tbody tr[data-replay-id]');
      expect(await row.count()).toBe(1);
      const cells = await row.locator('td').allTextContents();
      expect(cells[2]).toMatch(/^admin dashboard \(session [\w-]{8}\)$/);
      expect(cells[3]).toBe(`state: dead kinds: ${KIND} errorContains: HTTP 503 `);
      expect(cells.slice(4)).toEqual(['3', '3', 'finished']);
      await checkedScreenshot(page, 'dashboard-replay-audit.png');
      expect(await page.locator('script').count()).toBe(0);
      expect(dialogs).toEqual([]);
    } finally {
      await browserContext.close();
    }
  });
});

/**
 * Five webhooks that die on their one attempt through the real drain: three of KIND on a 503
 * (what the filter finds), one of KIND on a 410 and one of OTHER_KIND on a 503 (what it leaves).
 */
async function seedDeadWebhooks(): Promise<{ ids: string[]; keys: string[]; others: string[] }> {
  const db = pgExecutor(database.pool);
  const plan = [
    { kind: KIND, path: '/orders/1' },
    { kind: KIND, path: '/gone' },
    { kind: KIND, path: '/orders/2' },
    { kind: OTHER_KIND, path: '/orders/3' },
    { kind: KIND, path: '/orders/4' },
  ];
  const keys = await outbox.enqueue(
    db,
    plan.map(({ kind, path }) => ({
      kind,
      maxAttempts: 1,
      payload: { url: `${receiver!.url}${path}`, body: { path } },
    })),
  );
  const report = await drainOnce({ store: outbox.store(db), senders });
  expect(report).toMatchObject({ delivered: 0, dead: 5 });
  const { rows } = await database.pool.query<{ id: string; key: string; last_error: string }>(
    'SELECT id::text, key::text, last_error FROM outbox.messages WHERE key = ANY($1::uuid[]) ORDER BY id',
    [keys],
  );
  expect(rows[0]!.last_error).toContain('answered HTTP 503');
  const chosen = [0, 2, 4].map((index) => rows[index]!);
  return {
    ids: chosen.map((row) => row.id),
    keys: chosen.map((row) => row.key),
    others: [rows[1]!.id, rows[3]!.id],
  };
}
