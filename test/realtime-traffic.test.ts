// Traffic control end to end on the real host: audiences, the deployment rules, weighted and
// header-selected routing (chi-square), shadows, replacement under load, rollback, logs, metrics.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { apiClient, waitForDeployment, type Api } from './helpers/api.js';
import { listen, startInProcessHost, tokenFor, type TestHost } from './helpers/in-process-host.js';
import { heavyModel, linearModel } from './helpers/models.js';

const FEATURES = ['a', 'b', 'c'];
const Q = `?feature_names=${FEATURES.join(',')}`;
const ROW = { columns: FEATURES, index: [0], data: [[0.5, -1, 2]] };

let host: TestHost;
let api: Api;

async function upload(modelId: string, bytes: Uint8Array, query = Q): Promise<string> {
  const res = await api<{ build_id: string }>('POST', `/api/v1/models/${modelId}/builds${query}`, bytes);
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  return res.body.build_id;
}

async function deploy(modelId: string, body: Record<string, unknown>): Promise<string> {
  const res = await api<{ deployment_id: string }>('POST', `/api/v1/models/${modelId}/deployments`, body);
  expect(res.status, JSON.stringify(res.body)).toBe(202);
  const done = await waitForDeployment(api, res.body.deployment_id);
  expect(done.status, done.reason ?? '').toBe('LIVE');
  return res.body.deployment_id;
}

async function createAudience(name: string, conditions: unknown): Promise<string> {
  const res = await api<{ audiences: Array<{ id: string }> }>('POST', '/api/v1/audiences', { api_version: 'v1', spec: { audiences: [{ name, conditions }] } });
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  return res.body.audiences[0]!.id;
}

const predict = (modelId: string, headers: Record<string, string> = {}) => api<Array<{ y: number }>>('POST', `/v1/${modelId}/predict`, ROW, headers);

/** Pearson's chi-square statistic of observed counts against expected proportions. */
function chiSquare(observed: number[], proportions: number[]): number {
  const n = observed.reduce((a, b) => a + b, 0);
  return observed.reduce((sum, o, i) => sum + (o - n * proportions[i]!) ** 2 / (n * proportions[i]!), 0);
}
// Critical values of chi-square at p = 0.001.
const CHI2_P001 = { 1: 10.828, 2: 13.816 } as const;

beforeAll(async () => {
  host = await listen(await startInProcessHost({ PREDICT_MAX_WAIT_MICROS: '0' }));
  api = apiClient(host.url, (await tokenFor(host)).token);
});
afterAll(async () => {
  await host.close();
});

describe('audiences', () => {
  it('are created from the file form, listed, updated, and deleted', async () => {
    const res = await api<{ audiences: Array<{ id: string; name: string }> }>('POST', '/api/v1/audiences', {
      api_version: 'v1',
      spec: {
        audiences: [
          {
            name: 'new-york-young',
            description: 'Young users in New York',
            conditions: {
              unary: [{ key: 'location', operator: 'UNARY_OPERATOR_TYPE_EXACT_MATCH', operand: 'new-york' }],
              binary: [{ key: 'age', operator: 'BINARY_OPERATOR_TYPE_RANGE_MATCH', first_operand: 18, second_operand: 30 }],
            },
          },
          { name: 'everyone' },
        ],
      },
    });
    expect(res.status).toBe(201);
    expect(res.body.audiences.map((a) => a.name)).toEqual(['new-york-young', 'everyone']);
    const id = res.body.audiences[1]!.id;
    const list = await api<{ audiences: Array<{ id: string }> }>('GET', '/api/v1/audiences');
    expect(list.body.audiences.map((a) => a.id)).toContain(id);
    const updated = await api<{ name: string; conditions: { unary: unknown[] } }>('PUT', `/api/v1/audiences/${id}`, {
      spec: { audiences: [{ name: 'everyone-with-a-header', conditions: { unary: [{ key: 'X-Any', operator: 'UNARY_OPERATOR_TYPE_PRESENT_MATCH' }] } }] },
    });
    expect(updated.status).toBe(200);
    expect(updated.body.conditions.unary).toEqual([{ key: 'x-any', operator: 'UNARY_OPERATOR_TYPE_PRESENT_MATCH' }]);
    expect((await api('DELETE', `/api/v1/audiences/${id}`)).status).toBe(204);
    expect((await api('GET', `/api/v1/audiences/${id}`)).status).toBe(404);
  });

  it('refuse bad conditions with the field named, creating none of the file', async () => {
    const before = (await api<{ audiences: unknown[] }>('GET', '/api/v1/audiences')).body.audiences.length;
    const res = await api<{ error: { param: string } }>('POST', '/api/v1/audiences', {
      spec: { audiences: [{ name: 'fine' }, { name: 'broken', conditions: { unary: [{ key: 'a', operator: 'UNARY_OPERATOR_TYPE_SAFE_REGEX_MATCH', operand: '[' }] } }] },
    });
    expect(res.status).toBe(400);
    expect(res.body.error.param).toBe('spec.audiences[1].conditions.unary[0].operand');
    expect((await api<{ audiences: unknown[] }>('GET', '/api/v1/audiences')).body.audiences).toHaveLength(before);
  });
});

