// Missing values in predict rows, end to end on the real host: null (or "NaN") reaches the model as
// NaN only where the graph declares what NaN means (an Imputer replacing NaN, a tree ensemble with
// its missing-value tracks), checked against onnxruntime-node on the same NaN inputs; everywhere
// else it is a 400 naming the row, the column and the reason, never a silent wrong answer.
import ort from 'onnxruntime-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ModelBuilder, attr, stumpRegressorAttrs } from './helpers/onnx-builder.js';
import { apiClient, waitForDeployment, type Api } from './helpers/api.js';
import { listen, startInProcessHost, tokenFor, type TestHost } from './helpers/in-process-host.js';

ort.env.logLevel = 'error';

let host: TestHost;
let api: Api;

beforeAll(async () => {
  host = await listen(await startInProcessHost());
  api = apiClient(host.url, (await tokenFor(host)).token);
});
afterAll(async () => {
  await host.close();
});

const FEATURES = ['amount', 'age', 'country'];
const ML3 = { '': 13, 'ai.onnx.ml': 3 };

async function deploy(modelId: string, bytes: Uint8Array, query = ''): Promise<void> {
  expect((await api('POST', '/api/v1/models', { model_id: modelId })).status).toBe(201);
  const build = await api<{ build_id: string }>('POST', `/api/v1/models/${modelId}/builds${query}`, bytes);
  expect(build.status, JSON.stringify(build.body)).toBe(201);
  const dep = await api<{ deployment_id: string }>('POST', `/api/v1/models/${modelId}/deployments`, { build_id: build.body.build_id });
  expect(dep.status, JSON.stringify(dep.body)).toBe(202);
  const done = await waitForDeployment(api, dep.body.deployment_id);
  expect(done.status, done.reason ?? '').toBe('LIVE');
}

type Row = Record<string, unknown>;

async function predict(modelId: string, columns: string[], data: unknown[][]) {
  return api<Row[] & { error: { code: string; message: string; param: string | null } }>('POST', `/v1/${modelId}/predict`, {
    columns,
    index: data.map((_, i) => i),
    data,
  });
}

async function expectRefused(modelId: string, columns: string[], data: unknown[][], message: string) {
  const res = await predict(modelId, columns, data);
  expect(res.status, JSON.stringify(res.body)).toBe(400);
  expect(res.body.error.code).toBe('invalid_argument');
  expect(res.body.error.param).toBe('data');
  expect(res.body.error.message).toBe(message);
}

/** A payload cell as the float onnxruntime is given: null and "NaN" are NaN, "2" is 2. */
const asFloat = (v: unknown) => (v === null || (typeof v === 'string' && /^nan$/i.test(v)) ? NaN : Number(v));

async function runOrt(bytes: Uint8Array, feeds: Record<string, ort.Tensor>): Promise<Record<string, ort.Tensor>> {
  const session = await ort.InferenceSession.create(bytes);
  try {
    return await session.run(feeds);
  } finally {
    await session.release();
  }
}

const close = (actual: number, expected: number) => Math.abs(actual - expected) <= 1e-5 + 1e-4 * Math.abs(expected);

describe('a model without missing-value handling (a linear classifier)', () => {
  const bytes = new ModelBuilder({ opsets: ML3 })
    .input('x', 'float', ['N', 3])
    .mlNode('LinearClassifier', ['x'], ['label', 'probabilities'], {
      coefficients: attr.floats([0.01, -0.02, 0.5, -0.01, 0.02, -0.5]),
      intercepts: attr.floats([0.1, -0.1]),
      classlabels_ints: [0, 1],
      post_transform: 'SOFTMAX',
    })
    .output('label', 'int64', ['N'])
    .output('probabilities', 'float', ['N', 2])
    .toBytes();

  beforeAll(() => deploy('fraud-linear', bytes, `?feature_names=${FEATURES.join(',')}`));

  it('refuses null with a 400 naming the row and the column, instead of label 0 and null probabilities', async () => {
    await expectRefused(
      'fraud-linear',
      FEATURES,
      [[null, 34, '2']],
      'data[0][0] ("amount") is null; the model declares no missing-value handling for "amount" (no Imputer or tree ensemble reads it), so send a number',
    );
    // The payload's column order, not the model's, is what the position names.
    await expectRefused(
      'fraud-linear',
      ['country', 'age', 'amount'],
      [[1, 30, 5], ['2', null, 120.5]],
      'data[1][1] ("age") is null; the model declares no missing-value handling for "age" (no Imputer or tree ensemble reads it), so send a number',
    );
  });

  it('refuses the string "NaN" the same way', async () => {
    await expectRefused(
      'fraud-linear',
      FEATURES,
      [[120.5, 34, 'nan']],
      'data[0][2] ("country") is "nan"; the model declares no missing-value handling for "country" (no Imputer or tree ensemble reads it), so send a number',
    );
  });

  it('still answers complete rows', async () => {
    const res = await predict('fraud-linear', FEATURES, [[120.5, 34, '2']]);
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    const out = await runOrt(bytes, { x: new ort.Tensor('float32', Float32Array.from([120.5, 34, 2]), [1, 3]) });
    expect(res.body[0]!.label).toBe(Number((out.label!.data as BigInt64Array)[0]));
    const probabilities = res.body[0]!.probabilities as number[];
    probabilities.forEach((p, k) => expect(close(p, (out.probabilities!.data as Float32Array)[k]!)).toBe(true));
  });
});

