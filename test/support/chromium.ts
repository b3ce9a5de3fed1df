/**
 * A real headless Chromium for the dashboard's browser tests: Debian's, installed on first run
 * when it can be (root), with a reason to skip when it cannot; and pages that record dialogs.
 */
import { type ServerType, serve } from '@hono/node-server';
import { type Browser, type BrowserContext, chromium, type Page } from 'playwright-core';
import { DEBIAN_INSTALL_TIMEOUT_MS, ensureDebianPackage } from './debian-package.js';

export const CHROMIUM_PATH = '/usr/bin/chromium';
/** Headless, and nothing that reaches the network on its own. */
export const CHROMIUM_ARGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];
/** How long the first run may take to install Chromium. */
export const CHROMIUM_INSTALL_TIMEOUT_MS = DEBIAN_INSTALL_TIMEOUT_MS;

/** An app served on 127.0.0.1 and a Chromium to drive it; `close` ends both. */
export interface BrowserHarness {
  browser: Browser;
  baseUrl: string;
  close(): Promise<void>;
}

/** Serves `fetch` on a free loopback port and launches Chromium. */
export async function startBrowserHarness(
  fetch: (request: Request) => Response | Promise<Response>,
): Promise<BrowserHarness> {
  const { server, port } = await new Promise<{ server: ServerType; port: number }>((resolve) => {
    const server = serve({ fetch, port: 0, hostname: '127.0.0.1' }, (info) =>
      resolve({ server, port: info.port }),
    );
  });
  const browser = await chromium.launch({ executablePath: CHROMIUM_PATH, args: CHROMIUM_ARGS });
  return {
    browser,
    baseUrl: `http://127.0.0.1:${port}`,
    async close() {
      await browser.close();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/** Signs in through the dashboard's token form at `${baseUrl}/admin`, ending on the overview. */
export async function signInThroughForm(page: Page, baseUrl: string, token: string): Promise<void> {
  if (!page.url().startsWith(`${baseUrl}/admin`)) await page.goto(`${baseUrl}/admin`);
  await page.getByLabel('Admin token').fill(token);
  await Promise.all([
    page.waitForURL(`${baseUrl}/admin`),
    page.getByRole('button', { name: 'Sign in' }).click(),
  ]);
  await page.getByRole('heading', { name: 'Dead letters' }).waitFor();
}

/** A page that records every dialog: an alert would mean injected markup ran. */
export async function newWatchedPage(
  browserContext: BrowserContext,
): Promise<{ page: Page; dialogs: string[] }> {
  const page = await browserContext.newPage();
  const dialogs: string[] = [];
  page.on('dialog', (dialog) => {
    dialogs.push(dialog.message());
    void dialog.dismiss();
  });
  return { page, dialogs };
}

/** Chromium there, or installed now (see ensureDebianPackage); otherwise why not. */
export function ensureChromium(): Promise<true | string> {
  return ensureDebianPackage({ path: CHROMIUM_PATH, packageName: 'chromium' });
}

/** The message ids of the page's table rows, in order. */
export async function tableRowIds(page: Page): Promise<string[]> {
  return page
    .locator('tbody tr[data-message-id]')
    .evaluateAll((rows) => rows.map((row) => row.getAttribute('data-message-id') ?? ''));
}
