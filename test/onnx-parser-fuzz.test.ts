// Fuzzes the TypeScript half of the tabular upload path, which libFuzzer (scripts/fuzz/) cannot
// reach: the bytes of an uploaded .onnx file through what the host does with a build —
// parseOnnxModel, normalize, deriveFeatures + inputsHandlingMissingValues (prepareModel in
// src/realtime/builds.ts), compileTabularModel (the registry's load, src/realtime/registry.ts) and
// one run on a small random batch (the predict path's model.run).
//
// Inputs: seeds written with test/helpers/onnx-builder.ts (several operator families) and, when
// ../shared is present, the .onnx fixtures there; mutated at the byte level (flips, truncation,
// inserted random bytes, splices of two models, huge varint lengths, repeated chunks) and at the
// structure level (the decoded ModelProto edited and re-encoded with the parser's own protobufjs
// types: huge / negative dims, wrong data types, dropped initializers, renamed values, attribute
// type swaps and hostile attribute values, other operators and opsets), and both.
//
// The invariant, per input: it succeeds, or it throws OnnxModelError (UnsupportedOperatorError
// included, tallied under its own name) or an addon error with a `code` at the stage that may raise it, with a non-empty
// message; never another error (a TypeError or RangeError from inside the parser), never more than
// 2 s for one input, never a crash of the process. The figures are printed once at the end.
import fs from 'node:fs';
import path from 'node:path';
import fc from 'fast-check';
import { afterAll, describe, expect, it } from 'vitest';

import { nativeErrorCode } from '../src/native/errors.js';
import { compileTabularModel, type TabularInput, type TabularModel } from '../src/tabular/executor/index.js';
import {
  deriveFeatures,
  inputsHandlingMissingValues,
  normalize,
  OnnxModelError,
  parseOnnxModel,
} from '../src/tabular/onnx/index.js';
import { ModelProto } from '../src/tabular/onnx/proto.js';
import { attr, encodeModelProto, mlpModel, ModelBuilder, stumpRegressorAttrs, treeRegressorModel } from './helpers/onnx-builder.js';
import { rng } from './helpers/random.js';

const SEED = 20261125;
const CASE_LIMIT_MS = 2000;
const ML = { '': 13, 'ai.onnx.ml': 1 };

// ---- seeds ----

