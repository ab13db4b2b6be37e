// Instance types of realtime deployments: `instance_type` cpu (the default) or cuda, refused with
// a 400 naming the reason on a host without CUDA (before anything is recorded), stored with the
// deployment and shown in it; the v6 migration; the availability check itself; the executor's
// device option; moving a live model to another instance type (PUT /api/v1/models/:id/instance-type).
import { describe, expect, it, beforeAll, afterAll } from 'vitest';
import { migrations } from '../src/store/migrations.js';
import { cudaUnavailableReason } from '../src/native/cuda-availability.js';
import { compileTabularModel } from '../src/tabular/executor/index.js';
import { normalize } from '../src/tabular/onnx/normalize.js';
import { parseOnnxModel } from '../src/tabular/onnx/parse.js';
import { migrate } from '../src/store/database.js';
import Database from 'better-sqlite3';
import { apiClient, waitForDeployment, type Api } from './helpers/api.js';
import { listen, startInProcessHost, tokenFor, type TestHost } from './helpers/in-process-host.js';
import { linearModel } from './helpers/models.js';
import { mlpModel } from './helpers/onnx-builder.js';

const FEATURES = ['a', 'b', 'c'];
const ROW = { columns: FEATURES, index: [0], data: [[0.5, -1, 2]] };
const cudaReason = cudaUnavailableReason();

let host: TestHost;
let api: Api;

async function newModelWithBuild(modelId: string): Promise<string> {
  expect((await api('POST', '/api/v1/models', { model_id: modelId })).status).toBe(201);
  const res = await api<{ build_id: string }>('POST', `/api/v1/models/${modelId}/builds?feature_names=${FEATURES.join(',')}`, linearModel(FEATURES, 1));
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  return res.body.build_id;
}

beforeAll(async () => {
  host = await listen(await startInProcessHost({ PREDICT_MAX_WAIT_MICROS: '0' }));
  api = apiClient(host.url, (await tokenFor(host)).token);
});
afterAll(async () => {
  await host.close();
});

interface DeploymentJson {
  deployment_id: string;
  status: string;
  instance_type: string | null;
  traffic: { instanceTypes?: Record<string, string> };
}

describe('realtime instance types', () => {
  it('default to cpu, are stored with the deployment and shown in it', async () => {
    const build = await newModelWithBuild('it-default');
    const res = await api<DeploymentJson>('POST', '/api/v1/models/it-default/deployments', { build_id: build });
    expect(res.status, JSON.stringify(res.body)).toBe(202);
    expect(res.body.instance_type).toBe('cpu');
    expect((await waitForDeployment(api, res.body.deployment_id)).status).toBe('LIVE');
    const got = await api<{ live_deployment: DeploymentJson }>('GET', '/api/v1/models/it-default');
    expect(got.body.live_deployment.instance_type).toBe('cpu');
    expect(got.body.live_deployment.traffic.instanceTypes).toEqual({ default: 'cpu' });
    const one = await api<DeploymentJson>('GET', `/api/v1/deployments/${res.body.deployment_id}`);
    expect(one.body.instance_type).toBe('cpu');
    expect((await api('POST', '/v1/it-default/predict', ROW)).status).toBe(200);

    // An explicit cpu redeploy of the same build shares the loaded build; an undeploy has none.
    const again = await api<DeploymentJson>('POST', '/api/v1/models/it-default/deployments', { build_id: build, instance_type: 'cpu' });
    expect(again.status).toBe(202);
    expect((await waitForDeployment(api, again.body.deployment_id)).status).toBe('LIVE');
    const gone = await api<DeploymentJson>('POST', '/api/v1/models/it-default/undeploy', { variation_name: 'default' });
    expect(gone.status, JSON.stringify(gone.body)).toBe(202);
    expect(gone.body.instance_type).toBeNull();
    expect((await waitForDeployment(api, gone.body.deployment_id)).status).toBe('LIVE');
  });

  it('refuses a value other than cpu or cuda, naming the field', async () => {
    const build = await newModelWithBuild('it-bad');
    const res = await api<{ error: { code: string; param: string; message: string } }>('POST', '/api/v1/models/it-bad/deployments', { build_id: build, instance_type: 'tpu' });
    expect(res.status).toBe(400);
    expect(res.body.error.param).toBe('instance_type');
    expect((await api<{ deployments: unknown[] }>('GET', '/api/v1/models/it-bad/deployments')).body.deployments).toEqual([]);
  });

  describe.skipIf(cudaReason === null)('on a host without CUDA', () => {
    it('refuses cuda with a 400 naming instance_type and the reason, and records nothing', async () => {
      const build = await newModelWithBuild('it-cuda');
      const res = await api<{ error: { code: string; param: string; message: string } }>('POST', '/api/v1/models/it-cuda/deployments', { build_id: build, instance_type: 'cuda' });
      expect(res.status).toBe(400);
      expect(res.body.error.code).toBe('invalid_argument');
      expect(res.body.error.param).toBe('instance_type');
      expect(res.body.error.message).toBe(`instance type cuda is not available on this host: ${cudaReason}`);
      expect((await api<{ deployments: unknown[] }>('GET', '/api/v1/models/it-cuda/deployments')).body.deployments).toEqual([]);
      const model = await api<{ live_deployment: unknown; deployment_in_progress: unknown }>('GET', '/api/v1/models/it-cuda');
      expect(model.body.live_deployment).toBeNull();
      expect(model.body.deployment_in_progress).toBeNull();
      // The model still deploys on the CPU afterwards.
      const cpu = await api<DeploymentJson>('POST', '/api/v1/models/it-cuda/deployments', { build_id: build });
      expect(cpu.status).toBe(202);
      expect((await waitForDeployment(api, cpu.body.deployment_id)).status).toBe('LIVE');
    });

    it('is refused by the executor too, with the same reason', () => {
      const model = normalize(parseOnnxModel(mlpModel().toBytes()));
      expect(() => compileTabularModel(model, { device: 'cuda' })).toThrow(`instance type cuda is not available on this host: ${cudaReason}`);
    });
  });
});

