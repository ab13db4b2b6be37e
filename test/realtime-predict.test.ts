// Realtime inference end to end on the real host: create a model, upload ONNX builds written in
// the test, deploy, and predict, checked against a plain f64 reference and onnxruntime-node.
import ort from 'onnxruntime-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ModelBuilder, attr } from './helpers/onnx-builder.js';
import { apiClient, waitForDeployment, type Api } from './helpers/api.js';
import { rng } from './helpers/random.js';
import { listen, startInProcessHost, tokenFor, type TestHost } from './helpers/in-process-host.js';

let host: TestHost;
let api: Api;

beforeAll(async () => {
  host = await listen(await startInProcessHost({ PREDICT_MAX_WAIT_MICROS: '20000' }));
  api = apiClient(host.url, (await tokenFor(host)).token);
});
afterAll(async () => {
  await host.close();
});

const FEATURES = ['age', 'income', 'tenure', 'balance', 'score', 'visits'];

/** A 6 -> 8 -> 3 Gemm/Relu/Gemm network with random weights, and its f64 reference. */
function randomMlp(seed: number) {
  const r = rng(seed);
  const w1 = Array.from({ length: 8 * 6 }, () => r() * 2 - 1);
  const b1 = Array.from({ length: 8 }, () => r() - 0.5);
  const w2 = Array.from({ length: 3 * 8 }, () => r() * 2 - 1);
  const b2 = Array.from({ length: 3 }, () => r() - 0.5);
  const bytes = new ModelBuilder({ opsets: { '': 13 } })
    .input('x', 'float', ['N', 6])
    .initializer('W1', 'float', [8, 6], w1)
    .initializer('B1', 'float', [8], b1)
    .initializer('W2', 'float', [3, 8], w2)
    .initializer('B2', 'float', [3], b2)
    .node('Gemm', ['x', 'W1', 'B1'], ['h'], { transB: 1 }, { name: 'dense1' })
    .node('Relu', ['h'], ['a'], {}, { name: 'relu' })
    .node('Gemm', ['a', 'W2', 'B2'], ['y'], { transB: 1 }, { name: 'dense2' })
    .output('y', 'float', ['N', 3])
    .toBytes();
  const f32 = (v: number) => Math.fround(v);
  const reference = (row: number[]) => {
    const h = Array.from({ length: 8 }, (_, j) => Math.max(0, b1[j]! + row.reduce((s, x, i) => s + f32(x) * f32(w1[j * 6 + i]!), 0)));
    return Array.from({ length: 3 }, (_, k) => b2[k]! + h.reduce((s, x, j) => s + x * f32(w2[k * 8 + j]!), 0));
  };
  return { bytes, reference };
}

async function deployBuild(modelId: string, bytes: Uint8Array, query = '', variation?: string): Promise<{ buildId: string; deploymentId: string }> {
  const build = await api<{ build_id: string }>('POST', `/api/v1/models/${modelId}/builds${query}`, bytes);
  expect(build.status, JSON.stringify(build.body)).toBe(201);
  const dep = await api<{ deployment_id: string; status: string }>('POST', `/api/v1/models/${modelId}/deployments`, {
    build_id: build.body.build_id,
    ...(variation ? { variation_name: variation } : {}),
  });
  expect(dep.status, JSON.stringify(dep.body)).toBe(202);
  expect(dep.body.status).toBe('PENDING');
  const done = await waitForDeployment(api, dep.body.deployment_id);
  expect(done.status, done.reason ?? '').toBe('LIVE');
  return { buildId: build.body.build_id, deploymentId: dep.body.deployment_id };
}

function randomRows(n: number, seed: number): number[][] {
  const r = rng(seed);
  return Array.from({ length: n }, () => FEATURES.map(() => r() * 4 - 2));
}

const close = (actual: number, expected: number) => Math.abs(actual - expected) <= 1e-5 + 1e-4 * Math.abs(expected);