const SEEDS: Record<string, () => Uint8Array> = {
  mlp: () => mlpModel().toBytes(),
  'mlp opset 7': () => mlpModel(7).toBytes(),
  'tree regressor': () => treeRegressorModel().toBytes(),
  'tree classifier + ZipMap': () =>
    new ModelBuilder({ opsets: ML })
      .input('x', 'float', ['N', 2])
      .mlNode('TreeEnsembleClassifier', ['x'], ['label', 'probs'], {
        nodes_treeids: [0, 0, 0],
        nodes_nodeids: [0, 1, 2],
        nodes_featureids: [1, 0, 0],
        nodes_modes: ['BRANCH_LEQ', 'LEAF', 'LEAF'],
        nodes_values: attr.floats([0.5, 0, 0]),
        nodes_truenodeids: [1, 0, 0],
        nodes_falsenodeids: [2, 0, 0],
        class_ids: [0, 1],
        class_nodeids: [1, 2],
        class_treeids: [0, 0],
        class_weights: attr.floats([1, 1]),
        classlabels_int64s: [0, 1],
      })
      .mlNode('ZipMap', ['probs'], ['map'], { classlabels_int64s: [0, 1] })
      .output('label', 'int64', ['N'])
      .sequenceMapOutput('map', 'int64')
      .toBytes(),
  'linear classifier, string labels': () =>
    new ModelBuilder({ opsets: ML })
      .input('x', 'float', ['N', 3])
      .mlNode('LinearClassifier', ['x'], ['label', 'scores'], {
        coefficients: attr.floats([0.1, 0.2, 0.3, -0.1, -0.2, -0.3]),
        intercepts: attr.floats([0.5, -0.5]),
        classlabels_strings: ['no', 'yes'],
        post_transform: 'LOGISTIC',
      })
      .output('label', 'string', ['N'])
      .output('scores', 'float', ['N', 2])
      .toBytes(),
  'scaler, normalizer, linear regressor': () =>
    new ModelBuilder({ opsets: ML })
      .input('x', 'double', ['N', 3])
      .mlNode('Scaler', ['x'], ['s'], { offset: attr.floats([0.5, 1, 1.5]), scale: attr.floats([2, 2, 2]) })
      .mlNode('Normalizer', ['s'], ['n'], { norm: 'L2' })
      .mlNode('LinearRegressor', ['n'], ['y'], { coefficients: attr.floats([1, -1, 0.5]), intercepts: attr.floats([0.25]) })
      .output('y', 'float', ['N', 1])
      .toBytes(),
  'imputer + binarizer': () =>
    new ModelBuilder({ opsets: ML })
      .input('x', 'float', ['N', 2])
      .mlNode('Imputer', ['x'], ['i'], { imputed_value_floats: attr.floats([0, 1]), replaced_value_float: attr.float(NaN) })
      .mlNode('Binarizer', ['i'], ['y'], { threshold: attr.float(0.5) })
      .output('y', 'float', ['N', 2])
      .toBytes(),
  'label encoder, one-hot': () =>
    new ModelBuilder({ opsets: { '': 13, 'ai.onnx.ml': 2 } })
      .input('c', 'string', ['N', 1])
      .mlNode('LabelEncoder', ['c'], ['k'], { keys_strings: ['a', 'cat', 'dog'], values_int64s: [0, 1, 2], default_int64: -1 })
      .mlNode('OneHotEncoder', ['k'], ['y'], { cats_int64s: [0, 1, 2], zeros: 1 })
      .output('y', 'float', ['N', 1, 3])
      .toBytes(),
  'svm classifier': () =>
    new ModelBuilder({ opsets: ML })
      .input('x', 'float', ['N', 2])
      .mlNode('SVMClassifier', ['x'], ['label', 'scores'], {
        kernel_type: 'RBF',
        kernel_params: attr.floats([0.5, 0, 3]),
        vectors_per_class: [1, 1],
        support_vectors: attr.floats([0, 0, 1, 1]),
        coefficients: attr.floats([1, -1]),
        rho: attr.floats([0.1]),
        classlabels_ints: [0, 1],
      })
      .output('label', 'int64', ['N'])
      .output('scores', 'float', ['N', 2])
      .toBytes(),
  'shape operators': () =>
    new ModelBuilder({ opsets: { '': 13 } })
      .input('x', 'float', ['N', 6])
      .initializer('shape', 'int64', [3], [0, 2, 3])
      .initializer('axes', 'int64', [1], [1])
      .node('Reshape', ['x', 'shape'], ['r'])
      .node('Transpose', ['r'], ['t'], { perm: [0, 2, 1] })
      .node('Flatten', ['t'], ['f'], { axis: 1 })
      .node('Unsqueeze', ['f', 'axes'], ['u'])
      .node('Squeeze', ['u', 'axes'], ['s'])
      .node('Concat', ['s', 'x'], ['y'], { axis: 1 })
      .output('y', 'float', ['N', 12])
      .toBytes(),
  'elementwise + cast + constant': () =>
    new ModelBuilder({ opsets: { '': 13 } })
      .input('x', 'int64', ['N', 3])
      .node('Constant', [], ['k'], { value: attr.tensor({ type: 'float', dims: [3], values: [1, 2, 3] }) })
      .node('Cast', ['x'], ['xf'], { to: 1 })
      .node('Mul', ['xf', 'k'], ['m'])
      .node('Clip', ['m'], ['c'])
      .node('LeakyRelu', ['c'], ['l'], { alpha: attr.float(0.1) })
      .node('Tanh', ['l'], ['t'])
      .node('Exp', ['t'], ['e'])
      .node('Log', ['e'], ['y'])
      .output('y', 'float', ['N', 3])
      .toBytes(),
  'matmul + batchnorm + softmax': () =>
    new ModelBuilder({ opsets: { '': 13 } })
      .input('x', 'float', ['N', 2])
      .initializer('W', 'float', [2, 3], [1, 2, 3, 4, 5, 6], true)
      .initializer('scale', 'float', [3], [1, 1, 1])
      .initializer('bias', 'float', [3], [0, 0, 0])
      .initializer('mean', 'float', [3], [0, 1, 2])
      .initializer('var', 'float', [3], [1, 1, 1])
      .node('MatMul', ['x', 'W'], ['m'])
      .node('BatchNormalization', ['m', 'scale', 'bias', 'mean', 'var'], ['b'])
      .node('Softmax', ['b'], ['y'], { axis: 1 })
      .output('y', 'float', ['N', 3])
      .toBytes(),
  'array feature extractor + stump': () =>
    new ModelBuilder({ opsets: ML })
      .input('x', 'float', ['N', 4])
      .initializer('idx', 'int64', [2], [3, 1])
      .mlNode('ArrayFeatureExtractor', ['x', 'idx'], ['a'])
      .mlNode('TreeEnsembleRegressor', ['a'], ['y'], stumpRegressorAttrs(1, 0.25))
      .output('y', 'float', ['N', 1])
      .toBytes(),
};

const FIXTURE_ROOT = path.join(process.cwd(), '..', 'shared', 'fixtures', 'onnx');

/** The .onnx files of ../shared/fixtures/onnx up to 64 KiB (none where ../shared is absent). */
function fixtureSeeds(): [string, Uint8Array][] {
  if (!fs.existsSync(FIXTURE_ROOT)) return [];
  const out: [string, Uint8Array][] = [];
  const walk = (dir: string) => {
    for (const e of fs.readdirSync(dir, { withFileTypes: true }).sort((a, b) => a.name.localeCompare(b.name))) {
      const p = path.join(dir, e.name);
      if (e.isDirectory()) walk(p);
      else if (e.name.endsWith('.onnx') && fs.statSync(p).size <= 64 * 1024) out.push([path.relative(FIXTURE_ROOT, p), new Uint8Array(fs.readFileSync(p))]);
    }
  };
  walk(FIXTURE_ROOT);
  return out;
}

