// The real ONNX files under ../shared/fixtures/onnx (ONNX backend tests, sklearn-onnx conversions,
// a MATLAB-exported MLP): every one parses, its operators are the ones listed here, every model
// whose operators the table covers validates and normalises, and the serialized TensorProtos
// (input_*.pb / output_*.pb) decode to the types and shapes the models declare. Skipped, with a
// message, when ../shared is absent; the behaviours checked here are also covered by the tests that
// build their own models.
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { deriveFeatures } from '../src/tabular/onnx/features.js';
import { findOperator, normalize, UnsupportedOperatorError, validateSupported } from '../src/tabular/onnx/index.js';
import { parseOnnxModel, parseTensorProto, qualifiedOpType } from '../src/tabular/onnx/parse.js';
import type { OnnxModel, OnnxTensor } from '../src/tabular/onnx/types.js';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const FIXTURES = path.resolve(ROOT, '../shared/fixtures/onnx');
const present = fs.existsSync(FIXTURES);
if (!present) console.warn(`skipping the ONNX fixture tests: ${FIXTURES} is absent`);

function walk(dir: string): string[] {
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const p = path.join(dir, e.name);
    return e.isDirectory() ? walk(p) : [p];
  });
}

const files = present ? walk(FIXTURES).sort() : [];
const modelFiles = files.filter((f) => f.endsWith('.onnx'));
const rel = (f: string) => path.relative(FIXTURES, f);
const family = (f: string) => rel(f).split(path.sep)[0]!;
const models = new Map<string, OnnxModel>();
const model = (f: string): OnnxModel => {
  let m = models.get(f);
  if (!m) {
    m = parseOnnxModel(fs.readFileSync(f));
    models.set(f, m);
  }
  return m;
};
const fixture = (p: string) => path.join(FIXTURES, p);

/** Operator types per fixture family (qualified; ops inside subgraphs in brackets). */
const EXPECTED_OPS: Record<string, string[]> = {
  mlp: ['Add', 'Flatten', 'MatMul', 'Relu', 'Sub'],
  onnx_backend_misc: ['Gemm', 'MatMul', 'Relu', 'Transpose'],
  onnx_backend_node: [
    'Gemm',
    'Relu',
    'Sigmoid',
    'Softmax',
    'ai.onnx.ml.ArrayFeatureExtractor',
    'ai.onnx.ml.Binarizer',
    'ai.onnx.ml.LabelEncoder',
    'ai.onnx.ml.TreeEnsemble',
  ],
  'sklearn-onnx_docs_examples': [
    'Add',
    'Cast',
    'Concat',
    'Flatten',
    'Mul',
    'ReduceMean',
    'Reshape',
    'Scan',
    'Sqrt',
    'TopK',
    'Transpose',
    '[Identity]',
    '[ReduceSumSquare]',
    '[Sub]',
    'ai.onnx.ml.ArrayFeatureExtractor',
    'ai.onnx.ml.Imputer',
    'ai.onnx.ml.LinearClassifier',
    'ai.onnx.ml.Normalizer',
    'ai.onnx.ml.Scaler',
    'ai.onnx.ml.TreeEnsembleClassifier',
    'ai.onnx.ml.ZipMap',
  ],
  'sklearn-onnx_tests_2018': [
    'ai.onnx.ml.LinearClassifier',
    'ai.onnx.ml.LinearRegressor',
    'ai.onnx.ml.Normalizer',
    'ai.onnx.ml.SVMClassifier',
    'ai.onnx.ml.Scaler',
    'ai.onnx.ml.TreeEnsembleClassifier',
    'ai.onnx.ml.TreeEnsembleRegressor',
    'ai.onnx.ml.ZipMap',
  ],
  'sklearn-onnx_tests_datasets': ['ai.onnx.ml.TreeEnsembleClassifier'],
};

