// The web console's LLM pages end to end: the real host with a real tiny GGUF file in MODELS_DIR
// (and a realtime model with predicts), the built console in Debian's headless Chromium through
// playwright-core. In the browser: sign in; the Library lists the file with size, quantization and
// licence, deploys it with a progress bar to LIVE, and shows the host's refusal of cuda beside the
// instance-type field; the Playground streams an answer token by token with TTFT and tokens/s, and
// stops one; the Metrics page draws uPlot charts that move after the chats, and a realtime model's
// per-variation charts; both themes; labels and keyboard; empty states on an empty host; uPlot is
// not part of the first visit. Screenshots at 1280 and 390 px go to test-output/console/30-*.
import fs from 'node:fs';
import path from 'node:path';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Api, apiClient, expectStatus, waitForDeployment } from './helpers/api.js';
import { launchChromium, screenshotBothWidths, SCREENSHOT_DIR, tabTo, unlabelledControls, WIDE, blurFocus } from './helpers/browser.js';
import { listen, startInProcessHost, tokenFor, type TestHost } from './helpers/in-process-host.js';
import { spmVocab, writeTinyChatModel } from './helpers/llm-models.js';
import { tinyModel, writeGguf } from './helpers/gguf-writer.js';
import { linearModel } from './helpers/models.js';
import { tempDir } from './helpers/paths.js';

// The page globals the callbacks given to page.evaluate use (the test project has no DOM library).
interface Observed {
  textContent: string | null;
  getAttribute(name: string): string | null;
}
declare const document: { querySelector(selector: string): Observed | null; querySelectorAll(selector: string): ArrayLike<Observed> };
declare const window: { __answerLengths?: number[] } & Record<string, unknown>;
declare class MutationObserver {
  constructor(callback: () => void);
  observe(target: Observed, options: { subtree: boolean; childList: boolean; characterData: boolean }): void;
}

const FEATURES = ['amount', 'age', 'country'];

let host: TestHost;
let api: Api;
let key: string;
let browser: Browser;
let context: BrowserContext;
let page: Page;
const requested: string[] = [];
const pageErrors: string[] = [];

const ok = <T = any>(method: string, url: string, body?: unknown, status = 200) => expectStatus<T>(api, method, url, body, status);

/** One chat through the API, as any client sends it (not through the page). */
async function chatViaApi(content: string): Promise<void> {
  await ok('POST', '/v1/chat/completions', { model: 'tiny', messages: [{ role: 'user', content }], max_tokens: 8 });
}

beforeAll(async () => {
  // This file's screenshots (30-* to 42-*) from an earlier run go; the other files' stay.
  fs.mkdirSync(SCREENSHOT_DIR, { recursive: true });
  for (const f of fs.readdirSync(SCREENSHOT_DIR)) if (/^(3\d|4[0-2])-.*\.png$/.test(f)) fs.rmSync(path.join(SCREENSHOT_DIR, f));
  const modelsDir = tempDir();
  writeTinyChatModel(modelsDir, 'tiny-chat', { license: 'apache-2.0' });
  // A larger (still random) model, slow enough to stop mid-answer; deployed through the API.
  writeTinyChatModel(modelsDir, 'story-chat', { nEmbd: 384, nLayer: 6, nCtx: 2048, seed: 5 });
  // A file the engine cannot load (its header says mamba): listed with why, and no Deploy button.
  const mamba = tinyModel({ arch: 'llama', vocab: spmVocab(), nEmbd: 64, nLayer: 1, nHead: 4, nHeadKv: 2, nFf: 128, nCtx: 256, seed: 6, name: 'mamba-chat' }).spec;
  writeGguf(path.join(modelsDir, 'mamba-chat.gguf'), { ...mamba, metadata: { ...mamba.metadata, 'general.architecture': 'mamba' } });
  host = await listen(await startInProcessHost({ MODELS_DIR: modelsDir }));
  const auth = await tokenFor(host, 'console-llm');
  key = auth.key;
  api = apiClient(host.url, auth.token);

  // A realtime model with some predicts, for its per-variation charts.
  await ok('POST', '/api/v1/models', { model_id: 'fraud', description: 'fraud scores' }, 201);
  const build = await ok<{ build_id: string }>('POST', `/api/v1/models/fraud/builds?feature_names=${FEATURES.join(',')}`, linearModel(FEATURES, 0), 201);
  const dep = await ok<{ deployment_id: string }>('POST', '/api/v1/models/fraud/deployments', { build_id: build.build_id }, 202);
  expect((await waitForDeployment(api, dep.deployment_id)).status).toBe('LIVE');
  for (let i = 0; i < 5; i++) {
    await ok('POST', '/v1/fraud/predict', { columns: FEATURES, index: [0], data: [[100 + i, 30, 2]] });
  }

  await ok('POST', '/api/v1/library/deployments', { name: 'story-chat', model_id: 'story' }, 202);
  for (let i = 0; ; i++) {
    const dep = await ok<{ status: string; reason: string | null }>('GET', '/api/v1/library/deployments/story');
    if (dep.status === 'LIVE') break;
    expect(dep.status, dep.reason ?? '').not.toBe('FAILED');
    expect(i).toBeLessThan(1500);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }

  browser = await launchChromium();
  context = await browser.newContext({ viewport: WIDE, colorScheme: 'light' });
  page = await context.newPage();
  page.on('request', (r) => requested.push(r.url()));
  page.on('pageerror', (e) => pageErrors.push(`pageerror: ${e.message}`));
  page.on('console', (m) => {
    // The refusals the tests provoke on purpose are logged by Chromium as failed loads.
    if (m.type() === 'error' && !/status of (400|401|404|409)\b/.test(m.text())) pageErrors.push(`console: ${m.text()}`);
  });
}, 120_000);