// Plain Uint8Array copies: the builder returns Node Buffers, whose slice() is a view, not a copy.
const BUILT: [string, Uint8Array][] = Object.entries(SEEDS).map(([name, make]) => [name, Uint8Array.from(make())]);
const FIXTURES = fixtureSeeds();
const ALL_SEEDS: [string, Uint8Array][] = [...BUILT, ...FIXTURES];

// ---- the host's path, with the figures ----

type Stage = 'parse' | 'normalize' | 'features' | 'compile' | 'run';

const stats = {
  cases: 0,
  parsed: 0,
  normalized: 0,
  featured: 0,
  compiled: 0,
  ran: 0,
  runSkipped: 0,
  encodeFailed: 0,
  decodeFailed: 0,
  byStrategy: {} as Record<string, { cases: number; parsed: number; compiled: number; ran: number }>,
  slowest: { ms: 0, label: '' },
  errors: new Map<string, number>(),
};
const started = performance.now();

function tally(key: string): void {
  stats.errors.set(key, (stats.errors.get(key) ?? 0) + 1);
}

/** An escaped error: what the invariant forbids, with the stage and the input's description. */
class EscapedError extends Error {}

/** Whether `err` is a clean refusal at `stage`; tallies it by stage and type. */
function checkError(err: unknown, stage: Stage, label: string): void {
  const clean = (): boolean => {
    if (!(err instanceof Error) || err.message.trim() === '') return false;
    if (err instanceof OnnxModelError) return stage === 'parse' || stage === 'normalize' || stage === 'features';
    const code = nativeErrorCode(err);
    // Compile: the binding refuses a model it cannot run ('model_refused'), or one too big
    // ('out_of_memory'); a TypeError 'invalid_argument' would mean normalize() handed it an object
    // that is not a NormalizedModel: a defect of the TypeScript side, so not clean.
    if (stage === 'compile') return code === 'model_refused' || code === 'out_of_memory';
    // Run: bad inputs ('invalid_argument', TypeError / RangeError as documented), failures while
    // running ('run_failed'), or memory.
    if (stage === 'run') return code === 'invalid_argument' || code === 'run_failed' || code === 'out_of_memory';
    return false;
  };
  const type = err instanceof Error ? err.constructor.name : typeof err;
  const code = nativeErrorCode(err);
  tally(`${stage}: ${type}${code ? ` (${code})` : ''}`);
  if (!clean()) {
    const msg = err instanceof Error ? `${err.name}: ${err.message}\n${err.stack ?? ''}` : String(err);
    throw new EscapedError(`${label}: an unclean error escaped at ${stage}: ${msg}`);
  }
}

/** Inputs for the compiled model as the predict path would send them: a small random batch. */
function runInputs(model: TabularModel, seed: number): TabularInput[] | null {
  const r = rng(seed);
  const rows = 1 + Math.floor(r() * 3);
  const small = () => 1 + Math.floor(r() * 3);
  const inputs: TabularInput[] = [];
  for (const d of model.describe().inputs ?? []) {
    if (d.kind !== 'tensor') return null;
    const dims = d.shape ? d.shape.map((s, k) => (k === 0 ? rows : s ?? small())) : [rows, small()];
    const n = dims.reduce((a, b) => a * b, 1);
    if (n > 1 << 14) return null;
    const vals = Array.from({ length: n }, () => Math.round((r() * 8 - 4) * 4) / 4);
    const ints = () => vals.map((v) => Math.trunc(v));
    const t = d.dataType;
    const data =
      t === 'float' ? Float32Array.from(vals)
      : t === 'double' ? Float64Array.from(vals)
      : t === 'int64' ? BigInt64Array.from(ints().map(BigInt))
      : t === 'uint64' ? BigUint64Array.from(ints().map((v) => BigInt(Math.abs(v))))
      : t === 'uint32' ? Uint32Array.from(ints().map(Math.abs))
      : t === 'string' ? ints().map((v) => ['', 'a', 'cat', 'dog', 'é'][Math.abs(v) % 5]!)
      : t === 'bool' ? Int32Array.from(ints().map((v) => v & 1))
      : t === 'int8' || t === 'int16' || t === 'int32' ? Int32Array.from(ints())
      : Int32Array.from(ints().map(Math.abs));
    inputs.push({ name: d.name, dims, data });
  }
  return inputs;
}

function withTimeout<T>(p: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  return Promise.race([
    p.finally(() => clearTimeout(timer)),
    new Promise<T>((_, reject) => {
      timer = setTimeout(() => reject(new EscapedError(`${what}: the run did not finish within ${ms} ms (a hang)`)), ms);
    }),
  ]);
}

