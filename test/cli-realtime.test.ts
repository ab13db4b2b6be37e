// The realtime commands of the real `platform` binary against a real host process: the first
// build, a canary from a deployment file, a shadow, logs, metrics, a rollback, the interactive
// dialog, and a restart that brings the live deployment back.
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli } from './helpers/cli.js';
import { spawnHost, type ChildHost } from './helpers/child-host.js';
import { linearModel } from './helpers/models.js';
import { tempDir } from './helpers/paths.js';

const FEATURES = ['a', 'b', 'c'];
let host: ChildHost;
let env: Record<string, string>;
let work: string;

beforeAll(async () => {
  host = await spawnHost();
  const key = (await runCli(['keys', 'create'], { DATA_DIR: host.dataDir })).stdout.trim();
  env = { PLATFORM_URL: host.url, PLATFORM_API_KEY: key, PLATFORM_CACHE_DIR: tempDir() };
  work = tempDir();
  fs.writeFileSync(path.join(work, 'v1.onnx'), linearModel(FEATURES, 0));
  fs.writeFileSync(path.join(work, 'v2.onnx'), linearModel(FEATURES, 100));
});
afterAll(async () => {
  host.proc.kill('SIGTERM');
  await host.exited;
});

const cli = async (args: string[], input?: string) => {
  const res = await runCli(args, env, input);
  return res;
};
const ok = async (args: string[], input?: string) => {
  const res = await cli(args, input);
  expect(res.code, `${args.join(' ')}\n${res.stderr}`).toBe(0);
  return res;
};
const file = (name: string, text: string) => {
  const p = path.join(work, name);
  fs.writeFileSync(p, text);
  return p;
};

async function predict(modelId: string, headers: Record<string, string> = {}) {
  const exchange = await fetch(`${host.url}/api/v1/authentication/platform-api-key`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ platformApiKey: env.PLATFORM_API_KEY }),
  });
  const { accessToken } = (await exchange.json()) as { accessToken: string };
  return fetch(`${host.url}/v1/${modelId}/predict`, {
    method: 'POST',
    headers: { authorization: `Bearer ${accessToken}`, 'content-type': 'application/json', ...headers },
    body: JSON.stringify({ columns: FEATURES, index: [0], data: [[1, 2, 3]] }),
  });
}