describe('an MLP build', () => {
  const mlp = randomMlp(7);

  beforeAll(async () => {
    expect((await api('POST', '/api/v1/models', { model_id: 'churn', description: 'an MLP' })).status).toBe(201);
    await deployBuild('churn', mlp.bytes, `?feature_names=${FEATURES.join(',')}&output_names=scores`);
  });

  it('answers one object per row, in order, matching the f64 reference and onnxruntime', async () => {
    const rows = randomRows(37, 11);
    // Columns in another order than the model's features: matched by name.
    const order = [3, 0, 5, 1, 4, 2];
    const res = await api<Array<{ scores: number[] }>>('POST', '/v1/churn/predict', {
      columns: order.map((i) => FEATURES[i]),
      index: rows.map((_, i) => i),
      data: rows.map((row) => order.map((i) => row[i])),
    });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.headers.get('x-variation')).toBe('default');
    expect(res.body).toHaveLength(37);

    const session = await ort.InferenceSession.create(mlp.bytes);
    const ortOut = await session.run({ x: new ort.Tensor('float32', Float32Array.from(rows.flat()), [37, 6]) });
    const ortY = ortOut.y!.data as Float32Array;
    res.body.forEach((row, r) => {
      expect(Object.keys(row)).toEqual(['scores']);
      const ref = mlp.reference(rows[r]!);
      row.scores.forEach((v, k) => {
        expect(close(v, ref[k]!), `row ${r} output ${k}: ${v} vs ${ref[k]}`).toBe(true);
        expect(close(v, ortY[r * 3 + k]!)).toBe(true);
      });
    });
  });

  it('accepts numbers sent as strings and the pandas-split media type', async () => {
    const row = randomRows(1, 3)[0]!;
    const res = await api<Array<{ scores: number[] }>>(
      'POST',
      '/v1/churn/predict',
      { columns: FEATURES, index: [0], data: [row.map(String)] },
      { 'content-type': 'application/json; format=pandas-split' },
    );
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    const ref = mlp.reference(row);
    res.body[0]!.scores.forEach((v, k) => expect(close(v, ref[k]!)).toBe(true));
  });

  it('answers on the variation path, bypassing the split', async () => {
    const res = await api('POST', '/v1/churn/default/predict', { columns: FEATURES, index: [0], data: [randomRows(1, 5)[0]] });
    expect(res.status).toBe(200);
    expect(res.headers.get('x-variation')).toBe('default');
  });

  it('batches concurrent requests into fewer native calls, each answer its own', async () => {
    const before = await batchCalls();
    const requests = Array.from({ length: 40 }, (_, i) => randomRows(1 + (i % 3), 100 + i));
    const answers = await Promise.all(
      requests.map((rows) => api<Array<{ scores: number[] }>>('POST', '/v1/churn/predict', { columns: FEATURES, index: rows.map((_, i) => i), data: rows })),
    );
    answers.forEach((res, i) => {
      expect(res.status).toBe(200);
      const rows = requests[i]!;
      expect(res.body).toHaveLength(rows.length);
      res.body.forEach((row, r) => row.scores.forEach((v, k) => expect(close(v, mlp.reference(rows[r]!)[k]!)).toBe(true)));
    });
    const calls = (await batchCalls()) - before;
    expect(calls).toBeGreaterThan(0);
    expect(calls).toBeLessThan(40);
  });

  it('honours a per-deployment batch limit', async () => {
    expect((await api('POST', '/api/v1/models', { model_id: 'solo' })).status).toBe(201);
    const build = await api<{ build_id: string }>('POST', `/api/v1/models/solo/builds?feature_names=${FEATURES.join(',')}`, mlp.bytes);
    const dep = await api<{ deployment_id: string }>('POST', '/api/v1/models/solo/deployments', { build_id: build.body.build_id, batching: { max_batch_rows: 1 } });
    expect((await waitForDeployment(api, dep.body.deployment_id)).status).toBe('LIVE');
    const before = await batchCalls();
    const answers = await Promise.all(Array.from({ length: 20 }, (_, i) => api('POST', '/v1/solo/predict', { columns: FEATURES, data: randomRows(1, 500 + i) })));
    expect(answers.every((a) => a.status === 200)).toBe(true);
    expect((await batchCalls()) - before).toBe(20);
  });

  describe('malformed payloads are 400s that name the problem', () => {
    const cases: Array<[string, unknown, RegExp, string | null]> = [
      ['a missing column', { columns: FEATURES.slice(1), index: [0], data: [[1, 2, 3, 4, 5]] }, /missing column "age"/, 'columns'],
      ['an unknown column', { columns: [...FEATURES, 'zip'], index: [0], data: [[1, 2, 3, 4, 5, 6, 7]] }, /unknown column "zip"/, 'columns[6]'],
      ['a column given twice', { columns: [...FEATURES, 'age'], index: [0], data: [[1, 2, 3, 4, 5, 6, 7]] }, /column "age" is given twice/, 'columns[6]'],
      ['a row of the wrong length', { columns: FEATURES, index: [0, 1], data: [[1, 2, 3, 4, 5, 6], [1, 2, 3]] }, /data\[1\] has 3 values but there are 6 columns/, 'data[1]'],
      ['a string where a number is needed', { columns: FEATURES, index: [0], data: [[1, 2, 'lots', 4, 5, 6]] }, /data\[0\]\[2\] \("tenure"\) is "lots", not a number/, 'data'],
      ['index and data of different lengths', { columns: FEATURES, index: [0, 1, 2], data: [[1, 2, 3, 4, 5, 6]] }, /index has 3 entries but data has 1 rows/, 'index'],
      ['no rows', { columns: FEATURES, index: [], data: [] }, /data has no rows/, 'data'],
      ['no columns field', { index: [0], data: [[1]] }, /columns/, 'columns'],
      ['data not an array of rows', { columns: FEATURES, data: [1, 2] }, /data\[0\]|data/, null],
    ];
    for (const [what, body, message, param] of cases) {
      it(what, async () => {
        const res = await api<{ error: { code: string; message: string; param: string | null } }>('POST', '/v1/churn/predict', body);
        expect(res.status).toBe(400);
        expect(res.body.error.code).toBe('invalid_argument');
        expect(res.body.error.message).toMatch(message);
        if (param !== null) expect(res.body.error.param).toBe(param);
      });
    }

    it('an empty body', async () => {
      const res = await fetch(`${host.url}/v1/churn/predict`, { method: 'POST', headers: { authorization: (await authHeader()), 'content-type': 'application/json' } });
      expect(res.status).toBe(400);
    });
  });
});