/** The host's path for one upload; returns the last stage it passed. Throws EscapedError. */
async function hostPath(bytes: Uint8Array, label: string, runSeed: number, strategy = 'named'): Promise<Stage | 'done'> {
  stats.cases++;
  const by = (stats.byStrategy[strategy] ??= { cases: 0, parsed: 0, compiled: 0, ran: 0 });
  by.cases++;
  const t0 = performance.now();
  const elapsed = () => {
    const ms = performance.now() - t0;
    if (ms > stats.slowest.ms) stats.slowest = { ms, label };
    if (ms > CASE_LIMIT_MS) throw new EscapedError(`${label}: took ${ms.toFixed(0)} ms (limit ${CASE_LIMIT_MS})`);
  };
  let stage: Stage = 'parse';
  let compiled: TabularModel | undefined;
  try {
    const parsed = parseOnnxModel(bytes);
    stats.parsed++;
    by.parsed++;
    stage = 'normalize';
    const model = normalize(parsed);
    stats.normalized++;
    stage = 'features';
    try {
      deriveFeatures(model);
      inputsHandlingMissingValues(model);
      stats.featured++;
    } catch (err) {
      // A model that needs --feature-names is still compiled (the upload names them); any other
      // refusal here ends the upload.
      if (!(err instanceof OnnxModelError && err.param === 'feature_names')) throw err;
      tally('features: needs feature names');
    }
    stage = 'compile';
    compiled = compileTabularModel(model, { threads: 1 });
    stats.compiled++;
    by.compiled++;
    stage = 'run';
    const inputs = runInputs(compiled, runSeed);
    if (inputs === null) {
      stats.runSkipped++;
      elapsed();
      return 'run';
    }
    await withTimeout(compiled.run(inputs), CASE_LIMIT_MS, label);
    stats.ran++;
    by.ran++;
    elapsed();
    return 'done';
  } catch (err) {
    if (err instanceof EscapedError) throw err;
    checkError(err, stage, label);
    elapsed();
    return stage;
  } finally {
    compiled?.dispose();
  }
}

afterAll(() => {
  const errors = Object.fromEntries([...stats.errors.entries()].sort((a, b) => b[1] - a[1]));
  console.log(
    `[onnx-parser-fuzz] ${JSON.stringify(
      {
        seeds: { built: BUILT.length, fixtures: FIXTURES.length },
        cases: stats.cases,
        parsed: stats.parsed,
        normalized: stats.normalized,
        featuresDerived: stats.featured,
        compiled: stats.compiled,
        ran: stats.ran,
        runSkipped: stats.runSkipped,
        encodeFailed: stats.encodeFailed,
        decodeFailed: stats.decodeFailed,
        byStrategy: stats.byStrategy,
        errorsByStageAndType: errors,
        slowestCaseMs: Math.round(stats.slowest.ms),
        slowestCase: stats.slowest.label,
        seconds: Math.round((performance.now() - started) / 100) / 10,
      },
      null,
      1,
    )}`,
  );
});

// ---- mutations ----

/** Protobuf varint bytes of a non-negative bigint. */
function varint(v: bigint): number[] {
  const out: number[] = [];
  do {
    let b = Number(v & 0x7fn);
    v >>= 7n;
    if (v > 0n) b |= 0x80;
    out.push(b);
  } while (v > 0n);
  return out;
}

const HUGE_LENGTHS = [2n ** 31n - 1n, 2n ** 32n, 2n ** 53n, 2n ** 63n, 2n ** 64n - 1n, 1000000n];

type ByteOp =
  | { op: 'flip'; at: number; bit: number }
  | { op: 'set'; at: number; value: number }
  | { op: 'truncate'; at: number }
  | { op: 'insert'; at: number; bytes: number[] }
  | { op: 'delete'; at: number; len: number }
  | { op: 'splice'; at: number; other: number; from: number }
  | { op: 'hugeLength'; at: number; field: number; length: number }
  | { op: 'longVarint'; at: number; n: number }
  | { op: 'repeat'; at: number; len: number; times: number };

const byteOp: fc.Arbitrary<ByteOp> = fc.oneof(
  { weight: 4, arbitrary: fc.record({ op: fc.constant('flip' as const), at: fc.nat(), bit: fc.integer({ min: 0, max: 7 }) }) },
  { weight: 2, arbitrary: fc.record({ op: fc.constant('set' as const), at: fc.nat(), value: fc.constantFrom(0, 0x7f, 0x80, 0xff, 0x08, 0x12, 0x1a, 0x22, 0x3a) }) },
  { weight: 2, arbitrary: fc.record({ op: fc.constant('truncate' as const), at: fc.nat() }) },
  { weight: 2, arbitrary: fc.record({ op: fc.constant('insert' as const), at: fc.nat(), bytes: fc.array(fc.integer({ min: 0, max: 255 }), { minLength: 1, maxLength: 16 }) }) },
  { weight: 1, arbitrary: fc.record({ op: fc.constant('delete' as const), at: fc.nat(), len: fc.integer({ min: 1, max: 32 }) }) },
  { weight: 2, arbitrary: fc.record({ op: fc.constant('splice' as const), at: fc.nat(), other: fc.nat(), from: fc.nat() }) },
  { weight: 2, arbitrary: fc.record({ op: fc.constant('hugeLength' as const), at: fc.nat(), field: fc.integer({ min: 1, max: 20 }), length: fc.nat(HUGE_LENGTHS.length - 1) }) },
  { weight: 1, arbitrary: fc.record({ op: fc.constant('longVarint' as const), at: fc.nat(), n: fc.integer({ min: 9, max: 40 }) }) },
  { weight: 1, arbitrary: fc.record({ op: fc.constant('repeat' as const), at: fc.nat(), len: fc.integer({ min: 1, max: 64 }), times: fc.integer({ min: 2, max: 200 }) }) },
);

