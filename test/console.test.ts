// The web console end to end: the real host (with a real ONNX build deployed as a canary with a
// shadow, a real tiny GGUF library model, and real vector collections), and the built console in
// a real headless Chromium (Debian's, through playwright-core). In the browser: a bad key, sign
// in, the models, a build upload, audiences, vector collections sampled and searched by vector
// and by id, a collection deleted, every control labelled and reachable by keyboard, both themes,
// an expired token and sign-out. Each page is photographed at 1280 and 390 px into
// test-output/console/. The host side: /console's redirect, headers, gzip, and a missing build.
import fs from 'node:fs';
import path from 'node:path';
import Fastify from 'fastify';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { consoleRoutes } from '../src/server/routes/console.js';
import { installErrorHandling } from '../src/server/error-handler.js';
import { type Api, apiClient, expectStatus, waitForDeployment } from './helpers/api.js';
import { blurFocus, bodyBackground, focusedText, launchChromium, screenshotBothWidths, SCREENSHOT_DIR, sessionKeys, tabTo, unlabelledControls, WIDE } from './helpers/browser.js';
import { listen, startInProcessHost, tokenFor, type TestHost } from './helpers/in-process-host.js';
import { writeTinyChatModel } from './helpers/llm-models.js';
import { linearModel } from './helpers/models.js';
import { ROOT, tempDir } from './helpers/paths.js';

const FEATURES = ['amount', 'age', 'country'];
const DIST = path.join(ROOT, 'console', 'dist');

let host: TestHost;
let api: Api;
let key: string;
let browser: Browser;
let context: BrowserContext;
let page: Page;
/** Every URL the browser asked for, and what went wrong in the page. */
const requested: string[] = [];
const pageErrors: string[] = [];

const ok = <T = any>(method: string, url: string, body?: unknown, status = 200) => expectStatus<T>(api, method, url, body, status);

async function deploy(modelId: string, body: Record<string, unknown>): Promise<void> {
  const dep = await ok<{ deployment_id: string }>('POST', `/api/v1/models/${modelId}/deployments`, body, 202);
  expect((await waitForDeployment(api, dep.deployment_id)).status).toBe('LIVE');
}

async function upload(modelId: string, bias: number): Promise<string> {
  const build = await ok<{ build_id: string }>('POST', `/api/v1/models/${modelId}/builds?feature_names=${FEATURES.join(',')}`, linearModel(FEATURES, bias), 201);
  return build.build_id;
}

/** 4-dimensional unit-ish vectors: v<i> leans towards axis i % 4, so nearest neighbours are known. */
function docVectors(): Array<{ id: string; values: number[]; properties: Record<string, unknown> }> {
  return Array.from({ length: 24 }, (_, i) => {
    const values = [0.1, 0.1, 0.1, 0.1];
    values[i % 4] = 1 + i / 100;
    return { id: `doc-${String(i).padStart(2, '0')}`, values, properties: { axis: i % 4, title: `Document ${i}` } };
  });
}

