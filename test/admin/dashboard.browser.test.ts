/**
 * The dashboard in a real headless Chromium: `outboxAdmin` as a user's own app mounts it
 * (examples/own-app), on a real Node server over a real database. Sign in through the form, read the counts, find a
 * message by key, press Retry on its page, sign out, and see a cross-site form refused. Installs Debian's chromium on first run when it can (root); skips, saying why,
 * only when it cannot.
 */
import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ownApp } from '../../examples/own-app/app.js';
import { ADMIN_CSP } from '../../src/admin/index.js';
import { drainOnce } from '../../src/core/drain.js';
import { PermanentDeliveryError, RetryableDeliveryError } from '../../src/core/errors.js';
import { pgExecutor } from '../../src/drivers/node-pg.js';
import { createOutbox } from '../../src/outbox.js';
import {
  type BrowserHarness,
  CHROMIUM_INSTALL_TIMEOUT_MS,
  ensureChromium,
  newWatchedPage,
  signInThroughForm,
  startBrowserHarness,
} from '../support/chromium.js';
import { useTestDatabase } from '../support/database.js';
import { startLoopbackServer } from '../support/loopback-http.js';

const ADMIN_TOKEN = 'test-admin-token';
const ARTIFACTS = join(process.cwd(), 'test-artifacts');
const KIND = 'demo.notify';
const HOUR = 60 * 60 * 1000;

/** An error message a hostile receiver could send back: it must show as text, never run. */
const HOSTILE_ERROR =
  '410 Gone: <script>document.title="pwned"</script><img src=x onerror=alert(1)>';

const database = useTestDatabase();

let harness: BrowserHarness | undefined;
let unavailable: string | undefined;