describe('lookups and states', () => {
  it('an unknown model is 404, an unknown variation 404, a model not live yet 503', async () => {
    const payload = { columns: ['a'], index: [0], data: [[1]] };
    const unknown = await api<{ error: { code: string } }>('POST', '/v1/nobody/predict', payload);
    expect(unknown.status).toBe(404);
    expect(unknown.body.error.code).toBe('not_found');
    expect((await api('POST', '/api/v1/models', { model_id: 'idle' })).status).toBe(201);
    const idle = await api<{ error: { code: string; message: string } }>('POST', '/v1/idle/predict', payload);
    expect(idle.status).toBe(503);
    expect(idle.body.error.code).toBe('unavailable');
    const variation = await api<{ error: { message: string } }>('POST', '/v1/churn/blue/predict', payload);
    expect(variation.status).toBe(404);
    expect(variation.body.error.message).toBe('model "churn" has no variation "blue"');
  });
});

describe('builds are validated at upload', () => {
  beforeAll(async () => {
    expect((await api('POST', '/api/v1/models', { model_id: 'uploads' })).status).toBe(201);
  });

  const upload = (bytes: Uint8Array, query = '') => api<{ error: { code: string; message: string; param: string | null } }>('POST', `/api/v1/models/uploads/builds${query}`, bytes);

  it('refuses a file that is not ONNX', async () => {
    const res = await upload(new TextEncoder().encode('this is not a model'));
    expect(res.status).toBe(400);
    expect(res.body.error.message).toMatch(/not an ONNX model/);
  });

  it('refuses a truncated file', async () => {
    const bytes = randomMlp(1).bytes;
    const res = await upload(bytes.subarray(0, Math.floor(bytes.length * 0.6)));
    expect(res.status).toBe(400);
    expect(res.body.error.code).toBe('invalid_argument');
  });

  it('refuses an unsupported operator, naming it, its node and the opset', async () => {
    const bytes = new ModelBuilder({ opsets: { '': 13 } })
      .input('x', 'float', ['N', 2])
      .node('Resize', ['x'], ['y'], { mode: 'cubic' }, { name: 'upsample' })
      .output('y', 'float', ['N', 2])
      .toBytes();
    const res = await upload(bytes, '?feature_names=a,b');
    expect(res.status).toBe(400);
    expect(res.body.error.message).toBe('operator "Resize" (node "upsample", opset ai.onnx 13) is not supported');
  });

  it('refuses feature names that do not fit', async () => {
    const res = await upload(randomMlp(2).bytes, '?feature_names=a,b');
    expect(res.status).toBe(400);
    expect(res.body.error.message).toMatch(/--feature-names gives 2 names but the model takes 6 features/);
    // The fault is in the names given, so the field named is theirs, not the file's.
    expect(res.body.error.param).toBe('feature_names');
    const outputs = await upload(randomMlp(2).bytes, '?feature_names=a,b,c,d,e,f&output_names=p,q,r');
    expect(outputs.status).toBe(400);
    expect(outputs.body.error).toMatchObject({ param: 'output_names' });
    expect(outputs.body.error.message).toMatch(/--output-names gives 3 names but the model has 1 output/);
  });

  it('refuses an empty upload and a JSON body', async () => {
    expect((await upload(new Uint8Array(0))).status).toBe(400);
    const json = await api('POST', '/api/v1/models/uploads/builds', { not: 'onnx' });
    expect(json.status).toBe(415);
  });

  it('refuses a build for an unknown model with 404', async () => {
    const res = await api('POST', '/api/v1/models/nobody/builds', randomMlp(3).bytes);
    expect(res.status).toBe(404);
  });
});