function applyByteOp(bytes: Uint8Array, op: ByteOp): Uint8Array {
  const n = bytes.length;
  const at = n === 0 ? 0 : op.at % (n + 1);
  const cat = (...parts: ArrayLike<number>[]) => {
    const out = new Uint8Array(parts.reduce((s, p) => s + p.length, 0));
    let k = 0;
    for (const p of parts) {
      out.set(p, k);
      k += p.length;
    }
    return out;
  };
  switch (op.op) {
    case 'flip': {
      if (n === 0) return bytes;
      const b = Uint8Array.from(bytes);
      b[op.at % n]! ^= 1 << op.bit;
      return b;
    }
    case 'set': {
      if (n === 0) return bytes;
      const b = Uint8Array.from(bytes);
      b[op.at % n] = op.value;
      return b;
    }
    case 'truncate':
      return bytes.subarray(0, at);
    case 'insert':
      return cat(bytes.subarray(0, at), op.bytes, bytes.subarray(at));
    case 'delete':
      return cat(bytes.subarray(0, at), bytes.subarray(Math.min(n, at + op.len)));
    case 'splice': {
      const other = ALL_SEEDS[op.other % ALL_SEEDS.length]![1];
      return cat(bytes.subarray(0, at), other.subarray(op.from % (other.length + 1)));
    }
    case 'hugeLength':
      // A length-delimited field (wire type 2) claiming far more bytes than there are.
      return cat(bytes.subarray(0, at), [(op.field << 3) | 2, ...varint(HUGE_LENGTHS[op.length]!)], bytes.subarray(at));
    case 'longVarint':
      // An int64 field (irVersion, wire type 0) whose varint runs on past ten bytes.
      return cat(bytes.subarray(0, at), [0x08, ...Array.from({ length: op.n }, () => 0xff), 0x01], bytes.subarray(at));
    case 'repeat': {
      const chunk = bytes.subarray(at, Math.min(n, at + op.len));
      return cat(bytes.subarray(0, at), ...Array.from({ length: op.times }, () => chunk), bytes.subarray(at));
    }
  }
}

// Structured mutations edit the decoded ModelProto (plain objects from ModelProto.toObject) and
// encode it again with the same protobufjs types the parser decodes with.
type Obj = Record<string, unknown>;

type StructOp = { kind: number; a: number; b: number; c: number };
const structOp: fc.Arbitrary<StructOp> = fc.record({ kind: fc.nat(17), a: fc.nat(), b: fc.nat(), c: fc.nat() });

const HOSTILE_INTS: (number | string)[] = [0, -1, 1, 2, 3, -2147483648, 2 ** 31, 2 ** 32 + 1, 2 ** 40, 2 ** 53, '9223372036854775807', '-9223372036854775808'];
const HOSTILE_FLOATS = [0, -0, 1, -1, NaN, Infinity, -Infinity, 3.4e38, 1e-45, 0.5];
const OP_NAMES = ['Gemm', 'Relu', 'MatMul', 'Reshape', 'Concat', 'Softmax', 'Cast', 'Constant', 'Identity', 'Transpose', 'Squeeze', 'Unsqueeze', 'Flatten', 'Clip', 'BatchNormalization', 'Add', 'Div', 'TreeEnsembleRegressor', 'TreeEnsembleClassifier', 'TreeEnsemble', 'ZipMap', 'LinearClassifier', 'SVMClassifier', 'SVMRegressor', 'LabelEncoder', 'OneHotEncoder', 'Scaler', 'Imputer', 'ArrayFeatureExtractor', 'Loop', 'NoSuchOp'];
const ATTR_FIELDS = ['f', 'i', 's', 't', 'g', 'floats', 'ints', 'strings', 'tensors', 'graphs'];

/** An int64 field's value as protobufjs's writer takes it: a number, or a decimal string beyond 2^53. */
const int64 = (v: number | string): number | string => v;

function pick<T>(xs: T[] | undefined, k: number): T | undefined {
  return xs && xs.length > 0 ? xs[k % xs.length] : undefined;
}

function arr(o: Obj | undefined, key: string): Obj[] {
  if (!o) return [];
  if (!Array.isArray(o[key])) o[key] = [];
  return o[key] as Obj[];
}