describe('the dashboard in a browser', () => {
  beforeAll(async () => {
    const chromiumReady = await ensureChromium();
    if (chromiumReady !== true) {
      unavailable = chromiumReady;
      console.warn(`skipping the dashboard browser tests: ${unavailable}`);
      return;
    }
    const outbox = createOutbox({ kinds: { [KIND]: true } });
    await seedMessages(outbox);
    // The own app of examples/own-app (a user's app, not the reference service), with
    // the admin mounted as any user mounts it.
    const app = ownApp(pgExecutor(database.pool), { adminToken: ADMIN_TOKEN });
    harness = await startBrowserHarness(app.fetch);
    await mkdir(ARTIFACTS, { recursive: true });
  }, CHROMIUM_INSTALL_TIMEOUT_MS);

  afterAll(async () => {
    await harness?.close();
  });

  it('asks for the token, signs in, shows the counts, finds a message by key, retries it and signs out', async (context) => {
    if (unavailable) context.skip(unavailable);
    const { browser, baseUrl } = harness!;
    const browserContext = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    const { page, dialogs } = await newWatchedPage(browserContext);
    try {
      const first = await page.goto(`${baseUrl}/admin`);
      expect(first?.status()).toBe(200);
      expect(first?.headers()['content-security-policy']).toBe(ADMIN_CSP);
      await expect.poll(() => page.getByLabel('Admin token').isVisible()).toBe(true);

      await page.getByLabel('Admin token').fill('not-the-token');
      const refused = await Promise.all([
        page.waitForResponse((response) => response.request().method() === 'POST'),
        page.getByRole('button', { name: 'Sign in' }).click(),
      ]);
      expect(refused[0].status()).toBe(401);
      await expect.poll(() => page.getByRole('alert').textContent()).toContain('not right');
      await page.screenshot({ path: join(ARTIFACTS, 'dashboard-login.png') });

      await page.getByLabel('Admin token').fill(ADMIN_TOKEN);
      await Promise.all([
        page.waitForURL(`${baseUrl}/admin`),
        page.getByRole('button', { name: 'Sign in' }).click(),
      ]);
      await page.getByRole('heading', { name: 'Dead letters' }).waitFor();
      const [cookie] = await browserContext.cookies();
      expect(cookie).toMatchObject({ name: 'outbox_admin', httpOnly: true, sameSite: 'Strict' });
      expect(cookie!.value).not.toContain(ADMIN_TOKEN);

      const before = await countsInDatabase();
      expect(before).toMatchObject({ pending: 3, delivered: 4, dead: 3 });
      expect(await countsOnPage(page)).toEqual(before);

      // The hostile error is shown as text, and nothing in it ran.
      await expect.poll(() => page.getByText('<script>').count()).toBeGreaterThan(0);
      expect(await page.title()).toBe('outbox-relay admin');
      expect(await page.locator('script, img').count()).toBe(0);

      // 60 one-minute buckets, with this run's outcomes in the last one.
      expect(await page.locator('figure.chart svg > g').count()).toBe(60);
      expect(await page.locator('figure.chart svg title').first().textContent()).toContain(
        'Deliveries and failures per minute',
      );
      await page.screenshot({ path: join(ARTIFACTS, 'dashboard.png'), fullPage: true });

      // An operator arrives with a key from a receiver's log: the search box finds it.
      const deadId = await oldestDeadId();
      const deadKey = await keyOf(deadId);
      await page.getByLabel('Message key or id').fill(deadKey);
      await Promise.all([
        page.waitForURL(`${baseUrl}/admin/dashboard/messages/${deadId}`),
        page.getByRole('button', { name: 'Find' }).click(),
      ]);
      await page.getByRole('heading', { name: `Message ${deadId}` }).waitFor();
      expect(await page.locator('pre.payload').textContent()).toContain('"fate": "die"');
      expect(await page.locator('pre.last-error').textContent()).toContain(HOSTILE_ERROR);
      expect(await page.locator('script, img').count()).toBe(0);
      await page.screenshot({ path: join(ARTIFACTS, 'dashboard-message.png'), fullPage: true });

      // The dead message's own page has its Retry button; the overview has none (the dead
      // list holds the actions).
      await Promise.all([
        page.waitForURL(/\/admin\?done=retried/),
        page.getByRole('button', { name: 'Retry', exact: true }).click(),
      ]);
      expect(await stateInDatabase(deadId)).toBe('pending');
      await expect
        .poll(() => page.getByRole('status').textContent())
        .toContain(`Message ${deadId} is pending again`);
      const after = await countsOnPage(page);
      expect(after.dead).toBe(before.dead - 1);
      expect(after.pending).toBe(before.pending + 1);
      expect(after).toEqual(await countsInDatabase());
      expect(await page.getByRole('button', { name: 'Retry', exact: true }).count()).toBe(0);
      expect(dialogs).toEqual([]);
      await page.screenshot({
        path: join(ARTIFACTS, 'dashboard-after-retry.png'),
        fullPage: true,
      });

      // Signing out ends the session: the cookie the browser held no longer opens anything.
      await Promise.all([
        page.waitForURL(/\/admin\?done=signed-out/),
        page.getByRole('button', { name: 'Sign out' }).click(),
      ]);
      await expect.poll(() => page.getByLabel('Admin token').isVisible()).toBe(true);
      expect(await browserContext.cookies()).toEqual([]);
      const replayed = await fetch(`${baseUrl}/admin/stats`, {
        headers: { cookie: `${cookie!.name}=${cookie!.value}` },
      });
      expect(replayed.status).toBe(401);
    } finally {
      await browserContext.close();
    }
  });

  it('refuses a cross-site form post without the CSRF token, though the browser sends the cookie', async (context) => {
    if (unavailable) context.skip(unavailable);
    const { browser, baseUrl } = harness!;
    const deadId = await oldestDeadId();
    const target = `${baseUrl}/admin/dashboard/messages/${deadId}/retry`;
    // Another port on the same host is another origin but the same site, so even a SameSite=Strict
    // cookie goes along: only the CSRF token stands between this page and the retry.
    const attacker = await startSubmittingPage(target, { unrelated: '1' });
    const browserContext = await browser.newContext();
    try {
      const { page } = await newWatchedPage(browserContext);
      await signInThroughForm(page, baseUrl, ADMIN_TOKEN);
      const [response] = await Promise.all([
        page.waitForResponse((response) => response.url() === target),
        page.goto(attacker.url),
      ]);
      expect((await response.request().allHeaders()).cookie).toContain('outbox_admin=');
      expect(response.status()).toBe(403);
      expect(await stateInDatabase(deadId)).toBe('dead');

      // The same from a script or a tool holding the cookie: refused too.
      const [cookie] = await browserContext.cookies();
      const forged = await fetch(target, {
        method: 'POST',
        headers: {
          cookie: `${cookie!.name}=${cookie!.value}`,
          origin: 'https://attacker.example',
          'content-type': 'application/x-www-form-urlencoded',
        },
        body: 'csrf=guess',
        redirect: 'manual',
      });
      expect(forged.status).toBe(403);
      expect(await stateInDatabase(deadId)).toBe('dead');
    } finally {
      await browserContext.close();
      await attacker.close();
    }
  });

  it("refuses a sign-in form another site's page posts, even with the right token", async (context) => {
    if (unavailable) context.skip(unavailable);
    const { browser, baseUrl } = harness!;
    const target = `${baseUrl}/admin/login`;
    // A page elsewhere that makes the operator's browser post tokens (here the right one, so
    // only the origin check can be what refuses it; a wrong one would also feed the throttle).
    const attacker = await startSubmittingPage(target, { token: ADMIN_TOKEN });
    const browserContext = await browser.newContext();
    try {
      const { page } = await newWatchedPage(browserContext);
      const [response] = await Promise.all([
        page.waitForResponse((response) => response.url() === target),
        page.goto(attacker.url),
      ]);
      expect((await response.request().allHeaders())['sec-fetch-site']).toBe('same-site');
      expect(response.status()).toBe(403);
      expect(await browserContext.cookies()).toEqual([]);
    } finally {
      await browserContext.close();
      await attacker.close();
    }
  });
});

