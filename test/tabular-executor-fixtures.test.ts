// The real ONNX files under ../shared/fixtures/onnx through the native executor:
// - every onnx_backend_node / onnx_backend_misc case against its output_*.pb;
// - every sklearn-onnx model the operator table covers against onnxruntime-node (on the
//   fixture's *.data.json inputs, or seeded random inputs of the declared width) and against
//   *.expected.json (scikit-learn's own predictions) where present;
// - the ACAS Xu MLP against reference_outputs.json.
// Float tolerance 1e-5 + 1e-4 * |expected| (scikit-learn's float64 probabilities: 1e-5 + 1e-4 too,
// the models run in float32); labels exactly. Skipped, with a message, when ../shared is absent:
// the behaviours are also covered by the tests that build their own models.
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

import { describe, expect, it } from 'vitest';

import type { TabularInput, TabularInputData } from '../src/tabular/executor/index.js';
import { findOperator, normalize } from '../src/tabular/onnx/index.js';
import { parseOnnxModel, parseTensorProto } from '../src/tabular/onnx/parse.js';
import type { OnnxModel } from '../src/tabular/onnx/types.js';
import { randomFloats, randomInts } from './helpers/tabular-data.js';
import { compareWithOrt, compileBytes, expectClose } from './helpers/tabular-executor.js';
import { rng } from './helpers/random.js';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const FIXTURES = path.resolve(ROOT, '../shared/fixtures/onnx');
const present = fs.existsSync(FIXTURES);
if (!present) console.warn(`skipping the tabular executor fixture tests: ${FIXTURES} is absent`);

const rel = (f: string) => path.relative(FIXTURES, f);
const supported = (m: OnnxModel) => m.graph.nodes.every((n) => findOperator(n.domain, n.opType) !== undefined);

function walk(dir: string): string[] {
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const p = path.join(dir, e.name);
    return e.isDirectory() ? walk(p) : [p];
  });
}

const files = present ? walk(FIXTURES).sort() : [];

describe.skipIf(!present)(present ? 'ONNX backend test cases' : 'ONNX backend test cases (skipped: ../shared/fixtures/onnx is absent)', () => {
  const cases = files.filter((f) => /onnx_backend_(node|misc)/.test(f) && f.endsWith('model.onnx'));

  it('finds the backend cases, and the executor supports every one', () => {
    expect(cases.length).toBeGreaterThanOrEqual(17);
    for (const f of cases) expect(supported(parseOnnxModel(fs.readFileSync(f))), rel(f)).toBe(true);
  });

  it('reproduces every output_*.pb', () => {
    const passed: string[] = [];
    for (const f of cases) {
      const model = parseOnnxModel(fs.readFileSync(f));
      const compiled = compileBytes(fs.readFileSync(f));
      const dir = path.dirname(f);
      for (const set of fs.readdirSync(dir).filter((d) => d.startsWith('test_data_set_'))) {
        const setDir = path.join(dir, set);
        const inputs: TabularInput[] = fs
          .readdirSync(setDir)
          .filter((n) => /^input_\d+\.pb$/.test(n))
          .map((n) => {
            const t = parseTensorProto(fs.readFileSync(path.join(setDir, n)));
            const index = Number(/input_(\d+)/.exec(n)![1]);
            return { name: model.graph.inputs[index]!.name, dims: t.dims, data: t.data as TabularInputData };
          });
        const outputs = compiled.runSync(inputs);
        for (const n of fs.readdirSync(setDir).filter((x) => /^output_\d+\.pb$/.test(x))) {
          const want = parseTensorProto(fs.readFileSync(path.join(setDir, n)));
          const index = Number(/output_(\d+)/.exec(n)![1]);
          const got = outputs[index]!;
          expect(got.dataType, `${rel(f)} ${n}`).toBe(want.dataType);
          expectClose(got, { dims: want.dims, data: want.data as ArrayLike<number> }, undefined, `${rel(f)} ${n}`);
        }
      }
      compiled.dispose();
      passed.push(rel(path.dirname(f)));
    }
    console.log(`backend cases reproduced (${passed.length}):\n  ${passed.join('\n  ')}`);
    expect(passed.length).toBe(cases.length);
  });
});