describe('a classifier', () => {
  it('answers its label and class probabilities', async () => {
    expect((await api('POST', '/api/v1/models', { model_id: 'iris' })).status).toBe(201);
    // LinearClassifier (3 classes, softmax) + ZipMap, as sklearn-onnx writes a logistic regression.
    const r = rng(42);
    const coefficients = Array.from({ length: 12 }, () => r() * 2 - 1);
    const intercepts = [0.1, -0.2, 0.05];
    const bytes = new ModelBuilder({ opsets: { '': 13, 'ai.onnx.ml': 1 } })
      .input('float_input', 'float', ['N', 4])
      .mlNode('LinearClassifier', ['float_input'], ['label', 'probabilities'], {
        classlabels_strings: ['setosa', 'versicolor', 'virginica'],
        coefficients: attr.floats(coefficients),
        intercepts: attr.floats(intercepts),
        multi_class: 1,
        post_transform: 'SOFTMAX',
      }, 'linear')
      .mlNode('ZipMap', ['probabilities'], ['output_probability'], { classlabels_strings: ['setosa', 'versicolor', 'virginica'] }, 'zipmap')
      .output('label', 'string', ['N'])
      .sequenceMapOutput('output_probability', 'string')
      .toBytes();
    await deployBuild('iris', bytes, '?feature_names=sepal_length,sepal_width,petal_length,petal_width');
    const rows = [[5.1, 3.5, 1.4, 0.2], [6.7, 3.0, 5.2, 2.3], [5.9, 3.0, 4.2, 1.5]];
    const res = await api<Array<{ label: string; output_probability: Record<string, number> }>>('POST', '/v1/iris/predict', {
      columns: ['sepal_length', 'sepal_width', 'petal_length', 'petal_width'],
      index: [0, 1, 2],
      data: rows,
    });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    rows.forEach((row, i) => {
      const scores = [0, 1, 2].map((c) => intercepts[c]! + row.reduce((s, x, j) => s + x * Math.fround(coefficients[c * 4 + j]!), 0));
      const max = Math.max(...scores);
      const exp = scores.map((s) => Math.exp(s - max));
      const probs = exp.map((e) => e / exp.reduce((a, b) => a + b, 0));
      const labels = ['setosa', 'versicolor', 'virginica'];
      const answer = res.body[i]!;
      expect(answer.label).toBe(labels[probs.indexOf(Math.max(...probs))]);
      labels.forEach((l, c) => expect(Math.abs(answer.output_probability[l]! - probs[c]!)).toBeLessThan(1e-5));
    });
  });
});