/**
 * Puts messages in real states through the real drain: four delivered, three dead (one of them
 * with a hostile error text), one retrying after a failure, two waiting for later.
 */
async function seedMessages(outbox: ReturnType<typeof createOutbox>): Promise<void> {
  const db = pgExecutor(database.pool);
  const fates = [
    ...Array.from({ length: 4 }, () => 'deliver'),
    ...Array.from({ length: 3 }, () => 'die'),
    'retry',
  ];
  await outbox.enqueue(
    db,
    fates.map((fate, index) => ({ kind: KIND, payload: { fate, index, note: '<b>bold?</b>' } })),
  );
  await outbox.enqueue(db, [
    { kind: KIND, payload: { fate: 'later', index: 8 }, delayMs: HOUR },
    { kind: KIND, payload: { fate: 'later', index: 9 }, delayMs: HOUR },
  ]);
  const report = await drainOnce({
    store: outbox.store(db),
    senders: {
      [KIND]: async (message) => {
        const { fate, index } = message.payload as { fate: string; index: number };
        if (fate === 'die') {
          throw new PermanentDeliveryError(
            index === 4 ? HOSTILE_ERROR : `receiver refused message ${index} for good`,
          );
        }
        if (fate === 'retry') {
          throw new RetryableDeliveryError('503 Service Unavailable', { retryAfterMs: HOUR });
        }
      },
    },
  });
  expect(report).toMatchObject({ delivered: 4, dead: 3, retried: 1 });
}

type StateCounts = Record<'pending' | 'claimed' | 'delivered' | 'dead', number>;

async function countsInDatabase(): Promise<StateCounts> {
  const { rows } = await database.pool.query<{ state: keyof StateCounts; n: number }>(
    'SELECT state, count(*)::int AS n FROM outbox.all_messages GROUP BY state',
  );
  const counts: StateCounts = { pending: 0, claimed: 0, delivered: 0, dead: 0 };
  for (const row of rows) counts[row.state] = row.n;
  return counts;
}

async function countsOnPage(page: Page): Promise<StateCounts> {
  const read = async (state: keyof StateCounts) =>
    Number(
      ((await page.locator(`[data-state="${state}"] .card-value`).textContent()) ?? '').replace(
        /,/g,
        '',
      ),
    );
  return {
    pending: await read('pending'),
    claimed: await read('claimed'),
    delivered: await read('delivered'),
    dead: await read('dead'),
  };
}

async function oldestDeadId(): Promise<string> {
  const { rows } = await database.pool.query<{ id: string }>(
    "SELECT id::text FROM outbox.messages WHERE state = 'dead' ORDER BY id LIMIT 1",
  );
  return rows[0]!.id;
}

async function keyOf(id: string): Promise<string> {
  const { rows } = await database.pool.query<{ key: string }>(
    'SELECT key::text FROM outbox.messages WHERE id = $1',
    [id],
  );
  return rows[0]!.key;
}

async function stateInDatabase(id: string): Promise<string | undefined> {
  const { rows } = await database.pool.query<{ state: string }>(
    'SELECT state FROM outbox.messages WHERE id = $1',
    [id],
  );
  return rows[0]?.state;
}

/**
 * Another site's page (another port: another origin, the same site) that posts a form with
 * `fields` to `action` as soon as it loads.
 */
function startSubmittingPage(action: string, fields: Record<string, string>) {
  const inputs = Object.entries(fields)
    .map(([name, value]) => `<input type="hidden" name="${name}" value="${value}">`)
    .join('');
  return startLoopbackServer((_request, response) => {
    response.setHeader('content-type', 'text/html');
    response.end(`<!doctype html><form method="post" action="${action}">${inputs}</form>
      <script>document.forms[0].submit()</script>`);
  });
}