function applyStructOp(m: Obj, { kind, a, b, c }: StructOp): void {
  const g = (m.graph ?? (m.graph = {})) as Obj;
  const nodes = arr(g, 'node');
  const inits = arr(g, 'initializer');
  const valueInfos = [...arr(g, 'input'), ...arr(g, 'output'), ...arr(g, 'valueInfo')];
  const node = pick(nodes, a);
  const attrs = arr(node, 'attribute');
  const at = pick(attrs, b);
  const allNames = [...new Set([...nodes.flatMap((n) => [...((n.input as string[]) ?? []), ...((n.output as string[]) ?? [])]), ...inits.map((t) => t.name as string)])];
  switch (kind) {
    case 0: {
      // a declared dimension made huge, negative or zero
      const vi = pick(valueInfos, a);
      const dims = ((((vi?.type as Obj)?.tensorType as Obj)?.shape as Obj)?.dim as Obj[]) ?? [];
      const d = pick(dims, b);
      if (d) {
        delete d.dimParam;
        d.dimValue = int64(HOSTILE_INTS[c % HOSTILE_INTS.length]!);
      }
      return;
    }
    case 1: {
      // an initializer's dims changed (its data stays)
      const t = pick(inits, a);
      if (!t) return;
      const dims = arr(t, 'dims');
      if (dims.length === 0 || c % 3 === 0) dims.push(int64(HOSTILE_INTS[b % HOSTILE_INTS.length]!) as never);
      else dims[b % dims.length] = int64(HOSTILE_INTS[c % HOSTILE_INTS.length]!) as never;
      return;
    }
    case 2: {
      // a wrong data type on an initializer or a declared value
      const code = c % 28;
      const t = pick(inits, a);
      if (t && b % 2 === 0) t.dataType = code;
      else {
        const tt = (pick(valueInfos, a)?.type as Obj)?.tensorType as Obj | undefined;
        if (tt) tt.elemType = code;
      }
      return;
    }
    case 3:
      // a missing initializer
      if (inits.length > 0) inits.splice(a % inits.length, 1);
      return;
    case 4: {
      // a renamed graph input, output or node input / output
      const newName = pick(allNames, c) ?? 'renamed';
      const choice = b % 4;
      if (choice === 0) {
        const vi = pick(arr(g, 'input'), a);
        if (vi) vi.name = c % 5 === 0 ? '' : `${String(vi.name)}_renamed`;
      } else if (choice === 1) {
        const vi = pick(arr(g, 'output'), a);
        if (vi) vi.name = newName;
      } else if (node) {
        const list = arr(node, choice === 2 ? 'input' : 'output') as unknown as string[];
        if (list.length > 0) list[c % list.length] = c % 7 === 0 ? '' : newName;
        else list.push(newName);
      }
      return;
    }
    case 5: {
      // an attribute's type code swapped (its value stays where it was)
      if (at) at.type = c % 16;
      return;
    }
    case 6: {
      // an attribute's value moved to another field of its type
      if (!at) return;
      const from = ATTR_FIELDS.find((f) => at[f] !== undefined && !(Array.isArray(at[f]) && (at[f] as unknown[]).length === 0));
      const to = ATTR_FIELDS[c % ATTR_FIELDS.length]!;
      if (from) delete at[from];
      at[to] =
        to === 'f' ? HOSTILE_FLOATS[b % HOSTILE_FLOATS.length]
        : to === 'i' ? int64(HOSTILE_INTS[b % HOSTILE_INTS.length]!)
        : to === 's' ? new TextEncoder().encode(['', 'NONE', 'BRANCH_LEQ', 'x', '\u00ff'][b % 5]!)
        : to === 't' ? { dims: [2], dataType: 1 + (b % 13), floatData: [1, 2] }
        : to === 'g' ? { name: 'sub', node: [{ opType: 'Relu', input: ['a'], output: ['b'] }] }
        : to === 'floats' ? [HOSTILE_FLOATS[b % HOSTILE_FLOATS.length]!, 1]
        : to === 'ints' ? [int64(HOSTILE_INTS[b % HOSTILE_INTS.length]!), 0]
        : to === 'strings' ? [new TextEncoder().encode('a'), Uint8Array.of(0xc3, 0x28)]
        : to === 'tensors' ? [{ dims: [1], dataType: 7, int64Data: [5] }]
        : [{ name: 'sub' }];
      return;
    }
    case 7: {
      // hostile attribute values: ints huge or negative, floats NaN / Inf, lists emptied or grown
      if (!at) return;
      const ints = at.ints as unknown[] | undefined;
      const floats = at.floats as unknown[] | undefined;
      if (ints && ints.length > 0) {
        if (c % 4 === 0) at.ints = [];
        else if (c % 4 === 1) at.ints = [...ints, ...ints];
        else ints[b % ints.length] = int64(HOSTILE_INTS[c % HOSTILE_INTS.length]!);
      } else if (floats && floats.length > 0) {
        if (c % 4 === 0) at.floats = [];
        else if (c % 4 === 1) floats.pop();
        else floats[b % floats.length] = HOSTILE_FLOATS[c % HOSTILE_FLOATS.length];
      } else if (at.i !== undefined) at.i = int64(HOSTILE_INTS[c % HOSTILE_INTS.length]!);
      else if (at.f !== undefined) at.f = HOSTILE_FLOATS[c % HOSTILE_FLOATS.length];
      else if (at.strings) (at.strings as unknown[]).splice(b % Math.max(1, (at.strings as unknown[]).length), 1);
      return;
    }
    case 8:
      // an attribute removed, or one added that the operator does not know
      if (!node) return;
      if (at && c % 2 === 0) attrs.splice(b % attrs.length, 1);
      else attrs.push({ name: ['axis', 'transB', 'perm', 'to', 'alpha', 'zzz', 'value', 'post_transform'][c % 8], type: 2, i: int64(HOSTILE_INTS[b % HOSTILE_INTS.length]!) });
      return;
    case 9:
      // another operator, or another domain
      if (!node) return;
      if (c % 3 === 0) node.domain = ['', 'ai.onnx', 'ai.onnx.ml', 'com.microsoft', 'x'][b % 5];
      else node.opType = OP_NAMES[b % OP_NAMES.length];
      return;
    case 10: {
      // an operator set at another version (0, old, newer than supported, huge)
      const opsets = arr(m, 'opsetImport');
      const o = pick(opsets, a);
      if (o) o.version = int64([0, 1, 6, 7, 9, 11, 12, 13, 17, 21, 99, 2 ** 40, -3][c % 13]!);
      if (b % 5 === 0 && opsets.length > 0) opsets.push({ ...opsets[0]! });
      return;
    }
    case 11:
      // a node removed or duplicated
      if (!node) return;
      if (c % 2 === 0) nodes.splice(a % nodes.length, 1);
      else nodes.splice(b % (nodes.length + 1), 0, structuredClone(node));
      return;
    case 12: {
      // inputs of a node reordered, dropped or extended
      if (!node) return;
      const list = arr(node, 'input') as unknown as string[];
      if (c % 3 === 0) list.reverse();
      else if (c % 3 === 1) list.pop();
      else list.push(pick(allNames, b) ?? '', '');
      return;
    }
    case 13: {
      // an initializer's data replaced by random raw bytes or the wrong typed field
      const t = pick(inits, a);
      if (!t) return;
      const r = rng(c);
      for (const f of ['floatData', 'int32Data', 'int64Data', 'doubleData', 'uint64Data', 'stringData']) delete t[f];
      if (b % 3 === 0) t.rawData = Uint8Array.from({ length: c % 64 }, () => Math.floor(r() * 256));
      else if (b % 3 === 1) t.int64Data = [int64(HOSTILE_INTS[c % HOSTILE_INTS.length]!)];
      else t.floatData = [NaN, 1];
      if (b % 7 === 0) t.dataLocation = 1;
      return;
    }
    case 14:
      // the IR version
      m.irVersion = int64([0, 1, 3, 4, 7, 8, 10, 11, -1, 2 ** 40][c % 10]!);
      return;
    case 15: {
      // a declared type removed or turned into a map / sequence
      const vi = pick(valueInfos, a);
      if (!vi) return;
      vi.type =
        c % 3 === 0 ? undefined
        : c % 3 === 1 ? { sequenceType: { elemType: { mapType: { keyType: 1 + (b % 13), valueType: { tensorType: { elemType: 1 } } } } } }
        : { mapType: { keyType: 7, valueType: { tensorType: { elemType: 1 } } } };
      return;
    }
    case 16: {
      // the feature-names metadata the feature derivation reads
      const props = arr(m, 'metadataProps');
      props.push({ key: 'feature_names', value: ['a,b', '["a","a"]', '[1,2]', '[', ' , ', 'x'.repeat(1 + (c % 5)).split('').map((_, k) => `f${k}`).join(',')][b % 6] });
      return;
    }
    default: {
      // a subgraph attribute nested a few levels (If / Loop style bodies)
      if (!node) return;
      let inner: Obj = { name: 'leaf', node: [{ opType: 'Relu', input: ['x'], output: ['y'] }] };
      for (let k = 0; k < 1 + (c % 20); k++) inner = { name: `g${k}`, node: [{ opType: 'If', input: ['c'], output: ['o'], attribute: [{ name: 'then_branch', type: 5, g: inner }] }] };
      attrs.push({ name: 'then_branch', type: 5, g: inner });
    }
  }
}

