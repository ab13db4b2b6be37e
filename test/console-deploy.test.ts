// The console's deploy dialog and request log, end to end: the real host with real ONNX builds,
// the built console in Debian's headless Chromium (playwright-core). In the browser: SPEC.md's
// five steps to a canary (checked through the API), a wrong sum that keeps confirm disabled, a bad
// variation name answered by the host beside the field, a shadow; then predicts sent with the real
// curl, seen in the Logs page per variation with the shadow pairs side by side. Screenshots of
// each state at 1280 and 390 px go to test-output/console/20-*.png.
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Api, apiClient, expectStatus, waitForDeployment } from './helpers/api.js';
import { blurFocus, launchChromium, screenshotBothWidths, tabTo, unlabelledControls, waitForFocus, WIDE } from './helpers/browser.js';
import { listen, startInProcessHost, tokenFor, type TestHost } from './helpers/in-process-host.js';
import { linearModel } from './helpers/models.js';
import { ROOT } from './helpers/paths.js';

const run = promisify(execFile);
const FEATURES = ['amount', 'age', 'country'];

interface Traffic {
  variations: Record<string, string>;
  audiences: Array<{ id: string; routes: Array<{ variation_name: string; weight: number; shadow: boolean }> }>;
  fallbackVariation: string | null;
}
interface LogEntry {
  id: number;
  request_id: string;
  variation: string;
  shadow: boolean;
  status: number;
  response: string | null;
}

let host: TestHost;
let api: Api;
let key: string;
let token: string;
let browser: Browser;
let page: Page;
let builds: string[];
let everyone: string;
let beta: string;
const pageErrors: string[] = [];

const ok = <T = any>(method: string, url: string, body?: unknown, status = 200) => expectStatus<T>(api, method, url, body, status);

const liveTraffic = async () => (await ok<{ live_deployment: { traffic: Traffic } }>('GET', '/api/v1/models/fraud')).live_deployment.traffic;

/** The step panel's buttons and fields. */
const next = () => page.locator('.step-panel .step-actions button').last();
const confirmButton = () => page.getByRole('button', { name: 'Confirm deployment' });
const stepHeading = (n: number) => page.locator('.step-panel h2').filter({ hasText: `Step ${n} of 5` });

beforeAll(async () => {
  expect(fs.existsSync(path.join(ROOT, 'console', 'dist', 'index.html')), 'console/dist is built by `npm run build`').toBe(true);
  host = await listen(await startInProcessHost());
  const auth = await tokenFor(host, 'console-deploy');
  key = auth.key;
  token = auth.token;
  api = apiClient(host.url, auth.token);

  // fraud: three builds, the first live as "default" (100 %); two audiences, in this order.
  await ok('POST', '/api/v1/models', { model_id: 'fraud', description: 'fraud scores' }, 201);
  builds = [];
  for (const bias of [0, 10, 20]) {
    builds.push((await ok<{ build_id: string }>('POST', `/api/v1/models/fraud/builds?feature_names=${FEATURES.join(',')}`, linearModel(FEATURES, bias), 201)).build_id);
    await new Promise((resolve) => setTimeout(resolve, 5)); // distinct upload times: newest first is well defined
  }
  const first = await ok<{ deployment_id: string }>('POST', '/api/v1/models/fraud/deployments', { build_id: builds[0] }, 202);
  expect((await waitForDeployment(api, first.deployment_id)).status).toBe('LIVE');
  const created = await ok<{ audiences: Array<{ id: string; name: string }> }>(
    'POST',
    '/api/v1/audiences',
    {
      api_version: 'v1',
      spec: {
        audiences: [
          { name: 'beta-testers', description: 'beta testers', conditions: { unary: [{ key: 'x-beta', operator: 'UNARY_OPERATOR_TYPE_PRESENT_MATCH' }] } },
          { name: 'everyone' },
        ],
      },
    },
    201,
  );
  beta = created.audiences.find((a) => a.name === 'beta-testers')!.id;
  everyone = created.audiences.find((a) => a.name === 'everyone')!.id;
  // churn: a model with no build yet.
  await ok('POST', '/api/v1/models', { model_id: 'churn' }, 201);

  browser = await launchChromium();
  const context = await browser.newContext({ viewport: WIDE, colorScheme: 'light' });
  page = await context.newPage();
  page.on('pageerror', (e) => pageErrors.push(`pageerror: ${e.message}`));
  page.on('console', (m) => {
    // The refusals the tests provoke on purpose are logged by Chromium as failed loads.
    if (m.type() === 'error' && !/status of (400|401|404|409)\b/.test(m.text())) pageErrors.push(`console: ${m.text()}`);
  });
  await page.goto(`${host.url}/console/`);
  await page.getByLabel('API key').fill(key);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.getByRole('heading', { name: 'Models', level: 1 }).waitFor();
}, 120_000);