/** The number of shadow copies logged for `modelId`, once no copy is still running. */
async function settledShadowCount(modelId: string): Promise<number> {
  let last = -1;
  for (;;) {
    const count = (JSON.parse((await ok(['models', 'logs', modelId, '--shadow', '--json', '--limit', '1000'])).stdout) as unknown[]).length;
    if (count === last) return count;
    last = count;
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}

describe('the first build, a canary with a shadow, and a rollback', () => {
  let v1: string;
  let v2: string;
  let audience: string;

  it('creates the model, uploads a build (id alone on stdout) and deploys it with --wait', async () => {
    expect((await ok(['models', 'create', '--model-id', 'fraud', '--description', 'fraud scores'])).stdout).toBe('fraud\n');
    const build = await ok(['models', 'build', '--model-id', 'fraud', '--from-file', path.join(work, 'v1.onnx'), '--feature-names', FEATURES.join(',')]);
    expect(build.stdout).toMatch(/^bld_[0-9a-f]{16}\n$/);
    v1 = build.stdout.trim();
    const deploy = await ok(['models', 'deploy', 'realtime', '--model-id', 'fraud', '--build-id', v1, '--wait']);
    expect(deploy.stdout).toMatch(/^dep_[0-9a-f]{16}\n$/);
    // Not a terminal: plain progress lines, ending LIVE.
    expect(deploy.stderr).toMatch(/: LIVE\n$/);
    const res = await predict('fraud');
    expect(res.status).toBe(200);
    expect(res.headers.get('x-variation')).toBe('default');
  });

  it('refuses a bad build with the server message and exit 1', async () => {
    const bad = file('bad.onnx', 'not a model at all');
    const res = await cli(['models', 'build', '--model-id', 'fraud', '--from-file', bad]);
    expect(res.code).toBe(1);
    expect(res.stderr).toMatch(/not an ONNX model.*\(HTTP 400\)/);
  });

  it('deploys a canary and a shadow from a deployment file, --variation-name overriding the file', async () => {
    const aud = file('audience.yaml', 'api_version: v1\nspec:\n  audiences:\n    - name: everyone\n      description: all traffic\n');
    audience = (await ok(['audiences', 'create', '--from-file', aud])).stdout.trim();
    expect(audience).toMatch(/^aud_[0-9a-f]{16}$/);
    expect((await ok(['audiences', 'list'])).stdout).toContain(audience);
    v2 = (await ok(['models', 'build', '--model-id', 'fraud', '--from-file', path.join(work, 'v2.onnx'), '--feature-names', FEATURES.join(',')])).stdout.trim();
    const deployFile = file(
      'deploy.yaml',
      `model_id: fraud
build_id: ${v2}
realtime:
  variation_name: this-name-is-overridden
  audiences:
    - id: ${audience}
      routes:
        - variation_name: default
          weight: 100
          shadow: false
        - variation_name: canary
          weight: 10
          shadow: true
      fallback_variation: default
`,
    );
    const res = await ok(['models', 'deploy', 'realtime', '--from-file', deployFile, '--variation-name', 'canary', '--wait']);
    expect(res.stderr).toContain('(fraud/canary): LIVE');
    const direct = await fetch(`${host.url}/v1/fraud/canary/predict`, { method: 'POST' });
    expect(direct.status).toBe(401);
    for (let i = 0; i < 30; i++) expect((await predict('fraud')).headers.get('x-variation')).toBe('default');
  });

  it('models get shows the live traffic as tables, and the exact JSON with --json', async () => {
    const json = JSON.parse((await ok(['models', 'get', 'fraud', '--json'])).stdout) as {
      model: { model_id: string; description: string };
      live_deployment: { deployment_id: string; status: string; traffic: { variations: Record<string, string> } };
      deployment_in_progress: null;
    };
    expect(json.model).toMatchObject({ model_id: 'fraud', description: 'fraud scores' });
    expect(json.live_deployment.status).toBe('LIVE');
    expect(json.live_deployment.traffic.variations).toEqual({ default: v1, canary: v2 });
    expect(json.deployment_in_progress).toBeNull();

    const table = (await ok(['models', 'get', 'fraud'])).stdout;
    expect(table).not.toMatch(/undefined|null|\[object/);
    const [fields, variations, routes] = table.split('\n\n');
    expect(fields).toMatch(/^model:\s+fraud\nkind:\s+realtime\nproject:\s+default\ndescription:\s+fraud scores\ncreated:\s+\d{4}-\d\d-\d\dT/);
    expect(fields).toMatch(new RegExp(`\\nlive:\\s+${json.live_deployment.deployment_id} \\(deploy of canary, LIVE since \\S+Z\\)\\n`));
    expect(fields).toMatch(/\nfallback:\s+default$/);
    expect(variations).toMatch(new RegExp(`^VARIATION\\s+BUILD\\s+INSTANCE\\s+BATCHING\\ndefault\\s+${v1}\\s+cpu\\s+default\\ncanary\\s+${v2}\\s+cpu\\s+default$`));
    expect(routes).toMatch(new RegExp(`^AUDIENCE\\s+NAME\\s+VARIATION\\s+WEIGHT\\s+ROUTE\\n${audience}\\s+everyone\\s+default\\s+100 %\\s+routed\\n\\s+canary\\s+10 %\\s+shadow copy\\n$`));
    // The columns line up: every row's VARIATION starts where its header does.
    const lines = routes!.trimEnd().split('\n');
    for (const line of lines.slice(1)) expect(line.indexOf(line.includes('default') ? 'default' : 'canary')).toBe(lines[0]!.indexOf('VARIATION'));
  });

  it('reports a YAML syntax error with its line and column, and a broken rule with exit 1', async () => {
    const broken = file('broken.yaml', 'model_id: fraud\nbuild_id: [unclosed\nrealtime: {}\n');
    const res = await cli(['models', 'deploy', 'realtime', '--from-file', broken]);
    expect(res.code).toBe(1);
    expect(res.stderr).toMatch(/broken\.yaml: YAML syntax error at line \d+, column \d+/);
    const weights = file('weights.yaml', `model_id: fraud\nbuild_id: ${v2}\nrealtime:\n  variation_name: canary\n  audiences:\n    - id: ${audience}\n      routes:\n        - {variation_name: default, weight: 60}\n        - {variation_name: canary, weight: 30}\n      fallback_variation: default\n`);
    const refused = await cli(['models', 'deploy', 'realtime', '--from-file', weights]);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toMatch(/total 90; they must total exactly 100 \(HTTP 400\)/);
  });

  it('shows logs (shadow copies with --shadow) and per-variation metrics', async () => {
    for (let i = 0; i < 40; i++) await predict('fraud');
    const logs = await ok(['models', 'logs', 'fraud', '--json', '--limit', '500']);
    const entries = JSON.parse(logs.stdout) as Array<{ variation: string; shadow: boolean; status: number }>;
    expect(entries.filter((e) => !e.shadow).length).toBeGreaterThanOrEqual(71);
    const shadow = JSON.parse((await ok(['models', 'logs', 'fraud', '--shadow', '--json'])).stdout) as Array<{ variation: string; shadow: boolean; request: string }>;
    expect(shadow.length).toBeGreaterThan(0);
    expect(shadow.every((e) => e.shadow && e.variation === 'canary')).toBe(true);
    expect(JSON.parse(shadow[0]!.request)).toMatchObject({ columns: FEATURES });
    const table = await ok(['models', 'logs', 'fraud', '--variation', 'default', '--limit', '3']);
    expect(table.stdout.split('\n')[0]).toMatch(/^TIME\s+VARIATION\s+AUDIENCE\s+STATUS\s+LATENCY MS/);
    // The shadow's copies are counted on a row of their own, apart from the routed requests.
    const shadowCount = await settledShadowCount('fraud');
    const json = JSON.parse((await ok(['metrics', 'fraud', '--json'])).stdout) as {
      variations: Array<{ variation: string; shadow: boolean; requests_5m: number; errors_5m: number; latency_ms: { mean: number | null; p50: number | null; p99: number | null } }>;
    };
    expect(json.variations.map((v) => [v.variation, v.shadow])).toEqual([['default', false], ['canary', true]]);
    const [routed, copies] = json.variations;
    expect(routed!.requests_5m).toBe(entries.filter((e) => !e.shadow).length);
    expect(copies!.requests_5m).toBe(shadowCount);
    expect(copies!.errors_5m).toBe(0);
    expect(copies!.latency_ms.p99).toBeGreaterThanOrEqual(copies!.latency_ms.p50!);
    const metrics = await ok(['metrics', 'fraud']);
    expect(metrics.stdout).toMatch(/^VARIATION\s+TRAFFIC\s+RPM \(5M\)\s+REQUESTS\s+ERRORS\s+MEAN MS\s+P50 MS\s+P99 MS\n/);
    expect(metrics.stdout).toMatch(new RegExp(`\ndefault\\s+routed\\s+\\d+\\.\\d\\s+${routed!.requests_5m}\\s+0\\s+\\d`));
    expect(metrics.stdout).toMatch(new RegExp(`\ncanary\\s+shadow\\s+\\d+\\.\\d\\s+${shadowCount}\\s+0\\s+\\d`));
  });

  it('rolls back by undeploying the canary', async () => {
    const res = await ok(['models', 'undeploy', '--model-id', 'fraud', '--variation-name', 'canary', '--wait']);
    expect(res.stderr).toContain('LIVE');
    expect((await predict('fraud')).headers.get('x-variation')).toBe('default');
    const get = JSON.parse((await ok(['models', 'get', 'fraud', '--json'])).stdout) as { live_deployment: { action: string; traffic: { variations: Record<string, string> } } };
    expect(get.live_deployment.action).toBe('undeploy');
    expect(Object.keys(get.live_deployment.traffic.variations)).toEqual(['default']);
    // The remaining routes still use the audience, so it cannot be deleted.
    const del = await cli(['audiences', 'delete', audience]);
    expect(del.code).toBe(1);
    expect(del.stderr).toMatch(/is used by a deployment.*\(HTTP 409\)/);
  });
});

describe('the interactive deployment dialog', () => {
  let b1: string;
  let b2: string;
  let audienceNumber: number;
  type Live = { live_deployment: { deployment_id: string; build_id: string; traffic: { audiences: Array<{ routes: Array<{ variation_name: string; weight: number; shadow: boolean }> }>; fallbackVariation: string } } };
  const live = async () => JSON.parse((await ok(['models', 'get', 'dialog', '--json'])).stdout) as Live;
  const dialog = (answers: string[], wait = true) => cli(['models', 'deploy', 'realtime', '--interactive', '--model-id', 'dialog', ...(wait ? ['--wait'] : [])], answers.join('\n') + '\n');

  beforeAll(async () => {
    await ok(['models', 'create', '--model-id', 'dialog']);
    b1 = (await ok(['models', 'build', '--model-id', 'dialog', '--from-file', path.join(work, 'v1.onnx'), '--feature-names', FEATURES.join(',')])).stdout.trim();
    await ok(['models', 'deploy', 'realtime', '--model-id', 'dialog', '--build-id', b1, '--wait']);
    b2 = (await ok(['models', 'build', '--model-id', 'dialog', '--from-file', path.join(work, 'v2.onnx'), '--feature-names', FEATURES.join(',')])).stdout.trim();
    const aud = file('dialog-audience.yaml', 'spec:\n  audiences:\n    - name: dialog-all\n');
    const audienceId = (await ok(['audiences', 'create', '--from-file', aud])).stdout.trim();
    const audiences = JSON.parse((await ok(['audiences', 'list', '--json'])).stdout) as Array<{ id: string }>;
    audienceNumber = audiences.findIndex((a) => a.id === audienceId) + 1;
  });

  it('walks the five steps from stdin, explaining each mistake and asking the same question again', async () => {
    const answers = [
      'bld_0000000000000000', // step 1: an unknown build
      '9', // out of range
      b2, // a build may be given by its id
      'Canary!', // step 2: a bad name
      'canary',
      '', // step 3: a new variation next to "default" needs an audience
      'aud_nope', // an unknown audience
      String(audienceNumber),
      'lots', // default's share: not a number
      '120', // out of range
      '80',
      '25', // canary must take the remaining 20
      '20 %',
      '', // no more audiences (no shadow question: both variations take live traffic)
      'nope', // step 4: an unknown variation
      'default',
      'maybe', // step 5: neither yes nor no
      'y',
    ];
    const res = await dialog(answers);
    expect(res.code, res.stderr).toBe(0);
    for (const explained of [
      'there is no build "bld_0000000000000000": enter a number from 1 to 2, or an id from the list',
      'there is no choice 9: enter a number from 1 to 2',
      '"Canary!" contains "C"',
      '"canary" is new next to default: attach at least one audience to route traffic to it',
      'there is no audience "aud_nope"',
      '"lots" is not a number: enter a percentage from 0 to 100',
      '120 is more than 100: enter a percentage from 0 to 100',
      'the weights must total 100: enter 20',
      'there is no variation "nope"',
      'answer y or n',
    ]) {
      expect(res.stderr).toContain(explained);
    }
    expect(res.stderr).not.toMatch(/^\s+at /m);
    expect(res.stderr).toMatch(new RegExp(`build_id: ${b2}[\\s\\S]*variation_name: canary[\\s\\S]*weight: 80[\\s\\S]*weight: 20[\\s\\S]*fallback_variation: default`));
    expect(res.stdout).toMatch(/^dep_[0-9a-f]{16}\n$/);
    const traffic = (await live()).live_deployment.traffic;
    expect(traffic.audiences[0]!.routes.map((r) => [r.variation_name, r.weight, r.shadow])).toEqual([['default', 80, false], ['canary', 20, false]]);
    expect(traffic.fallbackVariation).toBe('default');
  });

  it('sets up a shadow, refusing a variation that takes live traffic', async () => {
    const answers = [
      '1',
      'mirror', // a third variation, of build 1
      String(audienceNumber),
      '100', // default
      '0', // canary
      '', // mirror: Enter accepts the remaining 0
      'default', // a variation with live traffic cannot be the shadow
      'ghost', // an unknown variation
      'mirror',
      '5x', // the copied share: not a number
      '50',
      '', // no more audiences
      '1', // fallback: default
      'yes',
    ];
    const res = await dialog(answers);
    expect(res.code, res.stderr).toBe(0);
    expect(res.stderr).toContain('"default" takes live traffic in "dialog-all", so it cannot be its shadow: enter one of canary, mirror, or nothing');
    expect(res.stderr).toContain('there is no variation "ghost": enter one of canary, mirror, or nothing');
    expect(res.stderr).toContain('"5x" is not a number: enter a percentage from 0 to 100');
    const traffic = (await live()).live_deployment.traffic;
    expect(traffic.audiences[0]!.routes.map((r) => [r.variation_name, r.weight, r.shadow])).toEqual([['default', 100, false], ['canary', 0, false], ['mirror', 50, true]]);
  });

  it('ends cleanly, deploying nothing, when the input ends (Ctrl-D)', async () => {
    const before = (await live()).live_deployment.deployment_id;
    const res = await dialog(['1', 'default'], false);
    expect(res.code).toBe(1);
    expect(res.stdout).toBe('');
    expect(res.stderr).toMatch(/\nplatform: input ended before the dialog was complete; nothing was deployed\n$/);
    expect(res.stderr).not.toMatch(/^\s+at /m);
    expect((await live()).live_deployment.deployment_id).toBe(before);
  });

  it('stops without deploying when not confirmed', async () => {
    const before = (await live()).live_deployment.deployment_id;
    // Replacing a variation's build without attaching audiences keeps the live routes.
    const res = await dialog(['1', 'default', '', 'n'], false);
    expect(res.code, res.stderr).toBe(0);
    expect(res.stdout).toBe('');
    expect(res.stderr).toContain('the live routes stay as they are; the fallback stays "default"');
    expect(res.stderr).toMatch(/not deployed\n$/);
    expect((await live()).live_deployment.deployment_id).toBe(before);
  });
});

describe('a restart', () => {
  it('brings every live deployment back before serving', async () => {
    host.proc.kill('SIGTERM');
    expect(await host.exited).toBe(0);
    host = await spawnHost({ DATA_DIR: host.dataDir });
    env.PLATFORM_URL = host.url;
    const res = await predict('fraud');
    expect(res.status).toBe(200);
    expect(res.headers.get('x-variation')).toBe('default');
    const dialog = await predict('dialog');
    expect(dialog.status).toBe(200);
  });
});