beforeAll(async () => {
  // Only this file's screenshots (01- to 19-): the other console test files write theirs meanwhile.
  fs.mkdirSync(SCREENSHOT_DIR, { recursive: true });
  for (const f of fs.readdirSync(SCREENSHOT_DIR)) if (/^[01]\d-.*\.png$/.test(f)) fs.rmSync(path.join(SCREENSHOT_DIR, f));
  expect(fs.existsSync(path.join(DIST, 'index.html')), 'console/dist is built by `npm run build` (npm test runs it first)').toBe(true);
  const modelsDir = tempDir();
  writeTinyChatModel(modelsDir, 'tiny-chat', { license: 'apache-2.0' });
  host = await listen(await startInProcessHost({ MODELS_DIR: modelsDir }));
  const auth = await tokenFor(host, 'console');
  key = auth.key;
  api = apiClient(host.url, auth.token);

  // A realtime model live as default 85 % / canary 15 %, with a shadow copy of 5 % to candidate.
  await ok('POST', '/api/v1/models', { model_id: 'fraud', description: 'fraud scores' }, 201);
  const [b1, b2, b3] = [await upload('fraud', 0), await upload('fraud', 10), await upload('fraud', 20)];
  await deploy('fraud', { build_id: b1 });
  const everyone = (await ok<{ audiences: Array<{ id: string }> }>('POST', '/api/v1/audiences', { api_version: 'v1', spec: { audiences: [{ name: 'everyone' }] } }, 201)).audiences[0]!.id;
  const routes = [
    { variation_name: 'default', weight: 85, shadow: false },
    { variation_name: 'canary', weight: 15, shadow: false },
  ];
  await deploy('fraud', { build_id: b2, variation_name: 'canary', audiences: [{ id: everyone, routes, fallback_variation: 'default' }] });
  await deploy('fraud', {
    build_id: b3,
    variation_name: 'candidate',
    audiences: [{ id: everyone, routes: [...routes, { variation_name: 'candidate', weight: 5, shadow: true }], fallback_variation: 'default' }],
  });
  // A realtime model with a build and nothing deployed.
  await ok('POST', '/api/v1/models', { model_id: 'churn' }, 201);
  await upload('churn', 1);
  // A library model from a real (tiny) GGUF file.
  await ok('POST', '/api/v1/library/deployments', { name: 'tiny-chat', model_id: 'tiny' }, 202);
  for (let i = 0; ; i++) {
    const dep = await ok<{ status: string; reason: string | null }>('GET', '/api/v1/library/deployments/tiny');
    if (dep.status === 'LIVE') break;
    expect(dep.status, dep.reason ?? '').not.toBe('FAILED');
    expect(i).toBeLessThan(500);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }

  // Vector collections: one plain, one with tenants, one to delete.
  await ok('POST', '/api/v1/vectors/collections', { name: 'docs', dimension: 4, metric: 'cosine', description: 'product documents' }, 201);
  await ok('POST', '/api/v1/vectors/upsert', { collection_name: 'docs', vector: docVectors() });
  await ok('POST', '/api/v1/vectors/collections', { name: 'notes', dimension: 3, metric: 'l2', multi_tenant: true }, 201);
  for (const tenant of ['acme', 'globex']) {
    await ok('POST', '/api/v1/vectors/upsert', {
      collection_name: 'notes',
      tenant_id: tenant,
      vector: [1, 2, 3].map((i) => ({ id: `${tenant}-${i}`, values: [i, i * 2, i * 3], properties: { tenant } })),
    });
  }
  await ok('POST', '/api/v1/vectors/collections', { name: 'scratch', dimension: 2, metric: 'dot' }, 201);
  await ok('POST', '/api/v1/vectors/upsert', { collection_name: 'scratch', vector: [{ id: 'a', values: [1, 2] }] });

  browser = await launchChromium();
  context = await browser.newContext({ viewport: WIDE, colorScheme: 'light' });
  page = await context.newPage();
  page.on('request', (r) => requested.push(r.url()));
  page.on('pageerror', (e) => pageErrors.push(`pageerror: ${e.message}`));
  page.on('console', (m) => {
    // The refusals the tests provoke on purpose are logged by Chromium as failed loads.
    if (m.type() === 'error' && !/status of (400|401|404)\b/.test(m.text())) pageErrors.push(`console: ${m.text()}`);
  });
}, 120_000);

afterAll(async () => {
  await browser?.close();
  await host?.close();
});

const main = () => page.locator('main');

