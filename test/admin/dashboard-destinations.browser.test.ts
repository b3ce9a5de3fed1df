/**
 * Destination health on the dashboard in a real headless Chromium, end to end: webhooks to a
 * receiver on 127.0.0.1 fail (503) through the real drain, so their destination has a record;
 * the operator opens Destinations, pauses it until resumed, sees it open, a real drain then
 * sends it nothing though the receiver is back; Resume, and it is closed, and a real drain
 * delivers every message under its own key. Each step's screenshot goes to test-artifacts/
 * and is checked (size, and the colour of what it shows).
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
import { ADMIN_TOKEN, mountAdmin, outbox } from './admin-harness.js';

/** The done flash's green, an open destination's red badge, a closed one's green (styles.ts). */
const FLASH_OK_GREEN = '#eaf7ef';
const OPEN_BADGE_RED = '#fdecec';
const CLOSED_BADGE_GREEN = '#e7f6ed';

const database = useTestDatabase();

/** While true the receiver answers 503; after, 200. */
let broken = true;
/** The `webhook-id` of every request the receiver answered 200, in arrival order. */
const deliveredKeys: string[] = [];
/** Every request the receiver got while it was healthy and the destination paused. */
let requestsWhilePaused = 0;
let paused = false;

let receiver: LoopbackServer | undefined;
let harness: BrowserHarness | undefined;
let senders: Record<string, Sender> = {};
let unavailable: string | undefined;

describe('destination health on the dashboard in a browser', () => {
  beforeAll(async () => {
    const ready = await ensureChromium();
    if (ready !== true) {
      unavailable = ready;
      console.warn(`skipping the dashboard destinations flow: ${unavailable}`);
      return;
    }
    receiver = await startLoopbackServer((request, response) => {
      if (paused) requestsWhilePaused++;
      if (broken) {
        response.statusCode = 503;
        response.end('down for maintenance');
        return;
      }
      deliveredKeys.push(String(request.headers['webhook-id']));
      response.statusCode = 200;
      response.end('ok');
    });
    senders = {
      webhook: loopbackWebhookSender(receiver.port),
    };
    harness = await startBrowserHarness(
      mountAdmin(database, { clientAddress: () => 'browser' }).fetch,
    );
    await makeScreenshotDir();
  }, CHROMIUM_INSTALL_TIMEOUT_MS);

  afterAll(async () => {
    await harness?.close();
    await receiver?.close();
  });

  it('pauses a destination from its row, sees it open and sent nothing, resumes it, sees it closed and delivered', async (context) => {
    if (unavailable) context.skip(unavailable);
    const { browser, baseUrl } = harness!;
    const db = pgExecutor(database.pool);
    const keys = await outbox.enqueue(
      db,
      [1, 2, 3].map((n) => ({
        kind: 'webhook',
        payload: { url: `${receiver!.url}/orders/${n}`, body: { n } },
      })),
    );
    expect(await drainOnce({ store: outbox.store(db), senders })).toMatchObject({
      retried: 3,
      delivered: 0,
    });
    const { rows } = await database.pool.query<{ destination: string }>(
      'SELECT DISTINCT destination FROM outbox.messages',
    );
    expect(rows).toEqual([{ destination: `http://127.0.0.1:${receiver!.port}` }]);
    const destination = rows[0]!.destination;

    const browserContext = await browser.newContext({ viewport: SCREENSHOT_VIEWPORT });
    const { page, dialogs } = await newWatchedPage(browserContext);
    try {
      await signInThroughForm(page, baseUrl, ADMIN_TOKEN);
      await Promise.all([
        page.waitForURL(`${baseUrl}/admin/dashboard/destinations`),
        page.getByRole('link', { name: 'Destinations' }).click(),
      ]);
      const row = page.locator(`tbody tr[data-destination="${destination}"]`);
      expect(await row.getAttribute('data-state')).toBe('closed');
      const cells = await row.locator('td').allTextContents();
      expect(cells.slice(0, 4)).toEqual([destination, 'closed', '3', '–']);
      expect(cells[5]).toContain('answered HTTP 503');
      expect(cells[6]).toBe('3');
      await checkedScreenshot(page, 'dashboard-destinations-closed.png');
      expect(colourShare(await shotOf(row.locator('.badge')), CLOSED_BADGE_GREEN)).toBeGreaterThan(
        0.4,
      );

      // Pause it until resumed; the page after the redirect says so, and the row is open.
      await row.getByLabel('Pause for').selectOption('until-resumed');
      await Promise.all([
        page.waitForURL(/\/admin\/dashboard\/destinations\?done=paused&/),
        row.getByRole('button', { name: 'Pause', exact: true }).click(),
      ]);
      const flash = page.getByRole('status');
      expect(await flash.textContent()).toBe(
        `${destination} is paused until resumed: 3 pending messages held.`,
      );
      expect(await row.getAttribute('data-state')).toBe('open');
      expect((await row.locator('td').allTextContents()).slice(1, 5)).toEqual([
        'open',
        '3',
        'an operator',
        'until resumed',
      ]);
      await checkedScreenshot(page, 'dashboard-destinations-paused.png');
      expect(colourShare(await shotOf(flash), FLASH_OK_GREEN)).toBeGreaterThan(0.5);
      expect(colourShare(await shotOf(row.locator('.badge')), OPEN_BADGE_RED)).toBeGreaterThan(0.4);

      // The receiver is back, but the destination is paused: a real drain sends it nothing,
      // not even a message enqueued now and due at once (its first claim parks that one with
      // the others, at the pause's end).
      broken = false;
      keys.push(
        ...(await outbox.enqueue(db, {
          kind: 'webhook',
          payload: { url: `${receiver!.url}/orders/4`, body: { n: 4 } },
        })),
      );
      paused = true;
      expect(await drainOnce({ store: outbox.store(db), senders })).toMatchObject({
        delivered: 0,
        retried: 0,
      });
      paused = false;
      expect(requestsWhilePaused).toBe(0);

      await Promise.all([
        page.waitForURL(/\/admin\/dashboard\/destinations\?done=resumed&/),
        row.getByRole('button', { name: 'Resume' }).click(),
      ]);
      expect(await page.getByRole('status').textContent()).toBe(
        `${destination} is sent to again: 4 messages due now.`,
      );
      expect(await row.getAttribute('data-state')).toBe('closed');
      expect((await row.locator('td').allTextContents()).slice(1, 3)).toEqual(['closed', '0']);
      expect(await row.getByRole('button', { name: 'Resume' }).count()).toBe(0);
      await checkedScreenshot(page, 'dashboard-destinations-resumed.png');
      expect(colourShare(await shotOf(row.locator('.badge')), CLOSED_BADGE_GREEN)).toBeGreaterThan(
        0.4,
      );

      // Closed again: a real drain delivers every message, under the key it always had.
      expect(await drainOnce({ store: outbox.store(db), senders })).toMatchObject({ delivered: 4 });
      expect([...deliveredKeys].sort()).toEqual([...keys].sort());
      expect(await page.locator('script').count()).toBe(0);
      expect(dialogs).toEqual([]);
    } finally {
      await browserContext.close();
    }
  });
});