describe('a tree ensemble with missing-value tracks (TreeEnsembleClassifier, ai.onnx.ml 3)', () => {
  // amount <= 100 (NaN: true) ? (age <= 30 (NaN: false) ? leaf 3 : leaf 4) : (country <= 1.5 (NaN: true) ? leaf 5 : leaf 6)
  const leafProbability = { 3: 0.8, 4: 0.3, 5: 0.6, 6: 0.1 } as const;
  const leaves = [3, 4, 5, 6] as const;
  const bytes = new ModelBuilder({ opsets: ML3 })
    .input('x', 'float', ['N', 3])
    .mlNode('TreeEnsembleClassifier', ['x'], ['label', 'probabilities'], {
      nodes_treeids: [0, 0, 0, 0, 0, 0, 0],
      nodes_nodeids: [0, 1, 2, 3, 4, 5, 6],
      nodes_featureids: [0, 1, 2, 0, 0, 0, 0],
      nodes_modes: ['BRANCH_LEQ', 'BRANCH_LEQ', 'BRANCH_LEQ', 'LEAF', 'LEAF', 'LEAF', 'LEAF'],
      nodes_values: attr.floats([100, 30, 1.5, 0, 0, 0, 0]),
      nodes_truenodeids: [1, 3, 5, 0, 0, 0, 0],
      nodes_falsenodeids: [2, 4, 6, 0, 0, 0, 0],
      nodes_missing_value_tracks_true: [1, 0, 1, 0, 0, 0, 0],
      class_treeids: leaves.flatMap(() => [0, 0]),
      class_nodeids: leaves.flatMap((l) => [l, l]),
      class_ids: leaves.flatMap(() => [0, 1]),
      class_weights: attr.floats(leaves.flatMap((l) => [1 - leafProbability[l], leafProbability[l]])),
      classlabels_int64s: [0, 1],
      post_transform: 'NONE',
    })
    .output('label', 'int64', ['N'])
    .output('probabilities', 'float', ['N', 2])
    .toBytes();

  beforeAll(() => deploy('fraud-tree', bytes, `?feature_names=${FEATURES.join(',')}`));

  it('routes null and "NaN" along the missing-value tracks, as onnxruntime does', async () => {
    const rows: unknown[][] = [
      [null, 34, '2'], // amount missing -> true branch; age 34 -> leaf 4
      [50, null, 1], // age missing, its track is false -> leaf 4
      [500, 20, null], // country missing -> true branch -> leaf 5
      ['NaN', 'nan', 1], // both missing -> leaf 4
      [null, null, null], // -> leaf 4
      [50, 20, 1], // no missing value -> leaf 3
      [500, 20, 2], // -> leaf 6
    ];
    const res = await predict('fraud-tree', FEATURES, rows);
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    const out = await runOrt(bytes, { x: new ort.Tensor('float32', Float32Array.from(rows.flat().map(asFloat)), [rows.length, 3]) });
    // onnxruntime labels a binary tree classifier whose leaves vote for both classes by "second
    // score > 0" (test/tabular-executor-trees.test.ts); ours, and the rule here, is the higher one.
    const probabilities = out.probabilities!.data as Float32Array;
    res.body.forEach((row, r) => {
      expect(row.label).toBe(probabilities[r * 2 + 1]! > probabilities[r * 2]! ? 1 : 0);
      (row.probabilities as number[]).forEach((p, k) => expect(close(p, probabilities[r * 2 + k]!), `row ${r}`).toBe(true));
    });
    // The routes the comments promise, so that the comparison cannot pass on a model that ignores NaN.
    const expectedLeaves = [4, 4, 5, 4, 4, 3, 6] as const;
    res.body.forEach((row, r) => expect(close((row.probabilities as number[])[1]!, leafProbability[expectedLeaves[r]!])).toBe(true));
  });
});