// ---- sklearn-onnx ----

interface JsonArray {
  dtype: string;
  shape: number[];
  data: unknown[];
}

const flat = (data: unknown[]): unknown[] => data.flatMap((x) => (Array.isArray(x) ? flat(x) : [x]));

/** The model's largest feature index + 1 read from its tree nodes (for inputs declared [?, ?]). */
function treeWidth(m: OnnxModel): number {
  let max = -1;
  for (const n of normalize(m).graph.nodes) {
    const a = n.attributes.nodes_featureids;
    if (a?.type === 'ints') for (const v of a.value) max = Math.max(max, v);
  }
  return max + 1;
}

/** Seeded inputs for every graph input: floats (a few NaN) and strings from a small vocabulary. */
function randomInputs(m: OnnxModel, n: number, seed: number): TabularInput[] {
  return m.graph.inputs.map((info, k) => {
    if (info.kind !== 'tensor') throw new Error(`non-tensor input ${info.name}`);
    const last = info.shape?.[info.shape.length - 1];
    const width = info.shape && info.shape.length > 1 ? (typeof last === 'number' ? last : treeWidth(m)) : 1;
    const dims = info.shape && info.shape.length > 1 ? [n, width] : [n];
    const size = n * width;
    if (info.elemType === 'string') {
      const words = ['1', '2', '3', 'male', 'female', 'S', 'C', 'Q', 'unknown'];
      return { name: info.name, dims, data: randomInts(size, seed + k, 0, words.length - 1).map((i) => words[i]!) };
    }
    const x = randomFloats(size, seed + k, -3, 3);
    const r = rng(seed + 100 + k);
    for (let i = 0; i < x.length; i++) if (r() < 0.05) x[i] = NaN;
    if (info.elemType === 'double') return { name: info.name, dims, data: Float64Array.from(x) };
    return { name: info.name, dims, data: x };
  });
}

const REFUSED = new Set(['sklearn-onnx_docs_examples/predictable_tsne.onnx']);