describe('the host serves the console', () => {
  it('redirects /console to /console/ and serves the built files without a token, gzipped, with a strict CSP', async () => {
    const redirect = await fetch(`${host.url}/console`, { redirect: 'manual' });
    expect(redirect.status).toBe(301);
    expect(redirect.headers.get('location')).toBe('/console/');

    const index = await fetch(`${host.url}/console/`, { headers: { 'accept-encoding': 'gzip' } });
    expect(index.status).toBe(200);
    expect(index.headers.get('content-type')).toMatch(/^text\/html/);
    expect(index.headers.get('content-security-policy')).toContain("default-src 'self'");
    expect(index.headers.get('cache-control')).toBe('no-cache');
    const html = await index.text();
    const assets = [...html.matchAll(/(?:src|href)="(\/console\/assets\/[^"]+)"/g)].map((m) => m[1]!);
    expect(assets.some((a) => a.endsWith('.js'))).toBe(true);
    expect(assets.some((a) => a.endsWith('.css'))).toBe(true);
    for (const asset of assets) {
      const res = await fetch(host.url + asset, { headers: { 'accept-encoding': 'gzip' } });
      expect(res.status, asset).toBe(200);
      expect(res.headers.get('content-encoding'), asset).toBe('gzip');
      expect(res.headers.get('cache-control'), asset).toContain('immutable');
      expect((await res.arrayBuffer()).byteLength).toBeGreaterThan(0);
    }
    const missing = await fetch(`${host.url}/console/assets/nothing.js`);
    expect(missing.status).toBe(404);
    expect(((await missing.json()) as { error: { code: string } }).error.code).toBe('not_found');
  });

  it('answers 503 saying to run `npm run build` when the console is not built', async () => {
    const bare = Fastify({ logger: false });
    installErrorHandling(bare, 1024);
    await bare.register(consoleRoutes, { root: tempDir() });
    try {
      for (const url of ['/console', '/console/', '/console/assets/index.js']) {
        const res = await bare.inject({ method: 'GET', url });
        expect(res.statusCode, url).toBe(503);
        expect(res.json().error.code).toBe('unavailable');
        expect(res.json().error.message).toMatch(/the web console is not built: run `npm run build`/);
      }
    } finally {
      await bare.close();
    }
  });
});

