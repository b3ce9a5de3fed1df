/**
 * The dashboard's operator flows in a real headless Chromium, `outboxAdmin` mounted in a small
 * Hono app of the test's own (with the kinds it has senders for) on a real Node server over a
 * real database: open `/admin/`, find a message by key and see the head that holds it, filter
 * the dead list by kind and error, tick two and retry them, read a webhook's attempts (503,
 * 429, 200 from a real receiver on 127.0.0.1). Each step's screenshot is written
 * to test-artifacts/ and checked: its size, and the colour of what it shows (the held note's
 * red, the flash's green), beside DOM assertions made at the same moment.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { drainOnce } from '../../src/core/drain.js';
import { PermanentDeliveryError } from '../../src/core/errors.js';
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
import { fakeClock } from '../support/drain-fixtures.js';
import { startLoopbackServer } from '../support/loopback-http.js';
import { colourShare } from '../support/png.js';
import {
  checkedScreenshot,
  makeScreenshotDir,
  shotOf,
  SCREENSHOT_VIEWPORT as VIEWPORT,
} from '../support/screenshots.js';
import { loopbackWebhookSender } from '../support/webhook-receiver.js';
import { ADMIN_TOKEN, KIND, mountAdmin, OTHER_KIND, outbox, statesOf } from './admin-harness.js';

const ORDERING_KEY = 'customer-42';
/** The held note's background when a dead head blocks (styles.ts). */
const DEAD_HEAD_RED = '#fdecec';
/** The flash's background after an action that did what was asked (styles.ts). */
const FLASH_OK_GREEN = '#eaf7ef';

const database = useTestDatabase();

interface Seeded {
  /** Dead, kind KIND, error with 503: what the filter finds. */
  dead503: string[];
  /** Dead: the head of ORDERING_KEY, and the two pending messages it holds (id, key). */
  head: string;
  held: { id: string; key: string }[];
}

let harness: (BrowserHarness & { seeded: Seeded }) | undefined;
let unavailable: string | undefined;