describe.skipIf(!present)(present ? 'sklearn-onnx models' : 'sklearn-onnx models (skipped: ../shared/fixtures/onnx is absent)', () => {
  const models = files.filter((f) => /sklearn-onnx/.test(f) && f.endsWith('.onnx'));

  it('refuses exactly the models with operators outside the table (Scan)', () => {
    for (const f of models) {
      const m = parseOnnxModel(fs.readFileSync(f));
      expect(supported(m), rel(f)).toBe(!REFUSED.has(rel(f)));
    }
  });

  it('agrees with onnxruntime on every supported model (fixture inputs, then random batches of 1, 7 and 129)', async () => {
    const checked: string[] = [];
    for (const f of models.filter((x) => !REFUSED.has(rel(x)))) {
      const bytes = fs.readFileSync(f);
      const m = parseOnnxModel(bytes);
      const dataFile = f.replace(/\.model\.onnx$/, '.data.json');
      if (dataFile !== f && fs.existsSync(dataFile)) {
        const d = JSON.parse(fs.readFileSync(dataFile, 'utf8')) as JsonArray;
        const input = m.graph.inputs[0]!;
        await compareWithOrt(bytes, [{ name: input.name, dims: d.shape, data: Float32Array.from(flat(d.data) as number[]) }], undefined, rel(f));
      }
      // example1 broadcasts its input against a [2, 2] constant: only batches of 1 and 2 fit.
      const batches = rel(f).endsWith('example1.onnx') ? [1, 2] : [1, 7, 129];
      for (const n of batches) await compareWithOrt(bytes, randomInputs(m, n, n), undefined, `${rel(f)} N=${n}`);
      checked.push(rel(f));
    }
    console.log(`sklearn-onnx models agreeing with onnxruntime (${checked.length}):\n  ${checked.join('\n  ')}`);
    expect(checked.length).toBe(models.length - REFUSED.size);
  });

  it("reproduces scikit-learn's predictions in *.expected.json", () => {
    const checked: string[] = [];
    for (const f of models.filter((x) => x.endsWith('.model.onnx') && !REFUSED.has(rel(x)))) {
      const expectedFile = f.replace(/\.model\.onnx$/, '.expected.json');
      if (!fs.existsSync(expectedFile)) continue;
      const m = parseOnnxModel(fs.readFileSync(f));
      const d = JSON.parse(fs.readFileSync(f.replace(/\.model\.onnx$/, '.data.json'), 'utf8')) as JsonArray;
      const raw = JSON.parse(fs.readFileSync(expectedFile, 'utf8')) as JsonArray | JsonArray[];
      const expected = Array.isArray(raw) ? raw : [raw];
      const outputs = compileBytes(fs.readFileSync(f)).runSync([
        { name: m.graph.inputs[0]!.name, dims: d.shape, data: Float32Array.from(flat(d.data) as number[]) },
      ]);
      expected.forEach((e, k) => {
        let got = outputs[k]!;
        const values = flat(e.data);
        // A binary SVC's decision_function is one column; its SVMClassifier scores [-d, d] hold it first.
        if (got.dims.length === 2 && got.dims[1] === 2 && e.shape.length === 1 && values.length === got.dims[0]) {
          got = { ...got, dims: [values.length], data: (got.data as Float32Array).filter((_, i) => i % 2 === 0) };
        }
        // Shapes differ in rank only ([N] vs [N, 1]); labels come back as int64 or strings.
        expect(got.data.length, `${rel(f)} output ${k}`).toBe(values.length);
        if (e.dtype.startsWith('<U') || e.dtype === 'object') {
          expect(Array.from(got.data as string[]), `${rel(f)} labels`).toEqual(values);
        } else if (e.dtype.startsWith('int')) {
          expect(Array.from(got.data as BigInt64Array, Number), `${rel(f)} labels`).toEqual(values);
        } else {
          expectClose(
            { ...got, dims: [values.length], data: Float32Array.from(got.data as Float32Array) },
            { dims: [values.length], data: values as number[] },
            { abs: 1e-5, rel: 1e-4 },
            `${rel(f)} output ${k}`,
          );
        }
      });
      checked.push(rel(f));
    }
    console.log(`sklearn-onnx expected outputs reproduced (${checked.length}):\n  ${checked.join('\n  ')}`);
    expect(checked.length).toBe(12);
  });
});

describe.skipIf(!present)(present ? 'ACAS Xu MLP' : 'ACAS Xu MLP (skipped: ../shared/fixtures/onnx is absent)', () => {
  it('matches reference_outputs.json (onnxruntime 1.30), case by case and as one batch', () => {
    const ref = JSON.parse(fs.readFileSync(path.join(FIXTURES, 'mlp/reference_outputs.json'), 'utf8')) as Record<
      string,
      { input_name: string; output_name: string; cases: { input: number[]; output: number[] }[] }
    >;
    const entry = ref['ACASXU_run2a_1_2_batch_2000.onnx']!;
    const model = compileBytes(fs.readFileSync(path.join(FIXTURES, 'mlp/ACASXU_run2a_1_2_batch_2000.onnx')));
    for (const c of entry.cases) {
      const [out] = model.runSync([{ name: entry.input_name, dims: [1, 1, 1, 5], data: Float32Array.from(c.input) }]);
      expect(out!.name).toBe(entry.output_name);
      expectClose(out!, { dims: [1, 5], data: c.output });
    }
    // The declared batch of 1 is the converter's; the graph runs any batch.
    const n = entry.cases.length;
    const [batch] = model.runSync([{ name: entry.input_name, dims: [n, 1, 1, 5], data: Float32Array.from(entry.cases.flatMap((c) => c.input)) }]);
    expectClose(batch!, { dims: [n, 5], data: entry.cases.flatMap((c) => c.output) });
  });
});