describe('redeploying a variation', () => {
  it('replaces the build, and the new build answers once live', async () => {
    expect((await api('POST', '/api/v1/models', { model_id: 'swap' })).status).toBe(201);
    const first = randomMlp(21);
    const second = randomMlp(22);
    const q = `?feature_names=${FEATURES.join(',')}`;
    const { deploymentId: d1 } = await deployBuild('swap', first.bytes, q);
    const row = randomRows(1, 9)[0]!;
    const ask = async () => (await api<Array<{ y: number[] }>>('POST', '/v1/swap/predict', { columns: FEATURES, index: [0], data: [row] })).body[0]!.y;
    expect(close((await ask())[0]!, first.reference(row)[0]!)).toBe(true);
    await deployBuild('swap', second.bytes, q);
    expect(close((await ask())[0]!, second.reference(row)[0]!)).toBe(true);
    const old = await api<{ status: string }>('GET', `/api/v1/deployments/${d1}`);
    expect(old.body.status).toBe('SUPERSEDED');
    const model = await api<{ live_deployment: { build_id: string; traffic: { variations: Record<string, string> } } }>('GET', '/api/v1/models/swap');
    expect(Object.keys(model.body.live_deployment.traffic.variations)).toEqual(['default']);
  });

  it('refuses a second, new variation without a deployment file', async () => {
    const build = await api<{ build_id: string }>('POST', `/api/v1/models/swap/builds?feature_names=${FEATURES.join(',')}`, randomMlp(23).bytes);
    const res = await api<{ error: { message: string } }>('POST', '/api/v1/models/swap/deployments', { build_id: build.body.build_id, variation_name: 'canary' });
    expect(res.status).toBe(400);
    expect(res.body.error.message).toMatch(/already has variation "default"/);
  });

  it('refuses a bad variation name, rule by rule', async () => {
    expect((await api('POST', '/api/v1/models', { model_id: 'names' })).status).toBe(201);
    const build = await api<{ build_id: string }>('POST', `/api/v1/models/names/builds?feature_names=${FEATURES.join(',')}`, randomMlp(24).bytes);
    const tryName = async (name: string) =>
      (await api<{ error: { message: string; param: string } }>('POST', '/api/v1/models/names/deployments', { build_id: build.body.build_id, variation_name: name })).body.error;
    expect((await tryName('Blue')).message).toMatch(/contains "B"/);
    expect((await tryName('-blue')).message).toMatch(/must start with/);
    expect((await tryName('blue.')).message).toMatch(/must end with/);
    expect((await tryName('a'.repeat(37))).message).toMatch(/37 characters; at most 36/);
    expect((await tryName('blue_green')).param).toBe('variation_name');
  });
});

async function authHeader(): Promise<string> {
  return `Bearer ${(await tokenFor(host)).token}`;
}

/** How many native calls the predict path has made, from /metrics. */
async function batchCalls(): Promise<number> {
  const text = await (await fetch(`${host.url}/metrics`, { headers: { authorization: await authHeader() } })).text();
  return text
    .split('\n')
    .filter((l) => l.startsWith('tabular_batch_rows_count'))
    .reduce((sum, l) => sum + Number(l.split(' ').at(-1)), 0);
}