describe('in the browser', () => {
  it('refuses a bad API key with the host\'s message, on the sign-in page', async () => {
    await page.goto(`${host.url}/console`);
    await expect.poll(() => page.title()).toBe('Sign in · platform console');
    await screenshotBothWidths(page, '01-sign-in');
    await page.getByLabel('API key').fill('psk_not-a-real-key');
    await page.getByRole('button', { name: 'Sign in' }).click();
    await expect.poll(() => page.getByRole('alert').textContent()).toBe('invalid or revoked API key');
    await screenshotBothWidths(page, '02-sign-in-bad-key');
  });

  it('signs in with a key and shows the models: variations, builds, traffic, replicas, and the library model', async () => {
    await page.getByLabel('API key').fill(key);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('heading', { name: 'Models', level: 1 }).waitFor();
    expect(await sessionKeys(page)).toEqual(['platform.console.token']);

    const fraud = page.getByRole('listitem').filter({ has: page.getByRole('heading', { name: 'fraud', exact: true }) });
    await fraud.waitFor();
    const text = (await fraud.textContent())!;
    expect(text).toContain('LIVE');
    expect(text).toContain('applied on 1/1 replica');
    const rows = fraud.getByRole('table', { name: 'Variations of fraud' }).locator('tbody tr');
    expect(await rows.count()).toBe(3);
    const row = async (name: string) => (await rows.filter({ has: page.getByRole('rowheader', { name, exact: true }) }).textContent())!;
    expect(await row('default')).toMatch(/bld_[0-9a-f]{16}cpueveryone: 85 %/);
    expect(await row('canary')).toContain('everyone: 15 %');
    expect(await row('candidate')).toMatch(/everyone: 5 %shadow copy/);
    expect(text).toContain('Fallback variation: default');
    await fraud.getByText('3 builds').click();
    expect(await fraud.locator('details table tbody tr').count()).toBe(3);
    expect(await fraud.locator('details').textContent()).toContain('amount, age, country');

    const churn = page.getByRole('listitem').filter({ has: page.getByRole('heading', { name: 'churn', exact: true }) });
    expect(await churn.textContent()).toContain('not deployed');
    expect(await churn.textContent()).toContain('platform models deploy realtime --model-id churn --build-id bld_');

    const tiny = page.getByRole('listitem').filter({ has: page.getByRole('heading', { name: 'tiny', exact: true }) });
    const tinyText = (await tiny.textContent())!;
    expect(tinyText).toContain('library');
    expect(tinyText).toContain('LIVE');
    expect(tinyText).toContain('tiny-chat.gguf');
    expect(tinyText).toContain('applied on 1/1 replica');
    expect(tinyText).toContain('apache-2.0');
    await screenshotBothWidths(page, '03-models');
  });

  it('uploads an ONNX build from the browser, creating the model, with the host\'s 400 beside the field', async () => {
    await page.getByRole('link', { name: 'Build upload' }).click();
    await page.getByRole('heading', { name: 'Build upload', level: 1 }).waitFor();
    await page.getByLabel('Model', { exact: true }).selectOption({ label: 'A new model…' });
    await page.getByLabel('New model id').fill('scores');
    await page.getByLabel('Description (optional)').fill('uploaded from the console');
    await page.getByLabel('ONNX file').setInputFiles({ name: 'scores.onnx', mimeType: 'application/octet-stream', buffer: Buffer.from(linearModel(FEATURES, 5)) });
    // Two names for three features: the host's 400 appears in the form, beside the field it names.
    await page.getByLabel('Feature names (optional)').fill('amount, age');
    await page.getByRole('button', { name: 'Upload build' }).click();
    const uploadError = page.locator('form .error');
    await uploadError.waitFor();
    expect(await uploadError.textContent()).toMatch(/feature/i);
    await screenshotBothWidths(page, '04-build-upload-refused');

    // The model was created by the first try; the second uploads to it.
    await page.getByLabel('Feature names (optional)').fill('amount, age, country');
    await page.getByLabel('Output names (optional)').fill('score');
    await page.getByRole('button', { name: 'Upload build' }).click();
    const done = page.getByRole('heading', { name: /Build bld_[0-9a-f]{16} uploaded/ });
    await done.waitFor();
    const buildId = /bld_[0-9a-f]{16}/.exec((await done.textContent())!)![0];
    const result = (await page.locator('.result').textContent())!;
    expect(result).toContain('amount (float), age (float), country (float)');
    expect(result).toContain('score');
    expect(result).toContain('Gemm');
    const builds = await ok<{ builds: Array<{ build_id: string; outputs: string[] }> }>('GET', '/api/v1/models/scores/builds');
    expect(builds.builds.map((b) => b.build_id)).toEqual([buildId]);
    expect(builds.builds[0]!.outputs).toEqual(['score']);
    expect((await ok<{ model: { description: string } }>('GET', '/api/v1/models/scores')).model.description).toBe('uploaded from the console');
    await screenshotBothWidths(page, '05-build-upload-done');
  });

  it('lists audiences with their conditions and creates more from YAML, showing YAML and host errors', async () => {
    await page.getByRole('link', { name: 'Audiences' }).click();
    await page.getByRole('heading', { name: 'Audiences', level: 1 }).waitFor();
    const everyone = page.getByRole('listitem').filter({ has: page.getByRole('heading', { name: 'everyone' }) });
    expect(await everyone.textContent()).toContain('no conditions: every request');

    const file = page.getByLabel('Audience file');
    await file.fill('api_version: v1\nspec:\n  audiences:\n    - name: [unclosed\n');
    await page.getByRole('button', { name: 'Create' }).click();
    await expect.poll(() => page.locator('form .error').textContent()).toMatch(/^YAML syntax error at line \d+, column \d+/);

    await file.fill('api_version: v1\nspec:\n  audiences:\n    - name: bad\n      conditions:\n        unary:\n          - {key: x, operator: UNARY_OPERATOR_TYPE_NOPE, operand: y}\n');
    await page.getByRole('button', { name: 'Create' }).click();
    await expect.poll(() => page.locator('form .error').textContent()).toMatch(/operator/);

    // The example the page starts with: the DESIGN.md audience.
    await page.reload();
    await page.getByRole('heading', { name: 'Audiences', level: 1 }).waitFor();
    await page.getByRole('button', { name: 'Create' }).click();
    await expect.poll(() => page.getByRole('status').textContent()).toMatch(/^Created 1 audience: new-york-young \(aud_/);
    const ny = page.getByRole('listitem').filter({ has: page.getByRole('heading', { name: 'new-york-young' }) });
    await ny.waitFor();
    const nyText = (await ny.textContent())!;
    expect(nyText).toContain('header location is new-york');
    expect(nyText).toContain('header age is an integer from 18 to below 30');
    expect((await ok<{ audiences: unknown[] }>('GET', '/api/v1/audiences')).audiences).toHaveLength(2);
    await screenshotBothWidths(page, '06-audiences');
  });

  it('lists vector collections with dimension, metric, count and tenants', async () => {
    await page.getByRole('link', { name: 'Vectors' }).click();
    const table = page.locator('table.collections');
    await table.waitFor();
    const row = async (name: string) => (await table.locator('tbody tr').filter({ has: page.getByRole('link', { name, exact: true }) }).textContent())!;
    expect(await row('docs')).toMatch(/^docsproduct documents4cosine24single tenant/);
    expect(await row('notes')).toMatch(/^notes3l26 ?2 tenants/);
    expect(await row('scratch')).toMatch(/^scratch2dot1single tenant/);
    await screenshotBothWidths(page, '07-vectors');
  });

  it('samples a collection and searches it by a vector and by the id of a stored vector', async () => {
    await page.getByRole('link', { name: 'docs', exact: true }).click();
    await page.getByRole('heading', { name: 'Collection docs', level: 1 }).waitFor();
    expect(await page.locator('dl.stats').textContent()).toContain('24 indexed');

    await page.getByLabel('Number of samples').fill('5');
    await page.getByRole('button', { name: 'Sample', exact: true }).click();
    const sample = page.getByRole('table', { name: 'Sampled vectors' });
    await sample.waitFor();
    expect(await sample.locator('tbody tr').count()).toBe(5);
    expect(await sample.locator('tbody tr').first().textContent()).toMatch(/^doc-\d\d\[[\d., ]+\]axis: \d, title: Document \d+Search near$/);

    // By a vector: nearest to axis 2 are the documents leaning that way, as the API says.
    await page.getByLabel('Reference vector (4 numbers)').fill('0, 0, 1, 0');
    await page.getByLabel('Max results').fill('3');
    await page.getByRole('button', { name: 'Search', exact: true }).click();
    const results = page.getByRole('table', { name: 'Search results' });
    await results.waitFor();
    const viaApi = await ok<{ search_results: Array<{ id: string; distance: number }> }>('POST', '/api/v1/vectors/search', {
      collection_name: 'docs',
      reference_vector: { element: [0, 0, 1, 0] },
      max_results: 3,
    });
    const ids = async () => results.locator('tbody th').allTextContents();
    expect(await ids()).toEqual(viaApi.search_results.map((r) => r.id));
    expect(await ids()).toEqual(['doc-22', 'doc-18', 'doc-14']);
    expect(await page.getByRole('heading', { name: /^3 results near the vector \[0, 0, 1, 0\]$/ }).count()).toBe(1);
    await screenshotBothWidths(page, '08-vector-search-by-vector');

    // A malformed vector is refused before any request; a wrong dimension by the host.
    await page.getByLabel('Reference vector (4 numbers)').fill('1, two, 3');
    await page.getByRole('button', { name: 'Search', exact: true }).click();
    await expect.poll(() => page.getByRole('alert').textContent()).toBe('Number 2 of the vector, "two", is not a number.');
    await page.getByLabel('Reference vector (4 numbers)').fill('1, 2, 3');
    await page.getByRole('button', { name: 'Search', exact: true }).click();
    await expect.poll(async () => (await page.locator('.panel .error').allTextContents()).join(' ')).toMatch(/dimension|4/);

    // By id: the stored vector's own values, so it comes first at distance 0.
    await page.getByLabel('the id of a stored vector').check();
    await page.getByLabel('Vector id').fill('doc-07');
    await page.getByRole('button', { name: 'Search', exact: true }).click();
    await page.getByRole('heading', { name: /near the stored vector doc-07$/ }).waitFor();
    const rows = await results.locator('tbody tr').allTextContents();
    expect(rows[0]).toBe('1doc-070axis: 3, title: Document 7');
    const doc07 = (await ok<{ vector: { values: number[] } }>('GET', '/api/v1/vectors/collections/docs/doc-07')).vector.values;
    const nearDoc07 = await ok<{ search_results: Array<{ id: string }> }>('POST', '/api/v1/vectors/search', {
      collection_name: 'docs',
      reference_vector: { element: doc07 },
      max_results: 3,
    });
    expect(await ids()).toEqual(nearDoc07.search_results.map((r) => r.id));
    expect((await ids())[0]).toBe('doc-07');
    await screenshotBothWidths(page, '09-vector-search-by-id');

    // An id that is not stored: the host's 404 in words.
    await page.getByLabel('Vector id').fill('nope');
    await page.getByRole('button', { name: 'Search', exact: true }).click();
    await expect.poll(() => page.getByRole('alert').textContent()).toMatch(/nope/);

    // "Search near" on a sampled row searches by that id.
    const firstSampled = (await sample.locator('tbody th').first().textContent())!;
    await sample.getByRole('button', { name: `Search near ${firstSampled}` }).click();
    await page.getByRole('heading', { name: new RegExp(`near the stored vector ${firstSampled}$`) }).waitFor();
    expect((await ids())[0]).toBe(firstSampled);
  });

  it('asks for the tenant of a multi-tenant collection and searches within it', async () => {
    await page.goto(`${host.url}/console/#/vectors/notes`);
    await page.getByRole('heading', { name: 'Collection notes', level: 1 }).waitFor();
    expect(await page.locator('dl.stats').textContent()).toContain('2 tenants');
    await page.getByLabel('Reference vector (3 numbers)').fill('1 2 3');
    await page.getByRole('button', { name: 'Search', exact: true }).click();
    await expect.poll(() => page.getByRole('alert').textContent()).toMatch(/multi-tenant: tenant_id is required/);
    await page.getByLabel('Tenant').fill('globex');
    await page.getByRole('button', { name: 'Search', exact: true }).click();
    const results = page.getByRole('table', { name: 'Search results' });
    await results.waitFor();
    expect(await results.locator('tbody th').allTextContents()).toEqual(['globex-1', 'globex-2', 'globex-3']);
    await screenshotBothWidths(page, '10-vectors-tenant');
  });

  it('deletes a collection only after its name is typed in the dialog', async () => {
    await page.goto(`${host.url}/console/#/vectors/scratch`);
    await page.getByRole('heading', { name: 'Collection scratch', level: 1 }).waitFor();
    await page.getByRole('button', { name: 'Delete collection' }).click();
    const dialog = page.getByRole('dialog', { name: 'Delete scratch?' });
    await dialog.waitFor();
    const confirm = dialog.getByRole('button', { name: 'Delete', exact: true });
    expect(await confirm.isDisabled()).toBe(true);
    await dialog.getByLabel("Type the collection's name to confirm").fill('scratc');
    expect(await confirm.isDisabled()).toBe(true);
    await screenshotBothWidths(page, '11-delete-dialog', false);
    // Escape cancels; nothing is deleted.
    await page.keyboard.press('Escape');
    await dialog.waitFor({ state: 'hidden' });
    expect((await api('GET', '/api/v1/vectors/collections/scratch')).status).toBe(200);

    await page.getByRole('button', { name: 'Delete collection' }).click();
    await dialog.getByLabel("Type the collection's name to confirm").fill('scratch');
    await confirm.click();
    await expect.poll(() => page.getByRole('status').textContent()).toBe('Deleted the collection scratch and its 1 vector.');
    expect(page.url()).toMatch(/#\/vectors$/);
    expect((await api('GET', '/api/v1/vectors/collections/scratch')).status).toBe(404);
    expect(await page.getByRole('link', { name: 'scratch', exact: true }).count()).toBe(0);
  });

  it('labels every control and lets the keyboard reach the pages and their actions', async () => {
    for (const hash of ['#/models', '#/builds', '#/audiences', '#/vectors', '#/vectors/docs']) {
      await page.goto(`${host.url}/console/${hash}`);
      await page.locator('main h1').waitFor();
      await page.waitForLoadState('networkidle');
      expect(await unlabelledControls(page), hash).toEqual([]);
    }
    // From the top of the page, Tab reaches the navigation and Enter follows it.
    await page.goto(`${host.url}/console/#/models`);
    await page.getByRole('heading', { name: 'Models', level: 1 }).waitFor();
    expect(await tabTo(page, 'nav a[href="#/vectors"]')).toBe(true);
    await page.keyboard.press('Enter');
    await page.getByRole('heading', { name: 'Vectors', level: 1 }).waitFor();
    // The new page's heading has the focus, so the next Tab goes into the page.
    expect(await focusedText(page)).toBe('Vectors');
    expect(await tabTo(page, 'a[href="#/vectors/docs"]')).toBe(true);
    await page.keyboard.press('Enter');
    await page.getByRole('heading', { name: 'Collection docs', level: 1 }).waitFor();
    expect(await tabTo(page, '#search-vector')).toBe(true);
    await page.keyboard.type('0 1 0 0');
    await page.keyboard.press('Enter'); // a textarea takes Enter as a new line: submit from the button
    expect(await tabTo(page, 'form[aria-labelledby="search-title"] button[type="submit"]')).toBe(true);
    await page.keyboard.press('Enter');
    await page.getByRole('table', { name: 'Search results' }).waitFor();
    expect((await page.getByRole('table', { name: 'Search results' }).locator('tbody th').allTextContents())[0]).toBe('doc-21');
    // The skip link is the first stop.
    await page.goto(`${host.url}/console/#/models`);
    await page.reload();
    await page.getByRole('heading', { name: 'Models', level: 1 }).waitFor();
    await page.keyboard.press('Tab');
    expect(await focusedText(page)).toBe('Skip to the page');
  });

  it('follows the system\'s dark theme', async () => {
    const background = () => bodyBackground(page);
    const light = await background();
    await blurFocus(page);
    await page.emulateMedia({ colorScheme: 'dark' });
    const dark = await background();
    expect(dark).not.toBe(light);
    expect(dark).toBe('rgb(15, 18, 22)');
    await screenshotBothWidths(page, '12-models-dark');
    await page.goto(`${host.url}/console/#/vectors/docs`);
    await page.getByLabel('Reference vector (4 numbers)').fill('1 0 0 0');
    await page.getByRole('button', { name: 'Search', exact: true }).click();
    await page.getByRole('table', { name: 'Search results' }).waitFor();
    await screenshotBothWidths(page, '13-vector-search-dark');
    await page.emulateMedia({ colorScheme: 'light' });
  });

  it('returns to the sign-in page with a message when the token expires', async () => {
    await page.goto(`${host.url}/console/#/models`);
    await page.getByRole('heading', { name: 'fraud', exact: true }).waitFor();
    await page.waitForLoadState('networkidle');
    // The host's clock moves past the token's 24 hours; the next call answers 401.
    host.advance(25 * 3600_000);
    try {
      await page.getByRole('button', { name: 'Refresh' }).click();
      await page.getByRole('heading', { name: 'Sign in' }).waitFor();
      expect(await page.getByRole('status').textContent()).toBe('Your session expired, sign in again.');
      expect(await sessionKeys(page)).toEqual([]);
      await screenshotBothWidths(page, '14-session-expired');
    } finally {
      // Back to the real time before signing in again: a token issued in the future is refused.
      host.advance(-25 * 3600_000);
    }
    // Signing in again brings back the page that was open.
    await page.getByLabel('API key').fill(key);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('heading', { name: 'Models', level: 1 }).waitFor();
  });

  it('signs out', async () => {
    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.getByRole('heading', { name: 'Sign in' }).waitFor();
    expect(await page.getByRole('status').textContent()).toBe('You signed out.');
    expect(await sessionKeys(page)).toEqual([]);
    // A reload stays signed out.
    await page.reload();
    await page.getByRole('heading', { name: 'Sign in' }).waitFor();
  });

  it('says what to do next on an empty host', async () => {
    const empty = await listen(await startInProcessHost({ MODELS_DIR: tempDir() }));
    const visitor = await browser.newContext({ viewport: WIDE });
    try {
      const p = await visitor.newPage();
      p.on('pageerror', (e) => pageErrors.push(`pageerror (empty host): ${e.message}`));
      await p.goto(`${empty.url}/console/`);
      await p.getByLabel('API key').fill((await tokenFor(empty, 'empty')).key);
      await p.getByRole('button', { name: 'Sign in' }).click();
      await p.getByText('No models yet.').waitFor();
      const models = (await p.locator('.empty').textContent())!;
      expect(models).toContain('upload an ONNX build');
      expect(models).toContain('put GGUF files in the host\'s MODELS_DIR');
      await screenshotBothWidths(p, '15-empty-models');
      await p.getByRole('link', { name: 'Vectors' }).click();
      await p.getByText('No vector collections yet.').waitFor();
      expect(await p.locator('.empty').textContent()).toContain('platform vectors collections create --name docs --dimension 384 --metric cosine');
      await screenshotBothWidths(p, '16-empty-vectors');
      await p.getByRole('link', { name: 'Audiences' }).click();
      await p.getByText('No audiences yet.').waitFor();
      await p.goto(`${empty.url}/console/#/no-such-page`);
      await p.getByRole('heading', { name: 'Page not found' }).waitFor();
    } finally {
      await visitor.close();
      await empty.close();
    }
  });

  it('loaded nothing from elsewhere and logged no error', () => {
    const origin = new URL(host.url).origin;
    expect(requested.filter((u) => !u.startsWith(origin) && !u.startsWith('data:'))).toEqual([]);
    expect(pageErrors).toEqual([]);
  });

  it('adds less than 300 KB gzipped to the first visit', async () => {
    // A new visitor: no cache. Every response of the first load of /console/, as sent (gzipped).
    const fresh = await browser.newContext({ viewport: WIDE });
    const first = await fresh.newPage();
    const sizes: Array<{ url: string; bytes: number }> = [];
    first.on('requestfinished', async (r) => {
      const s = await r.sizes();
      sizes.push({ url: r.url(), bytes: s.responseBodySize });
    });
    await first.goto(`${host.url}/console/`);
    await first.getByRole('heading', { name: 'Sign in' }).waitFor();
    await first.waitForLoadState('networkidle');
    await fresh.close();
    const total = sizes.reduce((n, s) => n + s.bytes, 0);
    const files = sizes.filter((s) => !s.url.endsWith('/console')).map((s) => `${new URL(s.url).pathname} ${s.bytes} B`);
    console.log(`console first visit: ${files.length} files, ${total} bytes gzipped (${(total / 1024).toFixed(1)} KiB): ${files.join(', ')}`);
    expect(files.length).toBeGreaterThanOrEqual(3);
    expect(total).toBeGreaterThan(1000);
    expect(total).toBeLessThan(300 * 1024);
  });
});
