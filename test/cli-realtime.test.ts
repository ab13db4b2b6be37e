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
    const metrics = await ok(['metrics', 'fraud']);
    expect(metrics.stdout).toMatch(/^VARIATION\s+RPM \(5M\)/);
    expect(metrics.stdout).toMatch(/\ndefault\s+\d+\.\d\s+\d+\s+0\s/);
  });

  it('rolls back by undeploying the canary', async () => {
    const res = await ok(['models', 'undeploy', '--model-id', 'fraud', '--variation-name', 'canary', '--wait']);
    expect(res.stderr).toContain('LIVE');
    expect((await predict('fraud')).headers.get('x-variation')).toBe('default');
    const get = JSON.parse((await ok(['models', 'get', 'fraud'])).stdout) as { live_deployment: { action: string; traffic: { variations: Record<string, string> } } };
    expect(get.live_deployment.action).toBe('undeploy');
    expect(Object.keys(get.live_deployment.traffic.variations)).toEqual(['default']);
    // The remaining routes still use the audience, so it cannot be deleted.
    const del = await cli(['audiences', 'delete', audience]);
    expect(del.code).toBe(1);
    expect(del.stderr).toMatch(/is used by a deployment.*\(HTTP 409\)/);
  });
});

describe('the interactive deployment dialog', () => {
  it('walks the five steps from stdin, re-asking on bad answers, and deploys', async () => {
    await ok(['models', 'create', '--model-id', 'dialog']);
    const b1 = (await ok(['models', 'build', '--model-id', 'dialog', '--from-file', path.join(work, 'v1.onnx'), '--feature-names', FEATURES.join(',')])).stdout.trim();
    await ok(['models', 'deploy', 'realtime', '--model-id', 'dialog', '--build-id', b1, '--wait']);
    await ok(['models', 'build', '--model-id', 'dialog', '--from-file', path.join(work, 'v2.onnx'), '--feature-names', FEATURES.join(',')]);
    const aud = file('dialog-audience.yaml', 'spec:\n  audiences:\n    - name: dialog-all\n');
    const audienceId = (await ok(['audiences', 'create', '--from-file', aud])).stdout.trim();
    const audiences = JSON.parse((await ok(['audiences', 'list', '--json'])).stdout) as Array<{ id: string }>;
    const audienceNumber = audiences.findIndex((a) => a.id === audienceId) + 1;

    const answers = [
      '9', // step 1: out of range, asked again
      '2', // the second build
      'Canary!', // step 2: bad name, asked again
      'canary',
      String(audienceNumber), // step 3: attach the audience
      '120', // default's share: out of range
      '80',
      '25', // canary must take the remaining 20
      '20',
      '', // no shadow
      '', // no more audiences
      '1', // step 4: fallback default
      'y', // step 5: confirm
    ];
    const res = await cli(['models', 'deploy', 'realtime', '--interactive', '--model-id', 'dialog', '--wait'], answers.join('\n') + '\n');
    expect(res.code, res.stderr).toBe(0);
    expect(res.stderr).toContain('enter a number from 1 to 2');
    expect(res.stderr).toContain('"Canary!" contains "C"');
    expect(res.stderr).toContain('enter a percentage from 0 to 100');
    expect(res.stderr).toContain('the weights must total 100: enter 20');
    expect(res.stderr).toMatch(/variation_name: canary[\s\S]*weight: 80[\s\S]*weight: 20/);
    expect(res.stdout).toMatch(/^dep_[0-9a-f]{16}\n$/);
    const get = JSON.parse((await ok(['models', 'get', 'dialog'])).stdout) as { live_deployment: { traffic: { audiences: Array<{ routes: Array<{ variation_name: string; weight: number }> }> } } };
    expect(get.live_deployment.traffic.audiences[0]!.routes.map((r) => [r.variation_name, r.weight])).toEqual([['default', 80], ['canary', 20]]);
  });

  it('stops without deploying when not confirmed', async () => {
    const res = await cli(['models', 'deploy', 'realtime', '--interactive', '--model-id', 'dialog'], ['1', 'default', '', '1', 'n'].join('\n') + '\n');
    expect(res.code, res.stderr).toBe(0);
    expect(res.stdout).toBe('');
    expect(res.stderr).toContain('not deployed');
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