describe('the dashboard flows in a browser', () => {
  beforeAll(async () => {
    const ready = await ensureChromium();
    if (ready !== true) {
      unavailable = ready;
      console.warn(`skipping the dashboard flow tests: ${unavailable}`);
      return;
    }
    const seeded = await seedMessages();
    const app = mountAdmin(database, { kinds: [KIND, OTHER_KIND], clientAddress: () => 'browser' });
    harness = { ...(await startBrowserHarness(app.fetch)), seeded };
    await makeScreenshotDir();
  }, CHROMIUM_INSTALL_TIMEOUT_MS);

  afterAll(async () => {
    await harness?.close();
  });

  it('opens /admin/, finds a held message by key, and it names the dead head that holds it', async (context) => {
    if (unavailable) context.skip(unavailable);
    const { browser, baseUrl, seeded } = harness!;
    const browserContext = await browser.newContext({ viewport: VIEWPORT });
    const { page, dialogs } = await newWatchedPage(browserContext);
    try {
      // The trailing-slash form redirects home, where the sign-in form is.
      const opened = await page.goto(`${baseUrl}/admin/`);
      expect(opened?.url()).toBe(`${baseUrl}/admin`);
      expect(opened?.request().redirectedFrom()?.url()).toBe(`${baseUrl}/admin/`);
      await signInThroughForm(page, baseUrl, ADMIN_TOKEN);

      // Each dead message shows once on the overview (in recent errors), with no buttons.
      expect(await page.locator('[data-state="dead"] .card-value').textContent()).toBe('6');
      expect(await page.locator(`[data-message-id="${seeded.head}"]`).count()).toBe(1);
      expect(await page.getByRole('button', { name: /^Retry/ }).count()).toBe(0);
      const link = page.getByRole('link', { name: 'Open the dead-letter list' });
      expect(await link.isVisible()).toBe(true);
      await checkedScreenshot(page, 'dashboard-flows-overview.png');

      const [held] = seeded.held;
      await page.getByLabel('Message key or id').fill(held!.key);
      await Promise.all([
        page.waitForURL(`${baseUrl}/admin/dashboard/messages/${held!.id}`),
        page.getByRole('button', { name: 'Find' }).click(),
      ]);
      await page.getByRole('heading', { name: `Message ${held!.id}` }).waitFor();
      const note = page.locator('.held');
      expect(await note.textContent()).toBe(
        `held by message ${seeded.head}: dead head blocking; retry or discard it to let this key move`,
      );
      expect(await note.getAttribute('data-head-state')).toBe('dead');
      expect(await page.locator('.fields').textContent()).toContain(ORDERING_KEY);
      await checkedScreenshot(page, 'dashboard-flows-held-message.png');
      // The note as the operator sees it: mostly the dead head's red.
      expect(colourShare(await shotOf(note), DEAD_HEAD_RED)).toBeGreaterThan(0.4);

      await Promise.all([
        page.waitForURL(`${baseUrl}/admin/dashboard/messages/${seeded.head}`),
        note.getByRole('link', { name: `message ${seeded.head}` }).click(),
      ]);
      expect(await page.locator('pre.last-error').textContent()).toContain('HTTP 500');
      expect(await page.locator('.held').count()).toBe(0);

      // The pending list filtered by the ordering key: both held rows name their head.
      await page.goto(
        `${baseUrl}/admin/dashboard/messages?state=pending&orderingKey=${ORDERING_KEY}`,
      );
      const heldRows = page.locator(`tr[data-held-by="${seeded.head}"]`);
      expect(await heldRows.count()).toBe(2);
      expect(await page.locator('td.ordering code').allTextContents()).toEqual([
        ORDERING_KEY,
        ORDERING_KEY,
      ]);
      await checkedScreenshot(page, 'dashboard-flows-pending-held.png');
      expect(dialogs).toEqual([]);
    } finally {
      await browserContext.close();
    }
  });

  it('filters the dead list by kind and error, ticks two and retries them', async (context) => {
    if (unavailable) context.skip(unavailable);
    const { browser, baseUrl, seeded } = harness!;
    const browserContext = await browser.newContext({ viewport: VIEWPORT });
    const { page, dialogs } = await newWatchedPage(browserContext);
    try {
      await signInThroughForm(page, baseUrl, ADMIN_TOKEN);
      await Promise.all([
        page.waitForURL(`${baseUrl}/admin/dashboard/messages?state=dead`),
        page.getByRole('link', { name: 'Open the dead-letter list' }).click(),
      ]);
      expect(await tableRowIds(page)).toHaveLength(6);

      // The kind filter offers exactly the configured kinds.
      const kindOptions = await page.getByLabel('Kind').locator('option').allTextContents();
      expect(kindOptions).toEqual(['any kind', KIND, OTHER_KIND]);
      await page.getByLabel('Kind').selectOption(KIND);
      await page.getByLabel('Error contains').fill('503');
      await Promise.all([
        page.waitForURL(/state=dead&kind=demo\.notify&error=503/),
        page.getByRole('button', { name: 'Show' }).click(),
      ]);
      expect((await tableRowIds(page)).sort()).toEqual([...seeded.dead503].sort());
      for (const cell of await page.locator('td.error').allTextContents()) {
        expect(cell).toContain('503');
      }
      expect(await page.getByLabel('Kind').inputValue()).toBe(KIND);
      expect(await page.getByLabel('Error contains').inputValue()).toBe('503');
      await checkedScreenshot(page, 'dashboard-flows-dead-filtered.png');

      const [first, second, third] = seeded.dead503;
      await page.getByLabel(`Select message ${first}`).check();
      await page.getByLabel(`Select message ${second}`).check();
      await Promise.all([
        page.waitForURL(/done=retried&count=2&of=2/),
        page.getByRole('button', { name: 'Retry selected' }).click(),
      ]);
      const flash = page.getByRole('status');
      expect(await flash.textContent()).toBe('2 messages of the 2 ticked are pending again.');
      expect(await tableRowIds(page)).toEqual([third]);
      expect(await page.getByLabel('Error contains').inputValue()).toBe('503');
      expect(await statesOf(database, [first!, second!, third!])).toEqual([
        'pending',
        'pending',
        'dead',
      ]);
      await checkedScreenshot(page, 'dashboard-flows-after-retry.png');
      expect(colourShare(await shotOf(flash), FLASH_OK_GREEN)).toBeGreaterThan(0.5);
      expect(await page.locator('script').count()).toBe(0);
      expect(dialogs).toEqual([]);
    } finally {
      await browserContext.close();
    }
  });

  it('finds a delivered webhook by key and reads its three attempts: 503, 429, then 200', async (context) => {
    if (unavailable) context.skip(unavailable);
    const { browser, baseUrl } = harness!;
    const { id, key, destination } = await deliverAfterTwoFailures();
    const browserContext = await browser.newContext({ viewport: VIEWPORT });
    const { page, dialogs } = await newWatchedPage(browserContext);
    try {
      await signInThroughForm(page, baseUrl, ADMIN_TOKEN);
      await page.getByLabel('Message key or id').fill(key);
      await Promise.all([
        page.waitForURL(`${baseUrl}/admin/dashboard/messages/${id}`),
        page.getByRole('button', { name: 'Find' }).click(),
      ]);
      const attempts = page.locator('section.attempts');
      await attempts.getByRole('heading', { name: 'Attempts' }).waitFor();
      const rows = attempts.locator('tbody tr');
      expect(await rows.count()).toBe(3);
      expect(await attempts.locator('td.status').allTextContents()).toEqual([
        'HTTP 503',
        'HTTP 429',
        'HTTP 200',
      ]);
      const outcomes = await rows.evaluateAll((each) =>
        each.map((row) => row.querySelectorAll('td')[3]?.textContent ?? ''),
      );
      expect(outcomes).toEqual(['failed, retried', 'failed, retried', 'delivered']);
      // The failures name the path they went to; the query string (a token) is never shown.
      expect(await rows.nth(0).textContent()).toContain(destination);
      expect(await attempts.textContent()).not.toContain('S3CR3T');
      await checkedScreenshot(page, 'dashboard-flows-attempts.png');
      expect(dialogs).toEqual([]);
    } finally {
      await browserContext.close();
    }
  });
});

