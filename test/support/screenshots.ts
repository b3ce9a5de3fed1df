/**
 * Screenshots the browser flow tests take and check: written to test-artifacts/ (not committed)
 * for a person to look at, and checked in the test to be a real picture of the page.
 */
import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import type { Locator, Page } from 'playwright-core';
import { expect } from 'vitest';
import { colourShare, decodePng } from './png.js';

export const SCREENSHOT_DIR = join(process.cwd(), 'test-artifacts');
/** The window the flows run in: a laptop's. */
export const SCREENSHOT_VIEWPORT = { width: 1280, height: 900 };
/** The dashboard's page background (styles.ts). */
const PAGE_GREY = '#f5f6f8';

export async function makeScreenshotDir(): Promise<void> {
  await mkdir(SCREENSHOT_DIR, { recursive: true });
}

/**
 * A full-page screenshot written to test-artifacts/, checked to be a real picture of the page:
 * as wide as the viewport, at least as tall, and not one flat colour.
 */
export async function checkedScreenshot(page: Page, name: string): Promise<void> {
  const pixels = decodePng(
    await page.screenshot({ path: join(SCREENSHOT_DIR, name), fullPage: true }),
  );
  expect(pixels.width, name).toBe(SCREENSHOT_VIEWPORT.width);
  expect(pixels.height, name).toBeGreaterThanOrEqual(SCREENSHOT_VIEWPORT.height);
  // The page's grey background covers much of it, but not all: there is something drawn.
  expect(colourShare(pixels, PAGE_GREY), name).toBeLessThan(0.95);
}

/** One element's screenshot, decoded; it must have a size. */
export async function shotOf(locator: Locator) {
  const pixels = decodePng(await locator.screenshot());
  expect(pixels.width * pixels.height).toBeGreaterThan(0);
  return pixels;
}