describe('the deployment rules', () => {
  let canaryBuild: string;
  let everyone: string;

  beforeAll(async () => {
    expect((await api('POST', '/api/v1/models', { model_id: 'rules' })).status).toBe(201);
    await deploy('rules', { build_id: await upload('rules', linearModel(FEATURES, 0)) });
    canaryBuild = await upload('rules', linearModel(FEATURES, 100));
    everyone = await createAudience('rules-everyone', undefined);
  });

  const routes = (canary: number, extra: object[] = []) => [
    { id: everyone, routes: [{ variation_name: 'default', weight: 100 - canary, shadow: false }, { variation_name: 'canary', weight: canary, shadow: false }, ...extra], fallback_variation: 'default' },
  ];

  const refuse = async (body: Record<string, unknown>, message: RegExp, param?: string) => {
    const deploymentsBefore = (await api<{ deployments: unknown[] }>('GET', '/api/v1/models/rules/deployments')).body.deployments.length;
    const res = await api<{ error: { code: string; message: string; param: string } }>('POST', '/api/v1/models/rules/deployments', { build_id: canaryBuild, variation_name: 'canary', ...body });
    expect(res.status, JSON.stringify(res.body)).toBe(400);
    expect(res.body.error.message).toMatch(message);
    if (param) expect(res.body.error.param).toBe(param);
    // Atomic: nothing was recorded and the live traffic is unchanged.
    expect((await api<{ deployments: unknown[] }>('GET', '/api/v1/models/rules/deployments')).body.deployments).toHaveLength(deploymentsBefore);
    expect((await predict('rules')).headers.get('x-variation')).toBe('default');
  };

  it('the variation name format', async () => {
    await refuse({ variation_name: 'Canary', audiences: routes(10) }, /contains "C"/, 'variation_name');
    await refuse({ variation_name: 'c'.repeat(37), audiences: routes(10) }, /at most 36/, 'variation_name');
    await refuse({ variation_name: '.canary', audiences: routes(10) }, /must start/, 'variation_name');
  });
  it('a new variation needs a file, and the file lists every existing variation', async () => {
    await refuse({}, /needs a deployment file/);
    await refuse({ audiences: [{ id: everyone, routes: [{ variation_name: 'canary', weight: 100, shadow: false }], fallback_variation: 'canary' }] }, /does not list the existing variation "default"/);
  });
  it('non-shadow weights total exactly 100, each within 0..100', async () => {
    await refuse({ audiences: [{ id: everyone, routes: [{ variation_name: 'default', weight: 80 }, { variation_name: 'canary', weight: 10 }], fallback_variation: 'default' }] }, /total 90; they must total exactly 100/, 'realtime.audiences[0].routes');
    await refuse({ audiences: [{ id: everyone, routes: [{ variation_name: 'default', weight: 110 }, { variation_name: 'canary', weight: -10 }], fallback_variation: 'default' }] }, /weight must be a number from 0 to 100/);
  });
  it('at most one shadow per audience', async () => {
    const shadows = [{ variation_name: 'canary', weight: 5, shadow: true }];
    await refuse(
      { audiences: [{ id: everyone, routes: [{ variation_name: 'default', weight: 100 }, ...shadows, { variation_name: 'canary', weight: 5, shadow: true }], fallback_variation: 'default' }] },
      /has two routes|at most one/,
    );
  });
  it('a fallback that exists or is the new variation', async () => {
    await refuse({ audiences: [{ ...routes(10)[0]!, fallback_variation: 'ghost' }] }, /"ghost" is neither the new variation nor an existing one/, 'realtime.audiences[0].fallback_variation');
    const { fallback_variation: _, ...noFallback } = routes(10)[0]!;
    await refuse({ audiences: [noFallback] }, /no fallback_variation is named/);
  });
  it('every audience id known, every route variation known', async () => {
    await refuse({ audiences: [{ ...routes(10)[0]!, id: 'aud_0000000000000000' }] }, /audience "aud_0000000000000000" does not exist/, 'realtime.audiences[0].id');
    await refuse(
      { audiences: [{ id: everyone, routes: [{ variation_name: 'default', weight: 90 }, { variation_name: 'ghost', weight: 10 }], fallback_variation: 'default' }] },
      /variation "ghost" does not exist/,
      'realtime.audiences[0].routes[1].variation_name',
    );
  });
  it('deleting an audience a deployment uses is refused', async () => {
    await deploy('rules', { build_id: canaryBuild, variation_name: 'canary', audiences: routes(10) });
    const res = await api<{ error: { code: string } }>('DELETE', `/api/v1/audiences/${everyone}`);
    expect(res.status).toBe(409);
    expect(res.body.error.code).toBe('conflict');
  });
});