interface ErrorJson {
  error: { code: string; param: string; message: string };
}

interface ModelJson {
  live_deployment: (DeploymentJson & { action: string; variation_name: string; build_id: string; traffic: DeploymentJson['traffic'] & Record<string, unknown> }) | null;
  deployment_in_progress: DeploymentJson | null;
}

async function deployLive(modelId: string, body: Record<string, unknown>): Promise<string> {
  const res = await api<DeploymentJson>('POST', `/api/v1/models/${modelId}/deployments`, body);
  expect(res.status, JSON.stringify(res.body)).toBe(202);
  const done = await waitForDeployment(api, res.body.deployment_id);
  expect(done.status, done.reason ?? '').toBe('LIVE');
  return res.body.deployment_id;
}

const deploymentsOf = async (modelId: string) => (await api<{ deployments: DeploymentJson[] }>('GET', `/api/v1/models/${modelId}/deployments`)).body.deployments;
const liveOf = async (modelId: string) => (await api<ModelJson>('GET', `/api/v1/models/${modelId}`)).body.live_deployment!;
const answer = async (path: string, headers: Record<string, string> = {}) => {
  const res = await api<Array<{ y: number }>>('POST', path, ROW, headers);
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return { y: res.body[0]!.y, variation: res.headers.get('x-variation') };
};