describe('one input per feature, joined for a TreeEnsemble (ai.onnx.ml 5)', () => {
  // amount <= 100 (NaN: false) ? 1 : (age <= 30 (NaN: true) ? 2 : 3); leaves are 0, 1, 2.
  const bytes = new ModelBuilder({ opsets: { '': 13, 'ai.onnx.ml': 5 } })
    .input('amount', 'float', ['N', 1])
    .input('age', 'float', ['N', 1])
    .node('Concat', ['amount', 'age'], ['x'], { axis: 1 })
    .mlNode('TreeEnsemble', ['x'], ['score'], {
      nodes_featureids: [0, 1],
      nodes_splits: attr.tensor({ type: 'float', dims: [2], values: [100, 30] }),
      nodes_modes: attr.tensor({ type: 'uint8', dims: [2], values: [0, 0] }),
      nodes_truenodeids: [0, 1],
      nodes_falsenodeids: [1, 2],
      nodes_trueleafs: [1, 1],
      nodes_falseleafs: [0, 1],
      nodes_missing_value_tracks_true: [0, 1],
      tree_roots: [0],
      leaf_targetids: [0, 0, 0],
      leaf_weights: attr.tensor({ type: 'float', dims: [3], values: [1, 2, 3] }),
      n_targets: 1,
      aggregate_function: 1,
      post_transform: 0,
    })
    .output('score', 'float', ['N', 1])
    .toBytes();

  beforeAll(() => deploy('fraud-v5', bytes));

  it('routes null along the tracks through the Concat, as onnxruntime does', async () => {
    const rows: unknown[][] = [
      [50, 80], // 1
      [null, 80], // amount missing, track false -> age 80 -> 3
      [null, null], // -> 2
      [500, 'NaN'], // -> 2
    ];
    const res = await predict('fraud-v5', ['amount', 'age'], rows);
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body.map((r) => r.score)).toEqual([1, 3, 2, 2]);
    const column = (c: number) => new ort.Tensor('float32', Float32Array.from(rows.map((r) => asFloat(r[c]))), [rows.length, 1]);
    const out = await runOrt(bytes, { amount: column(0), age: column(1) });
    expect(Array.from(out.score!.data as Float32Array)).toEqual([1, 3, 2, 2]);
  });
});

describe('an Imputer in front of a linear regressor (SimpleImputer, as skl2onnx writes it)', () => {
  const imputed = [10, 40, 1];
  const coefficients = [1, 10, 100];
  const model = (replaced: number) =>
    new ModelBuilder({ opsets: ML3 })
      .input('x', 'float', ['N', 3])
      .mlNode('Imputer', ['x'], ['filled'], { imputed_value_floats: attr.floats(imputed), replaced_value_float: attr.float(replaced) })
      .mlNode('LinearRegressor', ['filled'], ['score'], { coefficients: attr.floats(coefficients), intercepts: attr.floats([0.5]) })
      .output('score', 'float', ['N', 1])
      .toBytes();
  const bytes = model(NaN);

  beforeAll(async () => {
    await deploy('fraud-imputed', bytes, `?feature_names=${FEATURES.join(',')}`);
    // An Imputer that replaces zeros gives NaN no meaning.
    await deploy('fraud-zeros', model(0), `?feature_names=${FEATURES.join(',')}`);
  });

  it('passes null and "NaN" as NaN, which the Imputer fills, as onnxruntime does', async () => {
    const rows: unknown[][] = [
      [null, 34, '2'],
      [120.5, null, 'NaN'],
      [null, null, null],
      [1, 2, 3],
    ];
    const res = await predict('fraud-imputed', FEATURES, rows);
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    const out = await runOrt(bytes, { x: new ort.Tensor('float32', Float32Array.from(rows.flat().map(asFloat)), [rows.length, 3]) });
    const scores = out.score!.data as Float32Array;
    res.body.forEach((row, r) => {
      const reference = 0.5 + rows[r]!.reduce<number>((sum, v, c) => sum + coefficients[c]! * (Number.isNaN(asFloat(v)) ? imputed[c]! : asFloat(v)), 0);
      expect(close(row.score as number, scores[r]!), `row ${r}: ${row.score} vs onnxruntime ${scores[r]}`).toBe(true);
      expect(close(row.score as number, reference), `row ${r}: ${row.score} vs ${reference}`).toBe(true);
    });
  });

  it('refuses null where the Imputer replaces another value', async () => {
    await expectRefused(
      'fraud-zeros',
      FEATURES,
      [[null, 34, '2']],
      'data[0][0] ("amount") is null; the model declares no missing-value handling for "amount" (no Imputer or tree ensemble reads it), so send a number',
    );
  });
});

