// Instance types of realtime deployments: `instance_type` cpu (the default) or cuda, refused with
// a 400 naming the reason on a host without CUDA (before anything is recorded), stored with the
// deployment and shown in it; the v6 migration; the availability check itself; the executor's
// device option.
import { describe, expect, it, beforeAll, afterAll } from 'vitest';
import { migrations } from '../src/store/migrations.js';
import { cudaUnavailableReason } from '../src/native/cuda-availability.js';
import { compileTabularModel } from '../src/tabular/executor/index.js';
import { normalize } from '../src/tabular/onnx/operators.js';
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
    expect(() => compileTabularModel(model(), { device: 'tpu' as never })).toThrow(new RangeError('tabularCompile: options.device must be "cpu" or "cuda", got "tpu"'));
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