/** The fixtures the engine cannot run, with the refusal. */
const REFUSED: Record<string, string> = {
  'sklearn-onnx_docs_examples/predictable_tsne.onnx': 'operator "Scan" (node "Sc_Scan", opset ai.onnx 12) is not supported',
};

function opsOf(m: OnnxModel): string[] {
  const ops = new Set<string>();
  for (const n of m.graph.nodes) {
    ops.add(qualifiedOpType(n.domain, n.opType));
    for (const a of Object.values(n.attributes)) {
      if (a.type === 'graph') for (const op of a.value.opTypes) ops.add(`[${op}]`);
    }
  }
  return [...ops];
}

function dimsMatch(declared: readonly (number | string | null)[] | null, dims: readonly number[]): boolean {
  if (declared === null) return true;
  return declared.length === dims.length && declared.every((d, k) => typeof d !== 'number' || d === dims[k]);
}

describe.skipIf(!present)(present ? 'ONNX fixtures' : 'ONNX fixtures (skipped: ../shared/fixtures/onnx is absent)', () => {
  it('finds the fixture models', () => {
    expect(modelFiles.length).toBeGreaterThanOrEqual(40);
  });

  it('parses every model', () => {
    for (const f of modelFiles) {
      const m = model(f);
      expect(m.graph.nodes.length, rel(f)).toBeGreaterThan(0);
      expect(m.graph.inputs.length, rel(f)).toBeGreaterThan(0);
      expect(m.graph.outputs.length, rel(f)).toBeGreaterThan(0);
    }
  });

  it('lists the operators each family uses', () => {
    const byFamily: Record<string, Set<string>> = {};
    const byModel: Record<string, string[]> = {};
    for (const f of modelFiles) {
      const ops = opsOf(model(f));
      byModel[rel(f)] = ops;
      for (const op of ops) (byFamily[family(f)] ??= new Set()).add(op);
    }
    const sorted = Object.fromEntries(Object.entries(byFamily).map(([k, v]) => [k, [...v].sort()]));
    console.log(
      'ONNX fixture operators:\n' +
        Object.entries(byModel)
          .map(([k, v]) => `  ${k}: ${v.join(', ')}`)
          .join('\n'),
    );
    expect(sorted).toEqual(EXPECTED_OPS);
  });

  it('validates every model whose operators the table covers, and refuses the others by name', () => {
    for (const f of modelFiles) {
      const m = model(f);
      const covered = m.graph.nodes.every((n) => findOperator(n.domain, n.opType) !== undefined);
      const refusal = REFUSED[rel(f)];
      expect(covered, rel(f)).toBe(refusal === undefined);
      if (refusal === undefined) {
        expect(() => validateSupported(m), rel(f)).not.toThrow();
      } else {
        expect(() => validateSupported(m), rel(f)).toThrow(UnsupportedOperatorError);
        expect(() => validateSupported(m), rel(f)).toThrow(refusal);
      }
    }
  });

  it('decodes every serialized TensorProto with the type and shape its model declares', () => {
    const sets = files.filter((f) => /test_data_set_\d+$/.test(path.dirname(f)) && f.endsWith('.pb'));
    expect(sets.length).toBeGreaterThanOrEqual(40);
    for (const f of sets) {
      const t = parseTensorProto(fs.readFileSync(f));
      const m = model(path.join(path.dirname(path.dirname(f)), 'model.onnx'));
      const [, kind, index] = /(input|output)_(\d+)\.pb$/.exec(f)!;
      const info = (kind === 'input' ? m.graph.inputs : m.graph.outputs)[Number(index)];
      expect(info?.kind, rel(f)).toBe('tensor');
      if (info?.kind !== 'tensor') continue;
      expect(t.dataType, rel(f)).toBe(info.elemType);
      expect(dimsMatch(info.shape, t.dims), `${rel(f)}: [${t.dims.join(', ')}]`).toBe(true);
      expect(t.data.length, rel(f)).toBe(t.dims.reduce((a, b) => a * b, 1));
    }
  });

  it('decodes the backend-test tensors exactly', () => {
    const le = parseTensorProto(
      fs.readFileSync(fixture('onnx_backend_node/test_ai_onnx_ml_label_encoder_tensor_mapping/test_data_set_0/input_0.pb')),
    );
    expect(le).toMatchObject({ dataType: 'string', dims: [5], data: ['a', 'b', 'd', 'c', 'g'] });
    const out = parseTensorProto(
      fs.readFileSync(fixture('onnx_backend_node/test_ai_onnx_ml_label_encoder_tensor_mapping/test_data_set_0/output_0.pb')),
    );
    expect(out).toMatchObject({ dataType: 'int16', dims: [5], data: Int32Array.of(0, 1, 42, 2, 42) });
    const indices = parseTensorProto(
      fs.readFileSync(fixture('onnx_backend_node/test_ai_onnx_ml_array_feature_extractor/test_data_set_0/input_1.pb')),
    );
    expect(indices).toMatchObject({ dataType: 'int64', dims: [2], data: BigInt64Array.of(0n, 1n) });
    const tree = parseTensorProto(
      fs.readFileSync(fixture('onnx_backend_node/test_ai_onnx_ml_tree_ensemble_single_tree/test_data_set_0/output_0.pb')),
    );
    expect(tree.dataType).toBe('double');
    expect(tree.data).toBeInstanceOf(Float64Array);
  });

  it('normalises the fixtures into the canonical forms', () => {
    const gemm6 = normalize(model(fixture('onnx_backend_misc/pytorch-converted/test_Linear/model.onnx')));
    expect(gemm6.graph.nodes[0]).toMatchObject({
      opType: 'Gemm',
      version: 6,
      attributes: {
        alpha: { type: 'float', value: 1 },
        beta: { type: 'float', value: 1 },
        transA: { type: 'int', value: 0 },
        transB: { type: 'int', value: 1 },
      },
    });
    expect(gemm6.graph.nodes[0]!.attributes.broadcast).toBeUndefined();

    const le = normalize(model(fixture('onnx_backend_node/test_ai_onnx_ml_label_encoder_tensor_mapping/model.onnx')));
    expect(Object.keys(le.graph.nodes[0]!.attributes).sort()).toEqual(['default_tensor', 'keys_tensor', 'values_tensor']);
    expect((le.graph.nodes[0]!.attributes.keys_tensor!.value as OnnxTensor).data).toEqual(['a', 'b', 'c']);

    const te = normalize(model(fixture('onnx_backend_node/test_ai_onnx_ml_tree_ensemble_set_membership/model.onnx')));
    expect(te.graph.nodes[0]!.attributes.nodes_modes).toEqual({
      type: 'strings',
      value: ['BRANCH_LEQ', 'BRANCH_MEMBER', 'BRANCH_MEMBER'],
    });

    const titanic = normalize(model(fixture('sklearn-onnx_docs_examples/pipeline_titanic_numerical.onnx')));
    expect(titanic.graph.nodes.filter((n) => n.opType === 'Cast').map((n) => n.attributes.to)).toEqual([
      { type: 'string', value: 'float' },
      { type: 'string', value: 'float' },
    ]);
    expect(titanic.graph.initializers).toEqual([]); // the unused shape_tensor is dropped

    const lgbm = normalize(model(fixture('sklearn-onnx_docs_examples/pipeline_lightgbm.onnx')));
    const tree = lgbm.graph.nodes.find((n) => n.opType === 'TreeEnsembleClassifier')!;
    const count = (tree.attributes.nodes_nodeids!.value as number[]).length;
    expect((tree.attributes.nodes_missing_value_tracks_true!.value as number[]).length).toBe(count);
    expect(tree.attributes.nodes_hitrates).toBeUndefined();
    expect(tree.attributes.post_transform).toEqual({ type: 'string', value: 'SOFTMAX' });

    const acas = normalize(model(fixture('mlp/ACASXU_run2a_1_2_batch_2000.onnx')));
    expect(acas.graph.inputs.map((i) => i.name)).toEqual(['input']);
    expect(acas.graph.initializers).toHaveLength(15);
  });

  it('derives feature names from the fixtures, or asks for them', () => {
    const titanic = deriveFeatures(model(fixture('sklearn-onnx_docs_examples/pipeline_titanic_numerical.onnx')));
    expect(titanic.features.map((f) => [f.name, f.elemType])).toEqual([
      ['pclass', 'string'],
      ['sex', 'string'],
      ['age', 'float'],
      ['fare', 'float'],
      ['embarked', 'string'],
    ]);
    expect(titanic.outputs).toEqual([{ name: 'variable1', graphOutput: 'variable1', info: { name: 'variable1', kind: 'unknown' } }]);

    const iris = model(fixture('sklearn-onnx_docs_examples/rf_iris.onnx'));
    expect(() => deriveFeatures(iris)).toThrow(
      'the model\'s input "float_input" of shape [?, 4] does not name its 4 features; pass --feature-names with 4 comma-separated names',
    );
    const named = deriveFeatures(iris, {
      featureNames: ['sepal_length', 'sepal_width', 'petal_length', 'petal_width'],
      outputNames: ['label', 'probabilities'],
    });
    expect(named.features.map((f) => f.column)).toEqual([0, 1, 2, 3]);
    expect(named.outputs.map((o) => [o.name, o.graphOutput, o.info.kind])).toEqual([
      ['label', 'output_label', 'tensor'],
      ['probabilities', 'output_probability', 'sequence-map'],
    ]);

    const treecl = model(fixture('sklearn-onnx_tests_datasets/treecl.onnx'));
    expect(() => deriveFeatures(treecl)).toThrow(
      'the model\'s input "input" of shape [?, ?] does not say how many features it takes; pass --feature-names with one name per feature',
    );
    expect(deriveFeatures(treecl, { featureNames: ['a', 'b', 'c'] }).inputs[0]!.width).toBe(3);

    const acas = deriveFeatures(model(fixture('mlp/ACASXU_run2a_1_2_batch_2000.onnx')), {
      featureNames: ['rho', 'theta', 'psi', 'v_own', 'v_int'],
    });
    expect(acas.inputs[0]).toMatchObject({ name: 'input', rank: 4, width: 5, batchSize: 1 });
    const reference = JSON.parse(fs.readFileSync(fixture('mlp/reference_outputs.json'), 'utf8')) as Record<
      string,
      { input_name: string; input_shape: number[]; output_name: string; cases: { input: number[]; output: number[] }[] }
    >;
    const ref = reference['ACASXU_run2a_1_2_batch_2000.onnx']!;
    expect(ref.input_name).toBe(acas.inputs[0]!.name);
    expect(ref.input_shape).toEqual(acas.inputs[0]!.shape);
    expect(ref.output_name).toBe(acas.outputs[0]!.graphOutput);
    for (const c of ref.cases) expect(c.input).toHaveLength(acas.features.length);
  });

  it('the sklearn test data fits the models\' inputs and outputs', () => {
    const dir = fixture('sklearn-onnx_tests_2018');
    for (const f of fs.readdirSync(dir).filter((n) => n.endsWith('.model.onnx'))) {
      const base = f.replace(/\.model\.onnx$/, '');
      const m = model(path.join(dir, f));
      const data = JSON.parse(fs.readFileSync(path.join(dir, `${base}.data.json`), 'utf8')) as { shape: number[] };
      const width = data.shape[1]!;
      const schema = deriveFeatures(m, { featureNames: Array.from({ length: width }, (_, k) => `f${k}`) });
      expect(schema.features, base).toHaveLength(width);
      const expected = JSON.parse(fs.readFileSync(path.join(dir, `${base}.expected.json`), 'utf8')) as unknown;
      const outputs = Array.isArray(expected) ? expected.length : 1;
      expect(outputs, base).toBe(m.graph.outputs.length);
    }
  });
});
