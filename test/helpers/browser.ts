// A real headless Chromium for the console's end-to-end tests, driven by playwright-core. The
// browser is Debian's package at /usr/bin/chromium (.ci/run installs it where it is missing);
// no browser is ever downloaded. Screenshots go to test-output/console/ (git-ignored).
import fs from 'node:fs';
import path from 'node:path';
import { chromium, type Browser, type Page } from 'playwright-core';
import { ROOT } from './paths.js';

// The callbacks given to page.evaluate run in the page. The test project compiles without the DOM
// library, so the few page globals they use are declared here, for this module only.
interface PageElement {
  tagName: string;
  id: string;
  textContent: string | null;
  offsetParent: unknown;
  labels?: ArrayLike<unknown> | null;
  getAttribute(name: string): string | null;
  getClientRects(): ArrayLike<unknown>;
  matches(selector: string): boolean;
  blur(): void;
}
declare const document: {
  activeElement: PageElement | null;
  body: PageElement;
  querySelectorAll(selector: string): ArrayLike<PageElement>;
  getElementById(id: string): PageElement | null;
};
declare const window: { scrollTo(x: number, y: number): void };
declare const sessionStorage: { length: number; key(index: number): string | null };
declare function getComputedStyle(element: PageElement): { backgroundColor: string };

export const CHROMIUM = '/usr/bin/chromium';
export const SCREENSHOT_DIR = path.join(ROOT, 'test-output', 'console');

/** The two widths every page is looked at: a laptop and a phone. */
export const WIDE = { width: 1280, height: 800 } as const;
export const NARROW = { width: 390, height: 844 } as const;

export async function launchChromium(): Promise<Browser> {
  if (!fs.existsSync(CHROMIUM)) {
    throw new Error(`${CHROMIUM} is missing: install Debian's chromium (apt-get install chromium), as .ci/run does`);
  }
  return chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking'],
    timeout: 30_000,
  });
}

/**
 * Writes `<name>-1280.png` and `<name>-390.png` and leaves the page at the wide size: the whole
 * page, or (fullPage false: a modal dialog over the page) what the window shows.
 */
export async function screenshotBothWidths(page: Page, name: string, fullPage = true): Promise<string[]> {
  fs.mkdirSync(SCREENSHOT_DIR, { recursive: true });
  const files: string[] = [];
  for (const size of [WIDE, NARROW]) {
    await page.setViewportSize(size);
    // From the top, so that the sticky bar is where a visitor sees it.
    if (fullPage) await page.evaluate(() => window.scrollTo(0, 0));
    const file = path.join(SCREENSHOT_DIR, `${name}-${size.width}.png`);
    await page.screenshot({ path: file, fullPage });
    files.push(file);
  }
  await page.setViewportSize(WIDE);
  return files;
}

/**
 * The form controls and buttons of the page that have no accessible name (no label, aria-label,
 * aria-labelledby, or text): each as a short description, for a test to expect none.
 */
export async function unlabelledControls(page: Page): Promise<string[]> {
  return page.evaluate(() => {
    const out: string[] = [];
    const visible = (el: PageElement) => el.offsetParent !== null || el.getClientRects().length > 0;
    for (const el of Array.from(document.querySelectorAll('input, select, textarea, button, a[href], summary'))) {
      if (!visible(el)) continue;
      const labelled =
        (el.labels?.length ?? 0) > 0 ||
        (el.getAttribute('aria-label') ?? '').trim() !== '' ||
        (el.getAttribute('aria-labelledby') ?? '')
          .split(/\s+/)
          .filter(Boolean)
          .some((id) => (document.getElementById(id)?.textContent ?? '').trim() !== '') ||
        (['BUTTON', 'A', 'SUMMARY'].includes(el.tagName) && (el.textContent ?? '').trim() !== '');
      if (!labelled) out.push(`${el.tagName.toLowerCase()}${el.id ? `#${el.id}` : ''}${el.getAttribute('name') ? `[name=${el.getAttribute('name')}]` : ''}`);
    }
    return out;
  });
}

/**
 * Presses Tab until the focused element matches `selector` (at most `limit` presses) and answers
 * whether it got there: the keyboard reaches it.
 */
export async function tabTo(page: Page, selector: string, limit = 60): Promise<boolean> {
  for (let i = 0; i < limit; i++) {
    await page.keyboard.press('Tab');
    if (await page.evaluate((s) => document.activeElement?.matches(s) ?? false, selector)) return true;
  }
  return false;
}

/** Waits until the focused element matches `selector` and its text contains `text`. */
export async function waitForFocus(page: Page, selector: string, text = ''): Promise<void> {
  await page.waitForFunction(
    ([s, t]) => document.activeElement !== null && document.activeElement.matches(s) && (document.activeElement.textContent ?? '').includes(t),
    [selector, text] as const,
  );
}

/** The text of the element that has the keyboard focus. */
export const focusedText = (page: Page) => page.evaluate(() => document.activeElement?.textContent ?? null);

/** Takes the focus off whatever has it (for a screenshot without a focus ring). */
export const blurFocus = (page: Page) => page.evaluate(() => document.activeElement?.blur());

/** The keys the page holds in sessionStorage. */
export const sessionKeys = (page: Page) =>
  page.evaluate(() => Array.from({ length: sessionStorage.length }, (_, i) => sessionStorage.key(i) ?? ''));

/** The page's background colour, as computed (it follows the colour scheme). */
export const bodyBackground = (page: Page) => page.evaluate(() => getComputedStyle(document.body).backgroundColor);