afterAll(async () => {
  await browser?.close();
  await host?.close();
});

describe('the deploy dialog', () => {
  it('walks the five steps from the Models page to a canary that goes LIVE, as the API then shows', async () => {
    await page.getByRole('heading', { name: 'fraud', exact: true }).waitFor();
    await page.waitForLoadState('networkidle');
    await screenshotBothWidths(page, '20-models-deploy-links');
    await page.getByRole('link', { name: 'Deploy a build of fraud' }).click();
    await page.getByRole('heading', { name: 'Deploy fraud', level: 1 }).waitFor();
    // Step 1: the builds, newest first; pick the second upload.
    await stepHeading(1).waitFor();
    const radios = page.getByRole('radio');
    expect(await radios.count()).toBe(3);
    expect(await radios.first().getAttribute('value')).toBe(builds[2]);
    expect(await page.locator('.build-option').last().textContent()).toContain('serves default');
    await page.getByRole('radio', { name: new RegExp(builds[1]!) }).check();
    await blurFocus(page);
    await screenshotBothWidths(page, '20-deploy-1-build');
    await next().click();

    // Step 2: a new variation.
    await stepHeading(2).waitFor();
    expect(await page.getByLabel('Create a new variation').isChecked()).toBe(true);
    await page.getByLabel('New variation name').fill('canary');
    await blurFocus(page);
    await screenshotBothWidths(page, '20-deploy-2-variation');
    await next().click();

    // Step 3: Traffic Control. Every audience in order, none routed yet (the first deploy had none).
    await stepHeading(3).waitFor();
    const listed = (await ok<{ audiences: Array<{ name: string }> }>('GET', '/api/v1/audiences')).audiences.map((a) => a.name);
    expect([...listed].sort()).toEqual(['beta-testers', 'everyone']);
    expect(await page.locator('.audience-block h3').allTextContents()).toEqual(listed);
    await page.getByLabel('Route everyone').check();
    // Routing it gives all to the first variation; the rows are default and canary.
    expect(await page.getByLabel('Weight of default in everyone (%)').inputValue()).toBe('100');
    expect(await page.getByLabel('Weight of canary in everyone (%)').inputValue()).toBe('0');
    const sum = page.locator(`[id="aud-${everyone}-sum"]`);
    expect(await sum.textContent()).toBe('Sum: 100 %');
    await page.getByLabel('Weight of default in everyone (%)').fill('90');
    // The sum follows each keystroke.
    expect(await sum.textContent()).toBe('Sum: 90 %. The weights of everyone must total 100 % (10 % to give).');
    await page.getByLabel('Weight of canary in everyone (%)').fill('10');
    expect(await sum.textContent()).toBe('Sum: 100 %');
    await blurFocus(page);
    await screenshotBothWidths(page, '20-deploy-3-traffic');
    await next().click();

    // Step 4: the fallback, from a list; it is "default" now and stays so.
    await stepHeading(4).waitFor();
    const fallback = page.getByLabel('Fallback variation');
    expect(await fallback.locator('option').allTextContents()).toEqual(['default', 'canary (new)']);
    expect(await fallback.inputValue()).toBe('default');
    await blurFocus(page);
    await screenshotBothWidths(page, '20-deploy-4-fallback');
    await next().click();

    // Step 5: the diff, then confirm.
    await stepHeading(5).waitFor();
    const diff = page.getByRole('table', { name: 'What changes for fraud' });
    const line = async (what: string) => (await diff.locator('tbody tr').filter({ has: page.getByRole('rowheader', { name: what, exact: true }) }).textContent())!;
    expect(await line('Variation canary')).toBe(`Variation canary—build ${builds[1]} on cpuadded`);
    expect(await line('Variation default')).toContain('unchanged');
    expect(await line('everyone → default')).toBe('everyone → default—90 %added');
    expect(await line('everyone → canary')).toBe('everyone → canary—10 %added');
    expect(await line('Fallback variation')).toBe('Fallback variationdefaultdefaultunchanged');
    expect(await confirmButton().isEnabled()).toBe(true);
    await blurFocus(page);
    await screenshotBothWidths(page, '20-deploy-5-review');
    await confirmButton().click();

    // Progress: PENDING -> DEPLOYING -> LIVE.
    const progress = page.locator('.dd-progress');
    await expect.poll(() => progress.getAttribute('data-status'), { timeout: 20_000 }).toBe('LIVE');
    expect(await page.getByRole('status').textContent()).toMatch(/^LIVE Live since/);
    expect(await progress.locator('.phase-done').allTextContents()).toEqual(['PENDING (done)', 'DEPLOYING (done)', 'LIVE (done)']);
    await screenshotBothWidths(page, '20-deploy-6-live');

    // Through the API: the canary is live with the weights and the fallback the dialog showed.
    const traffic = await liveTraffic();
    expect(traffic.variations).toEqual({ default: builds[0], canary: builds[1] });
    expect(traffic.audiences).toEqual([
      {
        id: everyone,
        routes: [
          { variation_name: 'default', weight: 90, shadow: false },
          { variation_name: 'canary', weight: 10, shadow: false },
        ],
      },
    ]);
    expect(traffic.fallbackVariation).toBe('default');
  });

  it('keeps confirm disabled while a sum is not 100, saying so beside the audience and on the review', async () => {
    await page.goto(`${host.url}/console/#/deploy/fraud/${builds[2]}`);
    await stepHeading(1).waitFor();
    expect(await page.getByRole('radio', { name: new RegExp(builds[2]!) }).isChecked()).toBe(true);
    await page.getByRole('button', { name: 'Step 2: Variation' }).click();
    await page.getByLabel('New variation name').fill('candidate');
    await page.getByRole('button', { name: 'Step 3: Traffic Control' }).click();
    // The live routes are there to start from; candidate joins everyone as a shadow of 50 %.
    expect(await page.getByLabel('Route everyone').isChecked()).toBe(true);
    expect(await page.getByLabel('Route beta-testers').isChecked()).toBe(false);
    expect(await page.getByLabel('Weight of default in everyone (%)').inputValue()).toBe('90');
    expect(await page.getByLabel('Weight of canary in everyone (%)').inputValue()).toBe('10');
    await page.getByLabel('candidate is a shadow in everyone').check();
    await page.getByLabel('Weight of candidate in everyone (%)').fill('50');
    const sum = page.locator(`[id="aud-${everyone}-sum"]`);
    expect(await sum.textContent()).toBe('Sum: 100 %');
    expect(await page.locator('.audience-block.attached').textContent()).toContain("candidate gets a copy of 50 % of everyone's requests");
    // A wrong sum: 85 + 10.
    await page.getByLabel('Weight of default in everyone (%)').fill('85');
    expect(await sum.textContent()).toBe('Sum: 95 %. The weights of everyone must total 100 % (5 % to give).');
    expect(await sum.getAttribute('class')).toContain('sum-bad');
    await blurFocus(page);
    await screenshotBothWidths(page, '20-deploy-wrong-sum');
    await page.getByRole('button', { name: 'Step 5: Review and confirm' }).click();
    await stepHeading(5).waitFor();
    expect(await confirmButton().isDisabled()).toBe(true);
    expect(await page.locator('#deploy-problems').textContent()).toContain('Step 3: everyone: the weights total 95 %; they must total 100 %.');
    await screenshotBothWidths(page, '20-deploy-wrong-sum-review');
    // Fixed, confirm is enabled.
    await page.locator('#deploy-problems').getByRole('button', { name: 'Step 3' }).click();
    await page.getByLabel('Weight of default in everyone (%)').fill('90');
    expect(await sum.textContent()).toBe('Sum: 100 %');
    await page.getByRole('button', { name: 'Step 5: Review and confirm' }).click();
    expect(await confirmButton().isEnabled()).toBe(true);
  });

  it("shows the host's 400 for a bad variation name beside the field, then deploys the shadow", async () => {
    // The dialog leaves the name rules to the host: its message comes back beside the field.
    await page.getByRole('button', { name: 'Step 2: Variation' }).click();
    await page.getByLabel('New variation name').fill('Candidate_1');
    await page.getByRole('button', { name: 'Step 5: Review and confirm' }).click();
    expect(await page.getByRole('rowheader', { name: 'Variation Candidate_1' }).count()).toBe(1);
    await confirmButton().click();
    await stepHeading(2).waitFor();
    const message = page.locator('#deploy-variation-error');
    await message.waitFor();
    expect(await message.textContent()).toBe('variation name "Candidate_1" contains "C"; only lowercase letters, digits, "-" and "." are allowed');
    const field = page.getByLabel('New variation name');
    expect(await field.getAttribute('aria-invalid')).toBe('true');
    expect(await field.getAttribute('aria-describedby')).toContain('deploy-variation-error');
    // The field has the focus, to be corrected at once.
    expect(await page.evaluate(() => (globalThis as unknown as { document: { activeElement: { id: string } } }).document.activeElement.id)).toBe('deploy-variation');
    await screenshotBothWidths(page, '20-deploy-bad-name');
    // Nothing was deployed.
    expect(Object.keys((await liveTraffic()).variations)).toEqual(['default', 'canary']);

    await field.fill('candidate');
    expect(await page.locator('#deploy-variation-error').count()).toBe(0);
    await page.getByRole('button', { name: 'Step 5: Review and confirm' }).click();
    const diff = page.getByRole('table', { name: 'What changes for fraud' });
    expect(await diff.locator('tbody tr').filter({ has: page.getByRole('rowheader', { name: 'everyone → candidate', exact: true }) }).textContent()).toBe(
      'everyone → candidate—copy of 50 % (shadow)added',
    );
    await confirmButton().click();
    await expect.poll(() => page.locator('.dd-progress').getAttribute('data-status'), { timeout: 20_000 }).toBe('LIVE');

    const traffic = await liveTraffic();
    expect(traffic.variations).toEqual({ default: builds[0], canary: builds[1], candidate: builds[2] });
    expect(traffic.audiences[0]!.routes).toEqual([
      { variation_name: 'default', weight: 90, shadow: false },
      { variation_name: 'canary', weight: 10, shadow: false },
      { variation_name: 'candidate', weight: 50, shadow: true },
    ]);
    expect(traffic.fallbackVariation).toBe('default');
  });

  it('says what to do next for a model without builds, and labels every control of every step', async () => {
    await page.goto(`${host.url}/console/#/deploy/churn`);
    await page.getByText('churn has no build yet.').waitFor();
    expect(await page.locator('.empty').textContent()).toContain('Upload an ONNX build');
    await screenshotBothWidths(page, '20-deploy-empty');

    await page.goto(`${host.url}/console/#/deploy`);
    await page.getByRole('heading', { name: 'Which model?' }).waitFor();
    expect(await unlabelledControls(page)).toEqual([]);
    await screenshotBothWidths(page, '20-deploy-choose-model');
    await page.getByRole('button', { name: 'Choose a build' }).click();
    await page.getByRole('heading', { name: 'Deploy fraud', level: 1 }).waitFor();
    for (const step of ['Build', 'Variation', 'Traffic Control', 'Fallback', 'Review and confirm']) {
      await page.getByRole('button', { name: new RegExp(`^Step \\d: ${step}`) }).click();
      if (step === 'Traffic Control') await page.getByLabel('Route beta-testers').check();
      expect(await unlabelledControls(page), step).toEqual([]);
    }
  });

  it('is reachable and usable with the keyboard: the nav, the steps, the weights, confirm', async () => {
    // A new step's heading takes the focus after it renders: tabbing starts from there, not from
    // wherever the focus was a moment before (the race that made this flaky under load).
    const stepFocused = async (n: number) => {
      await stepHeading(n).waitFor();
      await waitForFocus(page, '.step-panel h2', `Step ${n} of 5`);
    };
    await page.goto(`${host.url}/console/#/models`);
    await page.getByRole('heading', { name: 'Models', level: 1 }).waitFor();
    expect(await tabTo(page, 'nav a[href="#/deploy"]')).toBe(true);
    await page.keyboard.press('Enter');
    await page.getByRole('heading', { name: 'Which model?' }).waitFor();
    expect(await tabTo(page, '#deploy-model')).toBe(true);
    expect(await tabTo(page, 'form button[type="submit"]')).toBe(true);
    await page.keyboard.press('Enter');
    await stepHeading(1).waitFor();
    // The step buttons, then into the traffic step: a weight, a shadow toggle.
    expect(await tabTo(page, '.deploy-steps li:nth-child(3) button')).toBe(true);
    await page.keyboard.press('Enter');
    await stepFocused(3);
    expect(await tabTo(page, `[id="aud-${beta}"]`)).toBe(true);
    await page.keyboard.press('Space');
    expect(await page.getByLabel('Route beta-testers').isChecked()).toBe(true);
    expect(await tabTo(page, 'input[aria-label="Weight of default in beta-testers (%)"]')).toBe(true);
    await page.keyboard.press('Control+A');
    await page.keyboard.type('60');
    expect(await page.locator(`[id="aud-${beta}-sum"]`).textContent()).toBe('Sum: 60 %. The weights of beta-testers must total 100 % (40 % to give).');
    expect(await tabTo(page, 'input[aria-label="Weight of canary in beta-testers (%)"]')).toBe(true);
    await page.keyboard.press('Control+A');
    await page.keyboard.type('40');
    expect(await page.locator(`[id="aud-${beta}-sum"]`).textContent()).toBe('Sum: 100 %');
    expect(await tabTo(page, '.step-panel .step-actions button:last-child')).toBe(true);
    await page.keyboard.press('Enter');
    await stepFocused(4);
    expect(await tabTo(page, '.step-panel .step-actions button:last-child')).toBe(true);
    await page.keyboard.press('Enter');
    await stepFocused(5);
    // Replacing nothing and adding a variation with no name: confirm waits for the name.
    expect(await confirmButton().isDisabled()).toBe(true);
    expect(await page.locator('#deploy-problems').textContent()).toContain('Enter a name for the new variation.');
  });

  it('follows the dark theme', async () => {
    await page.emulateMedia({ colorScheme: 'dark' });
    try {
      await page.goto(`${host.url}/console/#/deploy/fraud`);
      await page.reload(); // a fresh dialog, not the draft the keyboard left
      await page.getByRole('button', { name: 'Step 3: Traffic Control' }).click();
      await page.getByLabel('Weight of default in everyone (%)').fill('80');
      await blurFocus(page);
      await screenshotBothWidths(page, '20-deploy-traffic-dark');
    } finally {
      await page.emulateMedia({ colorScheme: 'light' });
    }
  });
});