describe('changing the instance type of a live model', () => {
  it('to the type it runs on redeploys it as it is (202, LIVE) with the same answers, as the library does', async () => {
    const build = await newModelWithBuild('it-same');
    const first = await deployLive('it-same', { build_id: build });
    const before = await answer('/v1/it-same/predict');
    const res = await api<DeploymentJson & { action: string; variation_name: string; build_id: string; model_id: string }>('PUT', '/api/v1/models/it-same/instance-type', { instance_type: 'cpu' });
    expect(res.status, JSON.stringify(res.body)).toBe(202);
    expect(res.body).toMatchObject({ model_id: 'it-same', action: 'deploy', status: 'PENDING', variation_name: 'default', build_id: build, instance_type: 'cpu' });
    expect(res.body.traffic.instanceTypes).toEqual({ default: 'cpu' });
    expect((await waitForDeployment(api, res.body.deployment_id)).status).toBe('LIVE');
    const live = await liveOf('it-same');
    expect(live.deployment_id).toBe(res.body.deployment_id);
    expect(live.traffic).toEqual({ variations: { default: build }, audiences: [], fallbackVariation: 'default', batching: {}, instanceTypes: { default: 'cpu' } });
    expect((await deploymentsOf('it-same')).map((d) => [d.deployment_id, d.status])).toEqual([
      [first, 'SUPERSEDED'],
      [res.body.deployment_id, 'LIVE'],
    ]);
    expect(await answer('/v1/it-same/predict')).toEqual(before);
  });

  it('keeps every variation, route and batching setting; only the instance types change', async () => {
    const base = await newModelWithBuild('it-multi');
    await deployLive('it-multi', { build_id: base, batching: { max_batch_rows: 7 } });
    const canary = await api<{ build_id: string }>('POST', `/api/v1/models/it-multi/builds?feature_names=${FEATURES.join(',')}`, linearModel(FEATURES, 100));
    const audience = await api<{ audiences: Array<{ id: string }> }>('POST', '/api/v1/audiences', {
      api_version: 'v1',
      spec: { audiences: [{ name: 'it-multi-canary', conditions: { unary: [{ key: 'X-Canary', operator: 'UNARY_OPERATOR_TYPE_PRESENT_MATCH' }] } }] },
    });
    expect(audience.status, JSON.stringify(audience.body)).toBe(201);
    const aud = audience.body.audiences[0]!.id;
    await deployLive('it-multi', {
      build_id: canary.body.build_id,
      variation_name: 'canary',
      audiences: [{ id: aud, routes: [{ variation_name: 'canary', weight: 100 }], fallback_variation: 'default' }],
    });
    const before = await liveOf('it-multi');
    const answers = [await answer('/v1/it-multi/predict'), await answer('/v1/it-multi/predict', { 'x-canary': '1' })];
    expect(answers.map((a) => a.variation)).toEqual(['default', 'canary']);

    const res = await api<DeploymentJson & { variation_name: string; build_id: string }>('PUT', '/api/v1/models/it-multi/instance-type', { instance_type: 'cpu' });
    expect(res.status, JSON.stringify(res.body)).toBe(202);
    // The record names the fallback variation and its build.
    expect(res.body).toMatchObject({ variation_name: 'default', build_id: base, instance_type: 'cpu' });
    expect((await waitForDeployment(api, res.body.deployment_id)).status).toBe('LIVE');
    const after = await liveOf('it-multi');
    expect(after.traffic).toEqual({ ...before.traffic, instanceTypes: { default: 'cpu', canary: 'cpu' } });
    expect([await answer('/v1/it-multi/predict'), await answer('/v1/it-multi/predict', { 'x-canary': '1' })]).toEqual(answers);
  });

  it('answers 404 for an unknown model or one with nothing live, and 400 for a bad type, recording nothing', async () => {
    const unknown = await api<ErrorJson>('PUT', '/api/v1/models/no-such-model/instance-type', { instance_type: 'cpu' });
    expect(unknown.status).toBe(404);
    expect(unknown.body.error.param).toBe('model_id');

    await newModelWithBuild('it-idle');
    const idle = await api<ErrorJson>('PUT', '/api/v1/models/it-idle/instance-type', { instance_type: 'cpu' });
    expect(idle.status).toBe(404);
    expect(idle.body.error.message).toMatch(/model "it-idle" has no live deployment/);
    expect(idle.body.error.param).toBe('model_id');

    for (const body of [{ instance_type: 'tpu' }, {}]) {
      const bad = await api<ErrorJson>('PUT', '/api/v1/models/it-idle/instance-type', body);
      expect(bad.status, JSON.stringify(bad.body)).toBe(400);
      expect(bad.body.error.code).toBe('invalid_argument');
      expect(bad.body.error.param).toBe('instance_type');
    }
    expect(await deploymentsOf('it-idle')).toEqual([]);
  });

  it('answers 409 while a deployment of the model is in progress', async () => {
    const build = await newModelWithBuild('it-busy');
    await deployLive('it-busy', { build_id: build });
    const live = await liveOf('it-busy');
    // A deployment still on its way (as if its builds were loading).
    host.db
      .prepare(
        `INSERT INTO deployments (id, model_id, status, action, variation_name, build_id, instance_type, traffic, created_at, updated_at)
         VALUES ('dep_it_busy', 'it-busy', 'DEPLOYING', 'deploy', 'default', ?, 'cpu', ?, 1, 1)`,
      )
      .run(build, JSON.stringify(live.traffic));
    const res = await api<ErrorJson>('PUT', '/api/v1/models/it-busy/instance-type', { instance_type: 'cpu' });
    expect(res.status).toBe(409);
    expect(res.body.error.param).toBe('model_id');
    expect(res.body.error.message).toMatch(/has deployment dep_it_busy in progress \(DEPLOYING\)/);
    host.db.prepare("UPDATE deployments SET status = 'FAILED', reason = 'test' WHERE id = 'dep_it_busy'").run();
    expect((await liveOf('it-busy')).deployment_id).toBe(live.deployment_id);
  });

  it.skipIf(cudaReason === null)('to cuda on a host without CUDA: 400 naming instance_type and the reason; nothing recorded, traffic unchanged', async () => {
    const build = await newModelWithBuild('it-nocuda');
    await deployLive('it-nocuda', { build_id: build });
    const before = await liveOf('it-nocuda');
    const deployments = await deploymentsOf('it-nocuda');
    const answered = await answer('/v1/it-nocuda/predict');

    const res = await api<ErrorJson>('PUT', '/api/v1/models/it-nocuda/instance-type', { instance_type: 'cuda' });
    expect(res.status).toBe(400);
    expect(res.body.error).toMatchObject({ code: 'invalid_argument', param: 'instance_type', message: `instance type cuda is not available on this host: ${cudaReason}` });
    expect(await deploymentsOf('it-nocuda')).toEqual(deployments);
    const model = await api<ModelJson>('GET', '/api/v1/models/it-nocuda');
    expect(model.body.live_deployment).toEqual(before);
    expect(model.body.deployment_in_progress).toBeNull();
    expect(await answer('/v1/it-nocuda/predict')).toEqual(answered);
  });

  it.skipIf(cudaReason !== null)('to cuda and back under concurrent predict load, failing no request', async () => {
    const build = await newModelWithBuild('it-gpu');
    await deployLive('it-gpu', { build_id: build });
    const expected = (await answer('/v1/it-gpu/predict')).y;
    const failures: string[] = [];
    let stop = false;
    let sent = 0;
    const worker = async () => {
      while (!stop) {
        const res = await api<Array<{ y: number }>>('POST', '/v1/it-gpu/predict', ROW);
        sent++;
        if (res.status !== 200) failures.push(`${res.status} ${JSON.stringify(res.body)}`);
        else if (Math.abs(res.body[0]!.y - expected) > 1e-4) failures.push(`answer ${res.body[0]!.y}, expected ${expected}`);
      }
    };
    const load = Promise.all(Array.from({ length: 8 }, worker));
    for (const type of ['cuda', 'cpu', 'cuda'] as const) {
      const res = await api<DeploymentJson>('PUT', '/api/v1/models/it-gpu/instance-type', { instance_type: type });
      expect(res.status, JSON.stringify(res.body)).toBe(202);
      const done = await waitForDeployment(api, res.body.deployment_id);
      expect(done.status, done.reason ?? '').toBe('LIVE');
      expect((await liveOf('it-gpu')).traffic.instanceTypes).toEqual({ default: type });
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    stop = true;
    await load;
    expect(failures).toEqual([]);
    expect(sent).toBeGreaterThan(50);
  });
});

describe('cudaUnavailableReason', () => {
  it('names a build without CUDA, a missing device, and nothing when a device is there', () => {
    expect(cudaUnavailableReason({ built: false, devices: [], error: null })).toBe('this addon was built without CUDA (run `npm run build:cuda`)');
    expect(cudaUnavailableReason({ built: true, devices: [], error: 'cudaGetDeviceCount failed: no CUDA-capable device is detected' })).toBe(
      'cudaGetDeviceCount failed: no CUDA-capable device is detected',
    );
    expect(cudaUnavailableReason({ built: true, devices: [], error: null })).toBe('no CUDA device found');
    expect(cudaUnavailableReason({ built: true, devices: [{ name: 'NVIDIA H200', totalMemory: 1, computeCapability: '9.0' }], error: null })).toBeNull();
  });
});

describe('the executor device options', () => {
  const model = () => normalize(parseOnnxModel(mlpModel().toBytes()));

  it('default to the CPU', () => {
    const m = compileTabularModel(model());
    expect(m.describe().device).toBe('cpu');
    m.dispose();
  });

  it('check their values', () => {
    expect(() => compileTabularModel(model(), { device: 'tpu' as never })).toThrow(
      Object.assign(new RangeError('tabularCompile: options.device must be one of "cpu", "cuda", got "tpu"'), { code: 'invalid_argument' }),
    );
    expect(() => compileTabularModel(model(), { device: 1 as never })).toThrow(TypeError);
    expect(() => compileTabularModel(model(), { cudaMinRows: -1 })).toThrow(RangeError);
    expect(() => compileTabularModel(model(), { cudaMinRows: 1.5 })).toThrow(RangeError);
  });
});

describe('migration 6', () => {
  it('gives deployments made before it the cpu instance type, and undeploys none', () => {
    const db = new Database(':memory:');
    migrate(db, migrations.filter((m) => m.version <= 5));
    db.prepare("INSERT INTO models (id, project, kind, created_at) VALUES ('m', 'default', 'realtime', 1)").run();
    db.prepare("INSERT INTO builds (id, model_id, file, sha256, size_bytes, features, outputs, operators, opsets, created_at) VALUES ('b', 'm', 'f', 's', 1, '[]', '[]', '[]', '{}', 1)").run();
    const insert = db.prepare("INSERT INTO deployments (id, model_id, status, action, variation_name, build_id, traffic, created_at, updated_at) VALUES (?, 'm', 'SUPERSEDED', ?, 'default', ?, '{}', 1, 1)");
    insert.run('d1', 'deploy', 'b');
    insert.run('d2', 'undeploy', null);
    migrate(db, migrations);
    expect(db.prepare('SELECT id, instance_type FROM deployments ORDER BY id').all()).toEqual([
      { id: 'd1', instance_type: 'cpu' },
      { id: 'd2', instance_type: null },
    ]);
    expect(() => db.prepare("UPDATE deployments SET instance_type = 'tpu' WHERE id = 'd1'").run()).toThrow(/CHECK constraint/);
    db.close();
  });
});