/** The seed decoded, mutated and encoded again; null when protobufjs cannot encode the result. */
function structured(seed: Uint8Array, ops: StructOp[]): Uint8Array | null {
  let m: Obj;
  try {
    m = ModelProto.toObject(ModelProto.decode(seed), { longs: String }) as Obj;
  } catch {
    stats.decodeFailed++;
    return null;
  }
  for (const op of ops) applyStructOp(m, op);
  try {
    return encodeModelProto(m);
  } catch {
    stats.encodeFailed++;
    return null;
  }
}

// ---- named hostile inputs (and regressions) ----

/** A graph attribute nested `depth` levels deep, written as raw protobuf (deep recursion in the decoder). */
function deeplyNested(depth: number): Uint8Array {
  const lenDelim = (field: number, body: Uint8Array) => Buffer.concat([Uint8Array.of((field << 3) | 2, ...varint(BigInt(body.length))), body]);
  let graph: Uint8Array = new Uint8Array(0);
  for (let k = 0; k < depth; k++) {
    // AttributeProto { name "g", type GRAPH (field 20), g }, in NodeProto { op_type "If", attribute }, in GraphProto { node }
    const attribute = Buffer.concat([lenDelim(1, Uint8Array.of(0x67)), Uint8Array.of(0xa0, 0x01, 5), lenDelim(6, graph)]);
    const node = Buffer.concat([lenDelim(4, Uint8Array.of(0x49, 0x66)), lenDelim(5, attribute)]);
    graph = lenDelim(1, node);
  }
  const b = new ModelBuilder().input('x', 'float', ['N', 1]).node('Relu', ['x'], ['y']).output('y', 'float', ['N', 1]).toModelProto();
  return Buffer.concat([encodeModelProto({ ...b, graph: undefined }), lenDelim(7, graph)]);
}