/**
 * A webhook of KIND to a real receiver on 127.0.0.1 that answers 503, then 429, then 200, each
 * through a real drain on a clock moved to the retry's due time.
 */
async function deliverAfterTwoFailures(): Promise<{
  id: string;
  key: string;
  destination: string;
}> {
  const answers = [503, 429, 200];
  const receiver = await startLoopbackServer((_request, response) => {
    const status = answers.shift() ?? 200;
    response.writeHead(status).end(status < 300 ? 'ok' : 'busy');
  });
  try {
    const db = pgExecutor(database.pool);
    const destination = `${receiver.url}/hooks/orders`;
    const [key] = await outbox.enqueue(db, {
      kind: KIND,
      payload: { url: `${destination}?token=S3CR3T`, body: { order: 7 } },
    });
    const sender = loopbackWebhookSender(receiver.port);
    const store = outbox.store(db);
    const clock = fakeClock();
    for (let drain = 0; drain < 3; drain++) {
      await drainOnce({ store, clock, senders: { [KIND]: sender }, keys: [key!] });
      const message = await store.getByKey(key!);
      if (message?.state === 'delivered') return { id: message.id, key: key!, destination };
      clock.set(message!.dueAt);
    }
    throw new Error('the webhook was not delivered on its third attempt');
  } finally {
    await receiver.close();
  }
}

/**
 * Dead messages of two kinds with 503 and 410 errors, and an ordering key whose head died and
 * holds two pending messages back, all through the real drain.
 */
async function seedMessages(): Promise<Seeded> {
  const db = pgExecutor(database.pool);
  const plan = [
    { kind: KIND, error: 'HTTP 503 from https://hooks.example/a' },
    { kind: KIND, error: 'HTTP 503 from https://hooks.example/b' },
    { kind: KIND, error: 'HTTP 503 from https://hooks.example/c' },
    { kind: KIND, error: 'HTTP 410 Gone from https://hooks.example/d' },
    { kind: OTHER_KIND, error: 'HTTP 503 from https://other.example/' },
    { kind: KIND, error: 'HTTP 500 receiver crashed', orderingKey: ORDERING_KEY },
    { kind: KIND, error: null, orderingKey: ORDERING_KEY },
    { kind: KIND, error: null, orderingKey: ORDERING_KEY },
  ];
  const keys = await outbox.enqueue(
    db,
    plan.map(({ kind, error, orderingKey }) => ({ kind, payload: { error }, orderingKey })),
  );
  const fail = async (message: { payload: unknown }) => {
    const { error } = message.payload as { error: string | null };
    if (error) throw new PermanentDeliveryError(error);
  };
  const report = await drainOnce({
    store: outbox.store(db),
    senders: { [KIND]: fail, [OTHER_KIND]: fail },
  });
  expect(report).toMatchObject({ delivered: 0, dead: 6 });
  const { rows } = await database.pool.query<{ id: string; key: string; state: string }>(
    'SELECT id::text, key::text, state FROM outbox.messages WHERE key = ANY($1::uuid[]) ORDER BY id',
    [keys],
  );
  expect(rows.map((row) => row.state)).toEqual([...Array(6).fill('dead'), 'pending', 'pending']);
  return {
    dead503: rows.slice(0, 3).map((row) => row.id),
    head: rows[5]!.id,
    held: rows.slice(6).map(({ id, key }) => ({ id, key })),
  };
}