describe('the request log', () => {
  it('shows an empty log with the curl command to send, and an undeployed model with the way to deploy', async () => {
    await page.goto(`${host.url}/console/#/logs/fraud`);
    await page.getByText('No requests logged for fraud yet.').waitFor();
    expect(await page.locator('.empty pre').textContent()).toContain(`curl -s ${host.url}/v1/fraud/predict -H "Authorization: Bearer $TOKEN"`);
    expect(await page.locator('.empty pre').textContent()).toContain('{"columns": ["amount","age","country"], "data": [[1, 1, 1]]}');
    await screenshotBothWidths(page, '20-logs-empty');
    await page.getByLabel('Model', { exact: true }).selectOption('churn');
    await page.getByText('No requests logged for churn yet.').waitFor();
    expect(await page.getByRole('link', { name: 'deploy a build' }).getAttribute('href')).toBe('#/deploy/churn');
  });

  it('shows predicts sent with curl per variation, with the shadow pairs side by side', async () => {
    // 40 predicts with the real curl; everyone takes them (90 % default, 10 % canary) and about
    // half are copied to the shadow.
    for (let i = 1; i <= 40; i++) {
      const { stdout } = await run('curl', [
        '-s',
        '-w',
        '\n%{http_code}',
        `${host.url}/v1/fraud/predict`,
        '-H',
        `Authorization: Bearer ${token}`,
        '-H',
        'Content-Type: application/json',
        '-d',
        JSON.stringify({ columns: FEATURES, data: [[i, 40, 1]] }),
      ]);
      expect(stdout.split('\n').at(-1), stdout).toBe('200');
    }
    // The shadows run after the answers: wait until the log has their halves.
    let logs: LogEntry[] = [];
    await expect
      .poll(async () => {
        logs = (await ok<{ logs: LogEntry[] }>('GET', '/api/v1/models/fraud/logs?limit=1000')).logs;
        const copies = logs.filter((l) => l.shadow).length;
        const paired = logs.filter((l) => !l.shadow && (l as unknown as { request: string | null }).request !== null).length;
        return copies > 0 && copies === paired;
      })
      .toBe(true);
    const copies = logs.filter((l) => l.shadow);
    const primaries = logs.filter((l) => !l.shadow);
    expect(primaries.length).toBe(40);

    await page.goto(`${host.url}/console/#/models`);
    await page.getByRole('link', { name: 'Logs' }).click();
    await page.getByRole('heading', { name: 'Request log', level: 1 }).waitFor();
    await page.getByRole('heading', { name: `Shadow pairs (${copies.length})` }).waitFor();
    const table = page.getByRole('table', { name: 'Requests' });
    expect(await table.locator('tbody tr').count()).toBe(40 + copies.length);
    expect(await page.locator('.counts').textContent()).toContain(`candidate (shadow) ${copies.length}`);

    // The newest pair, as the API has it: the caller's answer and the shadow's, side by side.
    const copy = copies[0]!;
    const main = primaries.find((l) => l.request_id === copy.request_id)!;
    const card = page.locator(`[id="pair-${copy.request_id}"]`);
    expect(await card.locator('.pair-request pre').textContent()).toContain('"columns"');
    const mainSide = card.getByRole('region', { name: `Main answer: ${main.variation}` });
    const shadowSide = card.getByRole('region', { name: 'Shadow answer: candidate' });
    expect(JSON.parse((await mainSide.locator('pre').textContent())!)).toEqual(JSON.parse(main.response!));
    expect(JSON.parse((await shadowSide.locator('pre').textContent())!)).toEqual(JSON.parse(copy.response!));
    // The builds differ by their bias, so the answers differ.
    expect(await card.locator('.pill').textContent()).toBe('answers differ');
    // Both sides are on one row at 1280 px, one above the other at 390.
    const [m, s] = [await mainSide.boundingBox(), await shadowSide.boundingBox()];
    expect(Math.abs(m!.y - s!.y)).toBeLessThan(2);
    expect(s!.x).toBeGreaterThan(m!.x + m!.width - 1);
    await screenshotBothWidths(page, '20-logs-pairs');
    await page.setViewportSize({ width: 390, height: 844 });
    const [m2, s2] = [await mainSide.boundingBox(), await shadowSide.boundingBox()];
    expect(s2!.y).toBeGreaterThan(m2!.y + m2!.height - 1);
    await page.setViewportSize(WIDE);

    // A request id of the table jumps to its pair.
    await table.getByRole('link', { name: `${copy.request_id} (pair)` }).first().click();
    await expect
      .poll(() => page.evaluate(() => (globalThis as unknown as { document: { activeElement: { id: string } } }).document.activeElement.id))
      .toBe(`pair-${copy.request_id}`);

    // Per variation: the shadow's own log, each copy still beside the answer the caller got.
    await page.getByLabel('Variation', { exact: true }).selectOption('candidate');
    await expect.poll(() => page.url()).toMatch(/#\/logs\/fraud\/candidate$/);
    await expect.poll(() => table.locator('tbody tr').count()).toBe(copies.length);
    expect(new Set(await table.locator('tbody td[data-label="Variation"]').allTextContents())).toEqual(new Set(['candidateshadow copy']));
    await page.getByRole('heading', { name: `Shadow pairs (${copies.length})` }).waitFor();
    expect(await card.getByRole('region', { name: `Main answer: ${main.variation}` }).count()).toBe(1);
    await screenshotBothWidths(page, '20-logs-variation');

    // The canary's requests only: no shadow copies among them, but its paired requests still show.
    await page.getByLabel('Variation', { exact: true }).selectOption('canary');
    const canary = primaries.filter((l) => l.variation === 'canary').length;
    await expect.poll(() => page.url()).toMatch(/#\/logs\/fraud\/canary$/);
    if (canary > 0) await expect.poll(() => table.locator('tbody tr').count()).toBe(canary);
    else await page.getByText('No requests logged for fraud / canary yet.').waitFor();

    expect(await unlabelledControls(page)).toEqual([]);
  });

  it('follows the dark theme', async () => {
    await page.emulateMedia({ colorScheme: 'dark' });
    try {
      await page.goto(`${host.url}/console/#/logs/fraud`);
      await page.reload();
      await page.locator('.pair').first().waitFor();
      await blurFocus(page);
      await screenshotBothWidths(page, '20-logs-dark');
    } finally {
      await page.emulateMedia({ colorScheme: 'light' });
    }
  });

  it('logged no error in the page', () => {
    expect(pageErrors).toEqual([]);
  });
});