afterAll(async () => {
  await browser?.close();
  await host?.close();
});

/** A page's link in the navigation bar. */
const navLink = (p: Page, name: string) => p.getByRole('navigation', { name: 'Pages' }).getByRole('link', { name, exact: true });
/** The figure in the Metrics page's latest-figures table. */
const requestsCell = () => page.locator('table.latest tr[data-figure="requests"] td').first();
const chartPoints = async (id: string) => Number(await page.locator(`figure[data-chart="${id}"]`).getAttribute('data-points'));

describe('the LLM pages in the browser', () => {
  it('signs in', async () => {
    await page.goto(`${host.url}/console/`);
    await page.getByLabel('API key').fill(key);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('heading', { name: 'Models', level: 1 }).waitFor();
  });

  it('lists the GGUF file in the Library with size, quantization and licence', async () => {
    await navLink(page, 'Library').click();
    await page.getByRole('heading', { name: 'Library', level: 1 }).waitFor();
    const table = page.getByRole('table', { name: /GGUF catalogue/ });
    await table.waitFor();
    const catalog = await ok<{ models: Array<{ name: string; file: string; size_bytes: number; quantization: string; license: string }> }>('GET', '/api/v1/library');
    expect(catalog.models.map((m) => m.name).sort()).toEqual(['mamba-chat', 'story-chat', 'tiny-chat']);
    const entry = catalog.models.find((m) => m.name === 'tiny-chat')!;
    const tinyRow = table.locator('tbody tr').filter({ has: page.getByRole('rowheader', { name: /^tiny-chat/ }) });
    const row = (await tinyRow.textContent())!;
    expect(row).toContain('tiny-chat');
    expect(row).toContain('tiny-chat.gguf');
    expect(row).toContain(entry.quantization);
    expect(row).toContain('apache-2.0');
    expect(row).toMatch(/\d+(\.\d)? (KiB|MiB)/);
    expect(row).toContain('not deployed');
    expect(await table.locator('tbody tr').filter({ has: page.getByRole('rowheader', { name: /^story-chat/ }) }).textContent()).toContain('story');
    const mambaRow = table.locator('tbody tr').filter({ has: page.getByRole('rowheader', { name: /^mamba-chat/ }) });
    expect(await mambaRow.textContent()).toContain('cannot load (below)');
    expect(await mambaRow.getByRole('button').count()).toBe(0);
    const cannot = page.locator('.problems').filter({ has: page.getByRole('heading', { name: 'Files the engine cannot load' }) });
    expect(await cannot.textContent()).toContain("mamba-chat.gguf: architecture 'mamba' is not supported (supported: llama, qwen2, qwen3, qwen3moe, gemma2, gemma3, phi3, bert, nomic-bert)");
    await screenshotBothWidths(page, '30-library');
  });

  it('deploys the file from the Library, with a progress bar that reaches LIVE', async () => {
    await page.getByRole('button', { name: 'Deploy tiny-chat' }).click();
    const form = page.getByRole('form', { name: 'Deploy tiny-chat' });
    await form.waitFor();
    // The model id field has the focus, with an id suggested from the name.
    expect(await page.evaluate(() => (document as unknown as { activeElement: { id: string } }).activeElement.id)).toBe('deploy-model-id');
    expect(await form.getByLabel('Model id').inputValue()).toBe('tiny-chat');
    await form.getByLabel('Model id').fill('tiny');
    await screenshotBothWidths(page, '30-library-deploy-form');
    await form.getByRole('button', { name: 'Deploy', exact: true }).click();

    const card = page.getByRole('listitem').filter({ has: page.getByRole('heading', { name: 'tiny', exact: true }) });
    await card.waitFor();
    const bar = card.getByRole('progressbar', { name: 'Deploy of tiny' });
    await bar.waitFor();
    await expect.poll(() => bar.getAttribute('aria-valuetext'), { timeout: 30_000 }).toBe('LIVE (step 3 of 3)');
    expect(await bar.getAttribute('value')).toBe('3');
    expect(await card.getByRole('status').first().textContent()).toContain('LIVE: ready.');
    expect((await card.textContent())!).toContain('applied on 1/1 replica');
    expect((await ok<{ status: string }>('GET', '/api/v1/library/deployments/tiny')).status).toBe('LIVE');
    // The catalogue says where the file is deployed.
    const tinyRow = page.getByRole('table', { name: /GGUF catalogue/ }).locator('tbody tr').filter({ has: page.getByRole('rowheader', { name: /^tiny-chat/ }) });
    await expect.poll(async () => tinyRow.textContent()).not.toContain('not deployed');
    await blurFocus(page);
    await screenshotBothWidths(page, '31-library-deployed');
  });

  it('shows the host\'s refusal of cuda beside the instance-type field', async () => {
    const select = page.locator('#instance-type-tiny');
    await select.selectOption('cuda');
    await page.getByRole('button', { name: 'Change instance type of tiny' }).click();
    const error = page.locator('#instance-type-tiny-error');
    await error.waitFor();
    // The host's own words, as the API answers them.
    const refusal = await api<{ error: { message: string; param: string } }>('PUT', '/api/v1/library/deployments/tiny/instance-type', { instance_type: 'cuda' });
    expect(refusal.status).toBe(400);
    expect(refusal.body.error.param).toBe('instance_type');
    expect(await error.textContent()).toBe(refusal.body.error.message);
    expect(refusal.body.error.message).toMatch(/instance type cuda is not available on this host/);
    expect(await select.getAttribute('aria-invalid')).toBe('true');
    expect(await select.getAttribute('aria-describedby')).toBe('instance-type-tiny-error');
    // Nothing changed.
    expect((await ok<{ instance_type: string }>('GET', '/api/v1/library/deployments/tiny')).instance_type).toBe('cpu');
    await blurFocus(page);
    await screenshotBothWidths(page, '32-library-cuda-refused');
    await select.selectOption('cpu');
  });

  let pointsBeforeChat = 0;

  it('opens the metrics of the new model with live charts before any chat', async () => {
    await navLink(page, 'Metrics').click();
    await page.getByRole('heading', { name: 'Metrics', level: 1 }).waitFor();
    await page.getByLabel('Model').selectOption('tiny');
    await page.waitForURL(/#\/metrics\/tiny$/);
    await page.locator('figure[data-chart="rpm"] canvas').first().waitFor();
    expect(await requestsCell().textContent()).toBe('0');
    // A second point arrives by itself.
    await expect.poll(() => chartPoints('rpm'), { timeout: 10_000 }).toBeGreaterThanOrEqual(2);
    pointsBeforeChat = await chartPoints('rpm');
  });

  it('streams a chat answer token by token in the Playground, with TTFT and tokens/s', async () => {
    await navLink(page, 'Playground').click();
    await page.getByRole('heading', { name: 'Playground', level: 1 }).waitFor();
    await page.getByLabel('Model').selectOption('tiny');
    await page.waitForURL(/#\/playground\/tiny$/);
    await page.getByLabel('Temperature').fill('0.5');
    expect(await page.locator('label[for="pg-temperature"] output').textContent()).toBe('0.50');
    await page.getByLabel('Max tokens').fill('48');
    // Every change of the answer's text, as the page shows it.
    await page.evaluate(() => {
      const lengths: number[] = [];
      window.__answerLengths = lengths;
      new MutationObserver(() => {
        const bubbles = document.querySelectorAll('.turn.assistant .bubble');
        const last = bubbles[bubbles.length - 1];
        const n = (last?.textContent ?? '').length;
        if (last && lengths[lengths.length - 1] !== n) lengths.push(n);
      }).observe(document.querySelector('ol.chat')!, { subtree: true, childList: true, characterData: true });
    });
    await page.getByRole('textbox', { name: 'Message' }).fill('Once upon a time');
    await page.getByRole('textbox', { name: 'Message' }).press('Enter');
    const answer = page.locator('.turn.assistant').last();
    const meta = answer.locator('.answer-meta[role="status"]');
    await meta.waitFor({ timeout: 30_000 });
    const lengths = (await page.evaluate(() => window.__answerLengths)) ?? [];
    const deltas = Number(await answer.locator('.bubble').getAttribute('data-deltas'));
    const text = (await answer.locator('.bubble').textContent())!;
    console.log(`playground answer: ${deltas} text events, shown at lengths ${lengths.join(',')}; ${await meta.textContent()}`);
    // The answer came as many events, and the page showed it growing.
    expect(deltas).toBeGreaterThan(1);
    expect(lengths.filter((n) => n > 0).length).toBeGreaterThan(1);
    expect(text.length).toBeGreaterThan(0);
    expect(await meta.locator('[data-stat="ttft"]').textContent()).toMatch(/^TTFT \d+ ms$|^TTFT \d+\.\d\d s$/);
    expect(await meta.locator('[data-stat="tps"]').textContent()).toMatch(/^\d+\.\d tok\/s$/);
    expect(await meta.textContent()).toMatch(/\d+ tokens? in \d+/);
    expect(await meta.textContent()).toMatch(/finish: (stop|length)/);
    // The user's turn stays above the answer; the box is empty and keeps the focus.
    expect(await page.locator('.turn.user .bubble').first().textContent()).toBe('Once upon a time');
    expect(await page.getByRole('textbox', { name: 'Message' }).inputValue()).toBe('');

    // A second turn, sent with the button.
    await page.getByRole('textbox', { name: 'Message' }).fill('Tell me more');
    await page.getByRole('button', { name: 'Send' }).click();
    await expect.poll(() => page.locator('.turn.assistant .answer-meta[role="status"]').count(), { timeout: 30_000 }).toBe(2);
    await blurFocus(page);
    await screenshotBothWidths(page, '33-playground');
  });

  it('stops an answer with the Stop button', async () => {
    // The larger model: an answer of hundreds of tokens takes long enough to stop.
    await page.getByLabel('Model').selectOption('story');
    await page.waitForURL(/#\/playground\/story$/);
    await page.getByLabel('Max tokens').fill('1500');
    await page.getByRole('textbox', { name: 'Message' }).fill('Once upon a time there was a little girl');
    const stop = page.getByRole('button', { name: 'Stop' });
    expect(await stop.isDisabled()).toBe(true);
    await page.getByRole('button', { name: 'Send' }).click();
    const answer = page.locator('.turn.assistant').last();
    // Some text first, then Stop.
    await expect.poll(async () => Number(await answer.locator('.bubble').getAttribute('data-deltas')), { timeout: 30_000 }).toBeGreaterThan(3);
    await stop.click();
    const meta = answer.locator('.answer-meta[role="status"]');
    await meta.waitFor();
    const text = (await meta.textContent())!;
    console.log(`stopped answer: ${text}`);
    expect(text).toContain('stopped');
    expect(text).toMatch(/TTFT \d+ ms/);
    expect(text).toMatch(/≈ \d+ tokens? in/);
    expect(await stop.isDisabled()).toBe(true);
    // The page stops counting: the text stays as it was.
    const shown = await answer.locator('.bubble').textContent();
    await page.waitForTimeout(300);
    expect(await answer.locator('.bubble').textContent()).toBe(shown);
    await blurFocus(page);
    await screenshotBothWidths(page, '34-playground-stopped');
    await page.getByLabel('Model').selectOption('tiny');
  });

  it('shows the metrics charts move after the chats', async () => {
    await navLink(page, 'Metrics').click();
    await page.waitForURL(/#\/metrics(\/tiny)?$/);
    await page.locator('figure[data-chart="rpm"] canvas').first().waitFor();
    // The page kept its series; the chats of the Playground are in the new points.
    await expect.poll(async () => Number(await requestsCell().textContent()), { timeout: 15_000 }).toBeGreaterThanOrEqual(2);
    expect(await chartPoints('rpm')).toBeGreaterThan(pointsBeforeChat);
    const afterChats = Number(await requestsCell().textContent());
    // With the page open, one more chat (through the API) moves the charts by themselves.
    const points = await chartPoints('ttft');
    await chatViaApi('Hello world');
    await expect.poll(async () => Number(await requestsCell().textContent()), { timeout: 15_000 }).toBe(afterChats + 1);
    expect(await chartPoints('ttft')).toBeGreaterThan(points);
    const latest = (await page.locator('table.latest').textContent())!;
    expect(latest).toMatch(/Time to first tokenp50 \d+(\.\d+)? ms p99 \d+(\.\d+)? ms mean \d+(\.\d+)? ms/);
    // The y axes say what they measure; KV-cache and the queue come from /metrics.
    for (const id of ['rpm', 'tps', 'ttft', 'tpot', 'kv', 'queue']) {
      expect(await page.locator(`figure[data-chart="${id}"] canvas`).count(), id).toBeGreaterThan(0);
    }
    expect(latest).toContain('KV-cache use (this replica)');
    expect(await page.locator('figure[data-chart="ttft"] .u-legend').textContent()).toContain('p99');
    await blurFocus(page);
    await screenshotBothWidths(page, '35-metrics-library');
  });

  it('charts a realtime model per variation', async () => {
    await page.getByLabel('Model').selectOption('fraud');
    await page.locator('figure[data-chart="rate"] canvas').first().waitFor();
    const table = page.getByRole('table', { name: /Latest figures of fraud per variation/ });
    await table.waitFor();
    expect(await table.locator('tbody tr').first().textContent()).toMatch(/^default5/);
    expect(await page.locator('figure[data-chart="latency"] .u-legend').textContent()).toContain('default p99');
    expect(await page.locator('figure[data-chart="errors"] canvas').count()).toBeGreaterThan(0);
    await blurFocus(page);
    await screenshotBothWidths(page, '36-metrics-realtime');
  });

  it('draws the charts and the playground in the dark theme too', async () => {
    await page.goto(`${host.url}/console/#/metrics/tiny`);
    await page.locator('figure[data-chart="rpm"] canvas').first().waitFor();
    await page.emulateMedia({ colorScheme: 'dark' });
    await expect.poll(() => chartPoints('rpm')).toBeGreaterThanOrEqual(2);
    await blurFocus(page);
    await screenshotBothWidths(page, '37-metrics-dark');
    await navLink(page, 'Playground').click();
    await page.getByRole('textbox', { name: 'Message' }).fill('Hello');
    await page.getByRole('textbox', { name: 'Message' }).press('Enter');
    await page.locator('.turn.assistant .answer-meta[role="status"]').waitFor({ timeout: 30_000 });
    await blurFocus(page);
    await screenshotBothWidths(page, '38-playground-dark');
    await navLink(page, 'Library').click();
    await page.getByRole('table', { name: /GGUF catalogue/ }).waitFor();
    await screenshotBothWidths(page, '39-library-dark');
    await page.emulateMedia({ colorScheme: 'light' });
  });

  it('labels every control and lets the keyboard reach the actions', async () => {
    for (const hash of ['#/library', '#/metrics/tiny', '#/metrics/fraud', '#/playground/tiny']) {
      await page.goto(`${host.url}/console/${hash}`);
      await page.locator('main h1').waitFor();
      await page.waitForLoadState('networkidle');
      expect(await unlabelledControls(page), hash).toEqual([]);
    }
    // Library: Tab to a file's Deploy button; Enter opens the form with the focus in it.
    await page.goto(`${host.url}/console/#/library`);
    await page.getByRole('table', { name: /GGUF catalogue/ }).waitFor();
    expect(await tabTo(page, 'button[aria-label="Deploy tiny-chat"]')).toBe(true);
    await page.keyboard.press('Enter');
    await page.getByRole('form', { name: 'Deploy tiny-chat' }).waitFor();
    expect(await tabTo(page, '.deploy-form button.secondary')).toBe(true); // Cancel
    await page.keyboard.press('Enter');
    await page.getByRole('form', { name: 'Deploy tiny-chat' }).waitFor({ state: 'hidden' });
    // Playground: type, Enter sends; the stats arrive; Tab reaches Clear.
    await page.goto(`${host.url}/console/#/playground/tiny`);
    await page.getByRole('textbox', { name: 'Message' }).waitFor();
    expect(await tabTo(page, '#pg-message')).toBe(true);
    await page.keyboard.type('Hello world');
    await page.keyboard.press('Enter');
    await page.locator('.turn.assistant .answer-meta[role="status"]').waitFor({ timeout: 30_000 });
    expect(await tabTo(page, '.composer-actions button.secondary')).toBe(true);
    await page.keyboard.press('Enter');
    await page.locator('.chat-empty').waitFor();
    // Metrics: the model picker and the pause button.
    await page.goto(`${host.url}/console/#/metrics/tiny`);
    await page.locator('figure[data-chart="rpm"]').waitFor();
    expect(await tabTo(page, '#metrics-model')).toBe(true);
    expect(await tabTo(page, 'button[aria-pressed]')).toBe(true);
    await page.keyboard.press('Enter');
    expect(await page.getByRole('button', { name: 'Resume updates' }).getAttribute('aria-pressed')).toBe('true');
    await page.keyboard.press('Enter');
  });

  it('says what to do next on an empty host', async () => {
    const empty = await listen(await startInProcessHost({ MODELS_DIR: tempDir() }));
    const visitor = await browser.newContext({ viewport: WIDE });
    try {
      const p = await visitor.newPage();
      p.on('pageerror', (e) => pageErrors.push(`pageerror (empty host): ${e.message}`));
      await p.goto(`${empty.url}/console/#/library`);
      await p.getByLabel('API key').fill((await tokenFor(empty, 'empty')).key);
      await p.getByRole('button', { name: 'Sign in' }).click();
      await p.getByText('No GGUF files in MODELS_DIR.').waitFor();
      expect(await p.locator('.empty').textContent()).toContain("Put GGUF files in the host's MODELS_DIR");
      await screenshotBothWidths(p, '40-library-empty');
      await navLink(p, 'Playground').click();
      await p.getByText('No library model is live.').waitFor();
      expect(await p.locator('.empty a').first().getAttribute('href')).toBe('#/library');
      await screenshotBothWidths(p, '41-playground-empty');
      await navLink(p, 'Metrics').click();
      await p.getByText('No models yet, so no figures.').waitFor();
      await screenshotBothWidths(p, '42-metrics-empty');
    } finally {
      await visitor.close();
      await empty.close();
    }
  });

  it('loads uPlot only with the Metrics page, and loaded nothing from elsewhere and logged no error', async () => {
    const fresh = await browser.newContext({ viewport: WIDE });
    try {
      const first = await fresh.newPage();
      const urls: string[] = [];
      const sizes: number[] = [];
      first.on('requestfinished', async (r) => {
        urls.push(new URL(r.url()).pathname);
        sizes.push((await r.sizes()).responseBodySize);
      });
      await first.goto(`${host.url}/console/`);
      await first.getByRole('heading', { name: 'Sign in' }).waitFor();
      await first.waitForLoadState('networkidle');
      const total = sizes.reduce((a, b) => a + b, 0);
      console.log(`console first visit: ${urls.length} files, ${total} bytes gzipped (${(total / 1024).toFixed(1)} KiB): ${urls.join(', ')}`);
      expect(urls.some((u) => /\/assets\/charts-[^/]+\.js$/.test(u))).toBe(false);
      expect(total).toBeLessThan(300 * 1024);
    } finally {
      await fresh.close();
    }
    expect(requested.some((u) => /\/assets\/charts-[^/]+\.js$/.test(new URL(u).pathname))).toBe(true);
    const origin = new URL(host.url).origin;
    expect(requested.filter((u) => !u.startsWith(origin) && !u.startsWith('data:'))).toEqual([]);
    expect(pageErrors).toEqual([]);
  });
});