describe('routing', () => {
  let ny: string;

  beforeAll(async () => {
    expect((await api('POST', '/api/v1/models', { model_id: 'split' })).status).toBe(201);
    await deploy('split', { build_id: await upload('split', linearModel(FEATURES, 0)) });
    ny = await createAudience('split-ny', { unary: [{ key: 'X-City', operator: 'UNARY_OPERATOR_TYPE_EXACT_MATCH', operand: 'new-york' }] });
    const all = await createAudience('split-all', undefined);
    await deploy('split', {
      build_id: await upload('split', linearModel(FEATURES, 100)),
      variation_name: 'canary',
      audiences: [
        { id: ny, routes: [{ variation_name: 'default', weight: 50 }, { variation_name: 'canary', weight: 50 }], fallback_variation: 'default' },
        { id: all, routes: [{ variation_name: 'default', weight: 90, shadow: false }, { variation_name: 'canary', weight: 10, shadow: false }] },
      ],
    });
  });

  async function tally(n: number, headers: Record<string, string>): Promise<Record<string, number>> {
    const counts: Record<string, number> = {};
    for (let sent = 0; sent < n; sent += 25) {
      const answers = await Promise.all(Array.from({ length: 25 }, () => predict('split', headers)));
      for (const res of answers) {
        expect(res.status).toBe(200);
        const v = res.headers.get('x-variation')!;
        // The answer comes from the build the header names: bias 0 or 100.
        expect(res.body[0]!.y > 50).toBe(v === 'canary');
        counts[v] = (counts[v] ?? 0) + 1;
      }
    }
    return counts;
  }

  it('splits 90/10 in the catch-all audience (chi-square, p > 0.001)', async () => {
    const counts = await tally(2000, {});
    expect(chiSquare([counts.default ?? 0, counts.canary ?? 0], [0.9, 0.1])).toBeLessThan(CHI2_P001[1]);
  });

  it('splits 50/50 in the header-selected audience (chi-square, p > 0.001)', async () => {
    const counts = await tally(1500, { 'x-city': 'new-york' });
    expect(chiSquare([counts.default ?? 0, counts.canary ?? 0], [0.5, 0.5])).toBeLessThan(CHI2_P001[1]);
  });

  it('the variation path bypasses the split', async () => {
    for (let i = 0; i < 20; i++) expect((await api('POST', '/v1/split/canary/predict', ROW)).headers.get('x-variation')).toBe('canary');
  });

  it('a request matching no audience goes to the fallback', async () => {
    expect((await api('POST', '/api/v1/models', { model_id: 'narrow' })).status).toBe(201);
    await deploy('narrow', { build_id: await upload('narrow', linearModel(FEATURES, 0)) });
    await deploy('narrow', {
      build_id: await upload('narrow', linearModel(FEATURES, 100)),
      variation_name: 'beta',
      audiences: [{ id: ny, routes: [{ variation_name: 'beta', weight: 100 }], fallback_variation: 'default' }],
    });
    expect((await predict('narrow', { 'x-city': 'new-york' })).headers.get('x-variation')).toBe('beta');
    for (let i = 0; i < 10; i++) expect((await predict('narrow', { 'x-city': 'boston' })).headers.get('x-variation')).toBe('default');
  });
});