const NAMED: Record<string, () => Uint8Array> = {
  empty: () => new Uint8Array(0),
  'one zero byte': () => Uint8Array.of(0),
  'a graph field claiming 2^64 - 1 bytes': () => Uint8Array.of(0x08, 0x08, 0x3a, ...varint(2n ** 64n - 1n)),
  'an IR version varint of 40 bytes': () => Uint8Array.of(0x08, ...Array.from({ length: 40 }, () => 0xff), 0x01),
  'graph attributes nested 3000 deep': () => deeplyNested(3000),
  'an initializer of 2^62 x 2^62 elements': () =>
    new ModelBuilder().input('x', 'float', ['N', 2]).rawInitializer({ name: 'w', dataType: 1, dims: ['4611686018427387904', '4611686018427387904'] }).node('Relu', ['x'], ['y']).output('y', 'float', ['N', 2]).toBytes(),
  'an input of width 2^50': () =>
    new ModelBuilder().input('x', 'float', ['N', 2 ** 50]).node('Relu', ['x'], ['y']).output('y', 'float').toBytes(),
  'a Reshape to [2^40, 2^40]': () =>
    new ModelBuilder().input('x', 'float', ['N', 4]).initializer('s', 'int64', [2], [2n ** 40n, 2n ** 40n]).node('Reshape', ['x', 's'], ['y']).output('y', 'float').toBytes(),
  'a Transpose perm with a huge axis': () =>
    new ModelBuilder().input('x', 'float', ['N', 4]).node('Transpose', ['x'], ['y'], { perm: attr.ints([1, 2n ** 62n]) }).output('y', 'float').toBytes(),
  'a Softmax axis of -2^31': () =>
    new ModelBuilder().input('x', 'float', ['N', 4]).node('Softmax', ['x'], ['y'], { axis: -2147483648 }).output('y', 'float').toBytes(),
  'a Cast to type 99': () => new ModelBuilder().input('x', 'float', ['N', 4]).node('Cast', ['x'], ['y'], { to: 99 }).output('y', 'float').toBytes(),
  'a tree with 2^31 as a node id': () =>
    new ModelBuilder({ opsets: ML })
      .input('x', 'float', ['N', 2])
      .mlNode('TreeEnsembleRegressor', ['x'], ['y'], { ...stumpRegressorAttrs(), nodes_truenodeids: [2 ** 31, 0, 0] })
      .output('y', 'float', ['N', 1])
      .toBytes(),
  'feature_names metadata of 100,000 names': () =>
    new ModelBuilder({ metadata: { feature_names: Array.from({ length: 100_000 }, (_, k) => `f${k}`).join(',') } })
      .input('x', 'float', ['N', null])
      .node('Relu', ['x'], ['y'])
      .output('y', 'float')
      .toBytes(),
};

// ---- the tests ----

describe('ONNX upload path fuzzing (parse, normalize, features, compile, run)', () => {
  it('every seed goes all the way through (the mutations start from working models)', async () => {
    for (const [name, bytes] of BUILT) expect(await hostPath(bytes, `seed ${name}`, 1, 'seeds'), name).toBe('done');
    for (const [name, bytes] of FIXTURES) await hostPath(bytes, `fixture ${name}`, 1, 'seeds'); // some are refused by design
  });

  for (const [name, make] of Object.entries(NAMED)) {
    it(`handles ${name} cleanly`, async () => {
      await hostPath(make(), name, 7);
    });
  }

  const seedIndex = fc.nat(ALL_SEEDS.length - 1);

  it('byte-level mutations: flips, truncation, inserted bytes, splices, huge lengths, long varints, repeats', async () => {
    await fc.assert(
      fc.asyncProperty(seedIndex, fc.array(byteOp, { minLength: 1, maxLength: 4 }), fc.nat(), async (s, ops, runSeed) => {
        const [name, seed] = ALL_SEEDS[s]!;
        const bytes = ops.reduce(applyByteOp, seed);
        await hostPath(bytes, `bytes of ${name} ${JSON.stringify(ops)}`, runSeed, 'bytes');
      }),
      { seed: SEED, numRuns: 1500 },
    );
  });

  it('structured mutations of the decoded model, re-encoded', async () => {
    await fc.assert(
      fc.asyncProperty(seedIndex, fc.array(structOp, { minLength: 1, maxLength: 3 }), fc.nat(), async (s, ops, runSeed) => {
        const [name, seed] = ALL_SEEDS[s]!;
        const bytes = structured(seed, ops);
        if (bytes === null) return;
        await hostPath(bytes, `structure of ${name} ${JSON.stringify(ops)}`, runSeed, 'structured');
      }),
      { seed: SEED + 1, numRuns: 2000 },
    );
  });

  it('structured then byte-level mutations', async () => {
    await fc.assert(
      fc.asyncProperty(seedIndex, structOp, fc.array(byteOp, { minLength: 1, maxLength: 2 }), fc.nat(), async (s, sop, ops, runSeed) => {
        const [name, seed] = ALL_SEEDS[s]!;
        const mid = structured(seed, [sop]);
        if (mid === null) return;
        await hostPath(ops.reduce(applyByteOp, mid), `both of ${name} ${JSON.stringify([sop, ops])}`, runSeed, 'structured+bytes');
      }),
      { seed: SEED + 2, numRuns: 700 },
    );
  });
});