describe('one input per feature: a float and a string', () => {
  // amount -> Imputer; country (string) -> LabelEncoder -> Cast; Concat -> LinearRegressor.
  const bytes = new ModelBuilder({ opsets: ML3 })
    .input('amount', 'float', ['N', 1])
    .input('country', 'string', ['N', 1])
    .mlNode('Imputer', ['amount'], ['amount_filled'], { imputed_value_floats: attr.floats([7]), replaced_value_float: attr.float(NaN) })
    .mlNode('LabelEncoder', ['country'], ['country_code'], { keys_strings: ['FR', 'DE', 'NaN'], values_int64s: [1, 2, 3], default_int64: 0 })
    .node('Cast', ['country_code'], ['country_float'], { to: 1 })
    .node('Concat', ['amount_filled', 'country_float'], ['joined'], { axis: 1 })
    .mlNode('LinearRegressor', ['joined'], ['score'], { coefficients: attr.floats([1, 1000]), intercepts: attr.floats([0]) })
    .output('score', 'float', ['N', 1])
    .toBytes();

  beforeAll(() => deploy('fraud-split', bytes));

  it('refuses null for a string feature: strings have no missing value', async () => {
    await expectRefused(
      'fraud-split',
      ['amount', 'country'],
      [[5, 'FR'], [5, null]],
      'data[1][1] ("country") is null; feature "country" has type string, which has no missing value; send a string',
    );
  });

  it('keeps "NaN" for a string feature as the text it is, and imputes a null amount', async () => {
    const rows: unknown[][] = [
      [5, 'NaN'],
      [null, 'DE'],
      ['nan', 'IT'],
    ];
    const res = await predict('fraud-split', ['amount', 'country'], rows);
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body.map((r) => r.score)).toEqual([5 + 3000, 7 + 2000, 7]);
    const out = await runOrt(bytes, {
      amount: new ort.Tensor('float32', Float32Array.from(rows.map((r) => asFloat(r[0]))), [rows.length, 1]),
      country: new ort.Tensor('string', rows.map((r) => r[1] as string), [rows.length, 1]),
    });
    expect(Array.from(out.score!.data as Float32Array)).toEqual([5 + 3000, 7 + 2000, 7]);
  });
});

describe('an input that reaches something besides its Imputer', () => {
  // x is imputed for the score, but also passed to an output untouched: its NaN would show there.
  const bytes = new ModelBuilder({ opsets: ML3 })
    .input('x', 'float', ['N', 3])
    .mlNode('Imputer', ['x'], ['filled'], { imputed_value_floats: attr.floats([0]), replaced_value_float: attr.float(NaN) })
    .mlNode('LinearRegressor', ['filled'], ['score'], { coefficients: attr.floats([1, 1, 1]), intercepts: attr.floats([0]) })
    .node('Identity', ['x'], ['echo'])
    .output('score', 'float', ['N', 1])
    .output('echo', 'float', ['N', 3])
    .toBytes();

  beforeAll(() => deploy('fraud-echo', bytes, `?feature_names=${FEATURES.join(',')}`));

  it('is refused: not every path of the value handles NaN', async () => {
    await expectRefused(
      'fraud-echo',
      FEATURES,
      [[1, 2, 3], [1, 'NaN', 3]],
      'data[1][1] ("age") is "NaN"; the model declares no missing-value handling for "age" (no Imputer or tree ensemble reads it), so send a number',
    );
  });
});

describe('an integer feature', () => {
  const bytes = new ModelBuilder({ opsets: ML3 })
    .input('visits', 'int64', ['N', 1])
    .node('Cast', ['visits'], ['v'], { to: 1 })
    .mlNode('TreeEnsembleRegressor', ['v'], ['score'], stumpRegressorAttrs(0, 3))
    .output('score', 'float', ['N', 1])
    .toBytes();

  beforeAll(() => deploy('visits', bytes));

  it('has no missing value even in front of a tree', async () => {
    await expectRefused('visits', ['visits'], [[null]], 'data[0][0] ("visits") is null; feature "visits" has type int64, which has no missing value; send a number');
    const res = await predict('visits', ['visits'], [[2], [5]]);
    expect(res.status).toBe(200);
    expect(res.body.map((r) => r.score)).toEqual([1, 2]);
  });
});
