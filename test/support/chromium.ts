/**
 * A real headless Chromium for the dashboard's browser tests: Debian's, installed on first run
 * when it can be (root), with a reason to skip when it cannot; and pages that record dialogs.
 */
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { type ServerType, serve } from '@hono/node-server';
import { type Browser, type BrowserContext, chromium, type Page } from 'playwright-core';

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
/** apt-get update plus a chromium install with its libraries: a minute or two, rarely more. */
export const CHROMIUM_INSTALL_TIMEOUT_MS = 10 * 60 * 1000;

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

/**
 * True when chromium is there or could be installed; otherwise why not. Installs with apt when
 * missing and we are root, printing progress: the first run on a fresh machine takes a while.
 */
export async function ensureChromium(): Promise<true | string> {
  if (existsSync(CHROMIUM_PATH)) return true;
  if (process.getuid?.() !== 0) {
    return `${CHROMIUM_PATH} is missing and only root can install it (apt-get install chromium)`;
  }
  const started = Date.now();
  console.log(`${CHROMIUM_PATH} is missing: installing Debian's chromium with apt-get`);
  for (const args of [['update'], ['install', '-y', '--no-install-recommends', 'chromium']]) {
    const result = await runApt(args, started);
    if (result !== true) return result;
  }
  if (!existsSync(CHROMIUM_PATH)) {
    return `apt-get installed chromium but ${CHROMIUM_PATH} is still missing`;
  }
  console.log(`chromium installed in ${Math.round((Date.now() - started) / 1000)} s`);
  return true;
}

/** Runs apt-get, echoing its milestones and a heartbeat; true, or the reason it failed. */
function runApt(args: string[], started: number): Promise<true | string> {
  const command = `apt-get ${args.join(' ')}`;
  console.log(`[chromium] ${command}`);
  return new Promise((resolve) => {
    const child = spawn('apt-get', ['-o', 'DPkg::Lock::Timeout=120', ...args], {
      env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const tail: string[] = [];
    let fetched = 0;
    let unpacked = 0;
    const onLine = (line: string) => {
      tail.push(line);
      if (tail.length > 20) tail.shift();
      if (line.startsWith('Get:')) fetched += 1;
      if (line.startsWith('Unpacking')) unpacked += 1;
      if (/^(Fetched|E:|Err:|W:)|^Setting up chromium/.test(line))
        console.log(`[chromium] ${line}`);
    };
    for (const stream of [child.stdout, child.stderr]) {
      let buffered = '';
      stream.setEncoding('utf8');
      stream.on('data', (chunk: string) => {
        buffered += chunk;
        const lines = buffered.split('\n');
        buffered = lines.pop() ?? '';
        for (const line of lines) onLine(line);
      });
    }
    const heartbeat = setInterval(() => {
      const seconds = Math.round((Date.now() - started) / 1000);
      console.log(`[chromium] ${command}: ${seconds} s, ${fetched} fetched, ${unpacked} unpacked`);
    }, 15_000);
    child.on('error', (error) => {
      clearInterval(heartbeat);
      resolve(`${command} could not start: ${error.message}`);
    });
    child.on('close', (code) => {
      clearInterval(heartbeat);
      if (code === 0) resolve(true);
      else resolve(`${command} exited with ${code}:\n${tail.join('\n')}`);
    });
  });
}

/** The message ids of the page's table rows, in order. */
export async function tableRowIds(page: Page): Promise<string[]> {
  return page
    .locator('tbody tr[data-message-id]')
    .evaluateAll((rows) => rows.map((row) => row.getAttribute('data-message-id') ?? ''));
}