describe('replacement under load, and rollback', () => {
  it('loses no request through a redeploy, a weight change and an undeploy', async () => {
    expect((await api('POST', '/api/v1/models', { model_id: 'live' })).status).toBe(201);
    await deploy('live', { build_id: await upload('live', linearModel(FEATURES, 0)) });
    const all = await createAudience('live-all', undefined);
    const seen = new Set<string>();
    const failures: string[] = [];
    let stop = false;
    let sent = 0;
    const worker = async () => {
      while (!stop) {
        const res = await predict('live');
        sent++;
        if (res.status !== 200) failures.push(`${res.status} ${JSON.stringify(res.body)}`);
        else seen.add(res.headers.get('x-variation')!);
      }
    };
    const load = Promise.all(Array.from({ length: 8 }, worker));

    await deploy('live', {
      build_id: await upload('live', linearModel(FEATURES, 100)),
      variation_name: 'canary',
      audiences: [{ id: all, routes: [{ variation_name: 'default', weight: 90 }, { variation_name: 'canary', weight: 10 }], fallback_variation: 'default' }],
    });
    // Replace the canary's build, then shift the weights.
    const newer = await upload('live', linearModel(FEATURES, 200));
    await deploy('live', { build_id: newer, variation_name: 'canary' });
    await deploy('live', {
      build_id: newer,
      variation_name: 'canary',
      audiences: [{ id: all, routes: [{ variation_name: 'default', weight: 50 }, { variation_name: 'canary', weight: 50 }], fallback_variation: 'default' }],
    });
    // Roll back: all traffic to default, then remove the canary.
    const rollback = await api<{ deployment_id: string }>('POST', '/api/v1/models/live/undeploy', {
      variation_name: 'canary',
      audiences: [{ id: all, routes: [{ variation_name: 'default', weight: 100 }], fallback_variation: 'default' }],
    });
    expect(rollback.status, JSON.stringify(rollback.body)).toBe(202);
    expect((await waitForDeployment(api, rollback.body.deployment_id)).status).toBe('LIVE');
    await new Promise((resolve) => setTimeout(resolve, 100));
    stop = true;
    await load;

    expect(failures).toEqual([]);
    expect(sent).toBeGreaterThan(50);
    expect([...seen].sort()).toEqual(['canary', 'default']);
    for (let i = 0; i < 20; i++) expect((await predict('live')).headers.get('x-variation')).toBe('default');
    expect((await api('POST', '/v1/live/canary/predict', ROW)).status).toBe(404);
  });

  it('undeploy without a file is refused while the variation has traffic; the last one may go', async () => {
    const res = await api<{ error: { message: string } }>('POST', '/api/v1/models/split/undeploy', { variation_name: 'canary' });
    expect(res.status).toBe(400);
    expect(res.body.error.message).toMatch(/variation "canary" receives traffic in audience "aud_/);
    const fallback = await api<{ error: { message: string } }>('POST', '/api/v1/models/split/undeploy', { variation_name: 'default' });
    expect(fallback.body.error.message).toMatch(/is the fallback/);

    expect((await api('POST', '/api/v1/models', { model_id: 'keep' })).status).toBe(201);
    await deploy('keep', { build_id: await upload('keep', linearModel(FEATURES, 0)) });
    const last = await api<{ deployment_id: string }>('POST', '/api/v1/models/keep/undeploy', { variation_name: 'default' });
    expect(last.status).toBe(202);
    expect((await waitForDeployment(api, last.body.deployment_id)).status).toBe('LIVE');
    const gone = await predict('keep');
    expect(gone.status).toBe(503);
  });
});

describe('logs and per-variation metrics', () => {
  it('every predict request is logged with its variation, audience, status and latency', async () => {
    const before = await api<{ logs: unknown[] }>('GET', '/api/v1/models/split/logs?limit=10000');
    await predict('split', { 'x-city': 'new-york' });
    const after = await api<{ logs: Array<{ variation: string; audience_id: string | null; status: number; latency_ms: number; shadow: boolean }> }>('GET', '/api/v1/models/split/logs?limit=10000');
    expect(after.body.logs.length).toBe(before.body.logs.length + 1);
    const newest = after.body.logs[0]!;
    expect(newest.audience_id).toMatch(/^aud_/);
    expect(newest.status).toBe(200);
    expect(newest.latency_ms).toBeGreaterThan(0);
    expect(newest.shadow).toBe(false);
    const onlyCanary = await api<{ logs: Array<{ variation: string }> }>('GET', '/api/v1/models/split/logs?variation=canary&limit=50');
    expect(onlyCanary.body.logs.length).toBeGreaterThan(0);
    expect(onlyCanary.body.logs.every((l) => l.variation === 'canary')).toBe(true);

    const metrics = await api<{ variations: Array<{ variation: string; requests_5m: number; throughput_rpm_5m: number; errors_5m: number; latency_ms: { p50: number; p99: number } }> }>('GET', '/api/v1/models/split/metrics');
    const byName = Object.fromEntries(metrics.body.variations.map((v) => [v.variation, v]));
    expect(byName.default!.requests_5m + byName.canary!.requests_5m).toBe(after.body.logs.filter((l) => !l.shadow).length);
    expect(byName.default!.throughput_rpm_5m).toBeCloseTo(byName.default!.requests_5m / 5);
    expect(byName.default!.latency_ms.p99).toBeGreaterThanOrEqual(byName.default!.latency_ms.p50);
    const prom = await (await fetch(`${host.url}/metrics`, { headers: { authorization: `Bearer ${(await tokenFor(host)).token}` } })).text();
    expect(prom).toMatch(/predict_requests_total\{model="split",variation="canary",status="200"\} \d+/);
  });
});

describe('shadows', () => {
  let shadowHost: TestHost;
  let shadowApi: Api;

  beforeAll(async () => {
    shadowHost = await listen(await startInProcessHost({ SHADOW_CONCURRENCY: '1', SHADOW_MAX_QUEUE: '2', SHADOW_TIMEOUT_MS: '50' }));
    shadowApi = apiClient(shadowHost.url, (await tokenFor(shadowHost)).token);
  });
  afterAll(async () => {
    await shadowHost.close();
  });

  async function setUp(modelId: string, shadowBytes: Uint8Array, shadowQuery = Q) {
    expect((await shadowApi('POST', '/api/v1/models', { model_id: modelId })).status).toBe(201);
    const build = async (bytes: Uint8Array, q: string) => (await shadowApi<{ build_id: string }>('POST', `/api/v1/models/${modelId}/builds${q}`, bytes)).body.build_id;
    const first = await shadowApi<{ deployment_id: string }>('POST', `/api/v1/models/${modelId}/deployments`, { build_id: await build(linearModel(FEATURES, 0), Q) });
    expect((await waitForDeployment(shadowApi, first.body.deployment_id)).status).toBe('LIVE');
    const aud = await shadowApi<{ audiences: Array<{ id: string }> }>('POST', '/api/v1/audiences', { spec: { audiences: [{ name: `${modelId}-all` }] } });
    const second = await shadowApi<{ deployment_id: string }>('POST', `/api/v1/models/${modelId}/deployments`, {
      build_id: await build(shadowBytes, shadowQuery),
      variation_name: 'shadow',
      audiences: [{ id: aud.body.audiences[0]!.id, routes: [{ variation_name: 'default', weight: 100 }, { variation_name: 'shadow', weight: 100, shadow: true }], fallback_variation: 'default' }],
    });
    const done = await waitForDeployment(shadowApi, second.body.deployment_id);
    expect(done.status, done.reason ?? '').toBe('LIVE');
  }

  const waitIdle = async () => {
    while (shadowHost.app.realtime.shadows.pending > 0) await new Promise((resolve) => setTimeout(resolve, 10));
  };

  it('a failing shadow leaves the answer unchanged, and its error is logged with both bodies', async () => {
    // The shadow build needs a feature the payload lacks: every copy fails.
    await setUp('shadow-fails', linearModel(['a', 'b', 'z'], 0), '?feature_names=a,b,z');
    const res = await shadowApi<Array<{ y: number }>>('POST', '/v1/shadow-fails/predict', ROW);
    expect(res.status).toBe(200);
    expect(res.headers.get('x-variation')).toBe('default');
    await waitIdle();
    const logs = await shadowApi<{ logs: Array<{ shadow: boolean; status: number; error: string | null; request: string | null; response: string | null; request_id: string }> }>('GET', '/api/v1/models/shadow-fails/logs?shadow=true');
    expect(logs.body.logs).toHaveLength(1);
    const copy = logs.body.logs[0]!;
    expect(copy.status).toBe(400);
    expect(copy.error).toMatch(/unknown column "c"/);
    expect(JSON.parse(copy.request!)).toEqual(ROW);
    const primary = (await shadowApi<{ logs: Array<{ shadow: boolean; request_id: string; response: string | null }> }>('GET', '/api/v1/models/shadow-fails/logs?shadow=false')).body.logs[0]!;
    expect(primary.request_id).toBe(copy.request_id);
    expect(JSON.parse(primary.response!)).toEqual(res.body);
  });

  it('a slow shadow answers after the caller, times out on its own clock, and a full queue drops copies', async () => {
    await setUp('shadow-slow', heavyModel(FEATURES));
    const many = { columns: FEATURES, index: Array.from({ length: 64 }, (_, i) => i), data: Array.from({ length: 64 }, (_, i) => [i, 1, 2]) };
    const answers = await Promise.all(Array.from({ length: 8 }, () => shadowApi<Array<{ y: number }>>('POST', '/v1/shadow-slow/predict', many)));
    // Every caller has its answer while copies are still running or queued.
    expect(shadowHost.app.realtime.shadows.pending).toBeGreaterThan(0);
    for (const res of answers) {
      expect(res.status).toBe(200);
      expect(res.headers.get('x-variation')).toBe('default');
      expect(res.body).toHaveLength(64);
    }
    await waitIdle();
    const logs = await shadowApi<{ logs: Array<{ status: number; error: string | null; latency_ms: number }> }>('GET', '/api/v1/models/shadow-slow/logs?shadow=true');
    // One running plus two queued: the other five copies were dropped, not piled up.
    expect(logs.body.logs.length).toBeLessThanOrEqual(3);
    expect(logs.body.logs.some((l) => l.error !== null && /timed out after 50 ms/.test(l.error))).toBe(true);
    expect(shadowHost.app.realtime.shadows.dropped).toBeGreaterThanOrEqual(5);
    const prom = await (await fetch(`${shadowHost.url}/metrics`, { headers: { authorization: `Bearer ${(await tokenFor(shadowHost)).token}` } })).text();
    expect(prom).toMatch(/shadow_requests_dropped_total [1-9]/);
  });
});
