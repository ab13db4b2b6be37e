// Writes the fuzz targets' seed corpora: npx tsx scripts/fuzz/seeds.ts <out-dir>
//
// <out-dir>/gguf_reader_fuzz: the GGUF fixtures of ../shared/fixtures (when present) and tiny
//   llama / qwen2 models from the tests' writer (test/helpers/gguf-writer.ts tinyModel), in every
//   weight type the engine reads.
// <out-dir>/tabular_graph_fuzz: ONNX models, parsed and normalised by src/tabular/onnx exactly as
//   the host does, in the fuzz target's binary form (scripts/fuzz/targets/tabular_model_codec.h):
//   the ONNX fixtures (when present) and models from the tests' builder (test/helpers/onnx-builder.ts)
//   covering every operator family the executor has.
// <out-dir>/grammar_fuzz: the host's own JSON-schema grammars (src/llm/structured) as llmCompileGrammar
//   receives them, with a few token picks in front.
// Files that fail to parse or normalise are skipped (and counted): they are not seeds of the native side.
import fs from 'node:fs';
import path from 'node:path';

import { encodeGrammar } from '../../src/llm/structured/grammar.js';
import { jsonSchemaGrammar } from '../../src/llm/structured/json-schema.js';
import { normalize, parseOnnxModel, type NormalizedModel, type OnnxTensor, type OnnxValueInfo } from '../../src/tabular/onnx/index.js';
import { encodeGguf, tinyModel } from '../../test/helpers/gguf-writer.js';
import { spmVocab } from '../../test/helpers/llm-models.js';
import { linearModel } from '../../test/helpers/models.js';
import { attr, mlpModel, ModelBuilder, treeRegressorModel } from '../../test/helpers/onnx-builder.js';

const out = process.argv[2];
if (!out) throw new Error('usage: seeds.ts <out-dir>');
const root = path.resolve(path.dirname(new URL(import.meta.url).pathname), '../..');
const fixtures = path.join(root, '..', 'shared', 'fixtures');

function write(target: string, name: string, bytes: Uint8Array): void {
  const dir = path.join(out!, target);
  fs.mkdirSync(dir, { recursive: true });
  fs.writeFileSync(path.join(dir, name.replace(/[^A-Za-z0-9_.-]/g, '_')), bytes);
}

function walk(dir: string, ext: string): string[] {
  if (!fs.existsSync(dir)) return [];
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const p = path.join(dir, e.name);
    return e.isDirectory() ? walk(p, ext) : e.name.endsWith(ext) ? [p] : [];
  });
}

// ---- the tabular codec (tabular_model_codec.h) ----

const DTYPE: Record<string, number> = {
  float: 1, float16: 1, bfloat16: 1, double: 2, int8: 3, uint8: 4, int16: 5, uint16: 6,
  int32: 7, uint32: 8, int64: 9, uint64: 10, bool: 11, string: 12,
};

class Out {
  private parts: number[] = [];
  u8(v: number): void {
    this.parts.push(v & 0xff);
  }
  varint(v: bigint | number): void {
    let x = BigInt(v);
    if (x < 0n) throw new Error('negative varint');
    do {
      const b = Number(x & 0x7fn);
      x >>= 7n;
      this.u8(x > 0n ? b | 0x80 : b);
    } while (x > 0n);
  }
  svarint(v: bigint | number): void {
    const x = BigInt(v);
    this.varint(x < 0n ? (-x << 1n) - 1n : x << 1n);
  }
  str(s: string): void {
    const b = Buffer.from(s, 'utf8');
    this.varint(b.length);
    for (const c of b) this.u8(c);
  }
  raw(b: Uint8Array): void {
    for (const c of b) this.u8(c);
  }
  f64(v: number): void {
    const b = new Uint8Array(8);
    new DataView(b.buffer).setFloat64(0, v, true);
    this.raw(b);
  }
  bytes(): Uint8Array {
    return Uint8Array.from(this.parts);
  }
}

function dtypeOf(name: string): number {
  const t = DTYPE[name];
  if (t === undefined) throw new Error(`element type ${name}`);
  return t;
}

function tensor(o: Out, t: OnnxTensor): void {
  const type = dtypeOf(t.dataType);
  o.u8(type);
  o.varint(t.dims.length);
  for (const d of t.dims) o.varint(d);
  const data = t.data;
  if (Array.isArray(data)) {
    for (const s of data) o.str(s);
    return;
  }
  const n = (data as ArrayLike<unknown>).length;
  const width = [0, 4, 8, 1, 1, 2, 2, 4, 4, 8, 8, 1][type]!;
  const b = new Uint8Array(n * width);
  const v = new DataView(b.buffer);
  for (let i = 0; i < n; i++) {
    const x = (data as ArrayLike<number | bigint>)[i]!;
    switch (type) {
      case 1: v.setFloat32(i * 4, Number(x), true); break;
      case 2: v.setFloat64(i * 8, Number(x), true); break;
      case 3: v.setInt8(i, Number(x)); break;
      case 4: v.setUint8(i, Number(x)); break;
      case 5: v.setInt16(i * 2, Number(x), true); break;
      case 6: v.setUint16(i * 2, Number(x), true); break;
      case 7: v.setInt32(i * 4, Number(x), true); break;
      case 8: v.setUint32(i * 4, Number(x), true); break;
      case 9: v.setBigInt64(i * 8, BigInt(x), true); break;
      case 10: v.setBigUint64(i * 8, BigInt(x), true); break;
      case 11: v.setUint8(i, Number(x) ? 1 : 0); break;
    }
  }
  o.raw(b);
}

function valueInfo(o: Out, v: OnnxValueInfo): void {
  o.str(v.name);
  if (v.kind === 'tensor') {
    o.u8(0);
    o.u8(dtypeOf(v.elemType));
    o.u8(0);
    o.u8(v.shape ? 1 : 0);
    const dims = v.shape ?? [];
    o.varint(dims.length);
    for (const d of dims) o.svarint(typeof d === 'number' ? d : -1);
  } else if (v.kind === 'sequence-map') {
    o.u8(1);
    o.u8(DTYPE[v.valueType] ?? 0);
    o.u8(DTYPE[v.keyType] ?? 0);
    o.u8(0);
    o.varint(0);
  } else {
    o.u8(2);
    o.u8(0);
    o.u8(0);
    o.u8(0);
    o.varint(0);
  }
}

/** The model in the fuzz target's form, then a batch of 3 rows and bytes for the input values. */
export function encodeTabular(m: NormalizedModel, seed = 1): Uint8Array {
  const o = new Out();
  const opsets = Object.entries(m.opsetImports);
  o.varint(opsets.length);
  for (const [d, v] of opsets) {
    o.str(d);
    o.svarint(v);
  }
  const g = m.graph;
  o.varint(g.inputs.length);
  g.inputs.forEach((v) => valueInfo(o, v));
  o.varint(g.outputs.length);
  g.outputs.forEach((v) => valueInfo(o, v));
  o.varint(g.initializers.length);
  for (const t of g.initializers) {
    o.str(t.name);
    tensor(o, t);
  }
  o.varint(g.nodes.length);
  for (const n of g.nodes) {
    o.str(n.name);
    o.str(n.opType);
    o.str(n.domain);
    o.svarint(n.version);
    o.varint(n.inputs.length);
    n.inputs.forEach((s) => o.str(s));
    o.varint(n.outputs.length);
    n.outputs.forEach((s) => o.str(s));
    const attrs = Object.entries(n.attributes);
    o.varint(attrs.length);
    for (const [name, a] of attrs) {
      o.str(name);
      switch (a.type) {
        case 'float': o.u8(0); o.f64(a.value); break;
        case 'int': o.u8(1); o.svarint(BigInt(a.exact ?? a.value)); break;
        case 'string': o.u8(2); o.str(a.value); break;
        case 'tensor': o.u8(3); tensor(o, a.value); break;
        case 'floats': o.u8(4); o.varint(a.value.length); a.value.forEach((x) => o.f64(x)); break;
        case 'ints': o.u8(5); o.varint(a.value.length); a.value.forEach((x, i) => o.svarint(BigInt(a.exact?.[i] ?? x))); break;
        case 'strings': o.u8(6); o.varint(a.value.length); a.value.forEach((x) => o.str(x)); break;
        default: o.u8(7);
      }
    }
  }
  o.u8(3);
  let s = seed;
  for (let i = 0; i < 64; i++) {
    s = (s * 1103515245 + 12345) >>> 0;
    o.u8(16 + ((s >>> 16) % 200));  // mostly plain values; the fuzzer finds the special ones
  }
  return o.bytes();
}

// ---- builder models, one or more per operator family ----

function builderModels(): Record<string, Uint8Array> {
  const ml = { opsets: { '': 13, 'ai.onnx.ml': 3 } };
  const models: Record<string, Uint8Array> = {
    mlp: mlpModel().toBytes(),
    mlp_opset11: mlpModel(11).toBytes(),
    tree_regressor_v1: treeRegressorModel(1).toBytes(),
    tree_regressor_v3: treeRegressorModel(3).toBytes(),
    linear: linearModel(['a', 'b', 'c'], 0.5),
    elementwise: new ModelBuilder({ opsets: { '': 13 } })
      .input('x', 'float', ['N', 3])
      .initializer('k', 'float', [3], [1, 2, 0.5])
      .initializer('lo', 'float', [], [-1])
      .initializer('hi', 'float', [], [1])
      .node('Add', ['x', 'k'], ['a']).node('Sub', ['a', 'x'], ['b']).node('Mul', ['b', 'k'], ['c'])
      .node('Div', ['c', 'k'], ['d']).node('Relu', ['d'], ['e']).node('LeakyRelu', ['e'], ['f'], { alpha: attr.float(0.1) })
      .node('Sigmoid', ['f'], ['g']).node('Tanh', ['g'], ['h']).node('Exp', ['h'], ['i']).node('Log', ['i'], ['j'])
      .node('Clip', ['j', 'lo', 'hi'], ['l']).node('Identity', ['l'], ['m']).node('Cast', ['m'], ['n'], { to: 11 })
      .node('Cast', ['n'], ['y'], { to: 7 })
      .output('y', 'int64', ['N', 3])
      .toBytes(),
    shape: new ModelBuilder({ opsets: { '': 13 } })
      .input('x', 'float', ['N', 2, 3])
      .initializer('shape', 'int64', [2], [-1, 6])
      .initializer('axes', 'int64', [1], [1])
      .node('Flatten', ['x'], ['f'], { axis: 1 }).node('Reshape', ['x', 'shape'], ['r'])
      .node('Unsqueeze', ['r', 'axes'], ['u']).node('Squeeze', ['u', 'axes'], ['s'])
      .node('Concat', ['f', 's'], ['c'], { axis: 1 }).node('Transpose', ['x'], ['t'], { perm: [0, 2, 1] })
      .node('MatMul', ['t', 'x'], ['mm']).node('Softmax', ['c'], ['y'], { axis: -1 })
      .output('y', 'float', ['N', 12]).output('mm', 'float', ['N', 3, 3])
      .toBytes(),
    batchnorm: new ModelBuilder({ opsets: { '': 13 } })
      .input('x', 'float', ['N', 2, 2])
      .initializer('scale', 'float', [2], [1, 2]).initializer('bias', 'float', [2], [0, 1])
      .initializer('mean', 'float', [2], [0.5, -0.5]).initializer('var', 'float', [2], [1, 4])
      .node('BatchNormalization', ['x', 'scale', 'bias', 'mean', 'var'], ['y'], { epsilon: attr.float(1e-5) })
      .output('y', 'float', ['N', 2, 2])
      .toBytes(),
    linear_classifier_zipmap: new ModelBuilder(ml)
      .input('x', 'float', ['N', 3])
      .mlNode('Scaler', ['x'], ['scaled'], { offset: attr.floats([1, 2, 3]), scale: attr.floats([0.5, 0.25, 2]) })
      .mlNode('LinearClassifier', ['scaled'], ['label', 'prob'], {
        classlabels_ints: [0, 1, 2], coefficients: attr.floats([1, 0, 0, 0, 1, 0, 0, 0, 1]), intercepts: attr.floats([0, 0.1, -0.1]),
        post_transform: 'SOFTMAX',
      })
      .mlNode('Normalizer', ['prob'], ['prob_n'], { norm: 'L1' })
      .mlNode('ZipMap', ['prob_n'], ['probabilities'], { classlabels_int64s: [0, 1, 2] })
      .output('label', 'int64', ['N']).sequenceMapOutput('probabilities', 'int64')
      .toBytes(),
    linear_regressor: new ModelBuilder(ml)
      .input('x', 'double', ['N', 2])
      .mlNode('LinearRegressor', ['x'], ['y'], { coefficients: attr.floats([0.5, -1]), intercepts: attr.floats([0.25]) })
      .output('y', 'double', ['N', 1])
      .toBytes(),
    binarizer_imputer: new ModelBuilder(ml)
      .input('x', 'float', ['N', 2])
      .mlNode('Imputer', ['x'], ['i'], { imputed_value_floats: attr.floats([1, 2]), replaced_value_float: attr.float(NaN) })
      .mlNode('Binarizer', ['i'], ['y'], { threshold: attr.float(0.25) })
      .output('y', 'float', ['N', 2])
      .toBytes(),
    encoders: new ModelBuilder(ml)
      .input('x', 'string', ['N', 1])
      .input('n', 'int64', ['N', 2])
      .initializer('pick', 'int64', [1], [1])
      .mlNode('OneHotEncoder', ['x'], ['oh'], { cats_strings: ['red', 'green', 'blue'] })
      .mlNode('LabelEncoder', ['x'], ['le'], { keys_strings: ['a', 'b', 'c'], values_int64s: [10, 20, 30], default_int64: -7 })
      .mlNode('ArrayFeatureExtractor', ['n', 'pick'], ['afe'])
      .output('oh', 'float', ['N', 1, 3]).output('le', 'int64', ['N', 1]).output('afe', 'int64', ['N', 1])
      .toBytes(),
    svm_regressor: new ModelBuilder(ml)
      .input('x', 'float', ['N', 4])
      .mlNode('SVMRegressor', ['x'], ['y'], {
        n_supports: 2, support_vectors: attr.floats([1, 2, 3, 4, 5, 6, 7, 8]), coefficients: attr.floats([1, -1]), rho: attr.floats([0]),
        kernel_type: 'RBF', kernel_params: attr.floats([0.1, 0, 3]),
      }, 'svr')
      .output('y', 'float', ['N', 1])
      .toBytes(),
    svm_classifier: new ModelBuilder(ml)
      .input('x', 'float', ['N', 2])
      .mlNode('SVMClassifier', ['x'], ['label', 'scores'], {
        classlabels_ints: [0, 1, 2], vectors_per_class: [1, 1, 1], support_vectors: attr.floats([0, 0, 1, 1, -1, 2]),
        coefficients: attr.floats([1, -1, 0.5, 0.5, -0.5, 1]), rho: attr.floats([0.1, -0.2, 0.3]),
        kernel_type: 'LINEAR', prob_a: attr.floats([-1, -1, -1]), prob_b: attr.floats([0, 0, 0]),
      }, 'svc')
      .output('label', 'int64', ['N']).output('scores', 'float', ['N', 3])
      .toBytes(),
    tree_classifier: new ModelBuilder(ml)
      .input('x', 'float', ['N', 2])
      .mlNode('TreeEnsembleClassifier', ['x'], ['label', 'probs'], {
        classlabels_int64s: [0, 1], nodes_treeids: [0, 0, 0], nodes_nodeids: [0, 1, 2], nodes_featureids: [1, 0, 0],
        nodes_modes: ['BRANCH_LT', 'LEAF', 'LEAF'], nodes_values: attr.floats([0.5, 0, 0]), nodes_truenodeids: [1, 0, 0],
        nodes_falsenodeids: [2, 0, 0], class_ids: [0, 1, 0, 1], class_nodeids: [1, 1, 2, 2], class_treeids: [0, 0, 0, 0],
        class_weights: attr.floats([0.9, 0.1, 0.2, 0.8]), post_transform: 'NONE',
      })
      .output('label', 'int64', ['N']).output('probs', 'float', ['N', 2])
      .toBytes(),
  };
  return models;
}

let tabular = 0;
let skipped = 0;
function addOnnx(name: string, bytes: Uint8Array): void {
  try {
    write('tabular_graph_fuzz', `${name}.bin`, encodeTabular(normalize(parseOnnxModel(bytes)), tabular + 1));
    tabular++;
  } catch {
    skipped++;
  }
}
let builders: Record<string, Uint8Array> = {};
try {
  builders = builderModels();
} catch (e) {
  console.error(`fuzz seeds: the builder models failed: ${(e as Error).message}`);
}
for (const [name, bytes] of Object.entries(builders)) addOnnx(`builder_${name}`, bytes);
for (const file of walk(path.join(fixtures, 'onnx'), '.onnx')) {
  addOnnx(`fixture_${path.relative(path.join(fixtures, 'onnx'), file)}`, fs.readFileSync(file));
}

// ---- GGUF ----

let gguf = 0;
const vocab = spmVocab();
const tiny = [
  { arch: 'llama', nEmbd: 8, nLayer: 1, nHead: 2, nFf: 16, weightType: 'F32' },
  { arch: 'llama', nEmbd: 32, nLayer: 2, nHead: 4, nHeadKv: 2, nFf: 32, weightType: 'Q8_0', tiedOutput: true },
  { arch: 'llama', nEmbd: 32, nLayer: 1, nHead: 2, nFf: 64, weightType: 'Q4_0', embeddingType: 'F16' },
  { arch: 'qwen2', nEmbd: 16, nLayer: 1, nHead: 2, nFf: 16, weightType: 'F32' },
  { arch: 'llama', nEmbd: 256, nLayer: 1, nHead: 4, nFf: 256, weightType: 'Q4_K', embeddingType: 'Q6_K' },
] as const;
for (const [i, o] of tiny.entries()) {
  try {
    write('gguf_reader_fuzz', `tiny_${i}_${o.arch}_${o.weightType}.gguf`, encodeGguf(tinyModel({ ...o, vocab, seed: i + 1 }).spec));
    gguf++;
  } catch (e) {
    console.error(`fuzz seeds: tiny model ${i}: ${(e as Error).message}`);
  }
}
for (const file of walk(fixtures, '.gguf')) {
  write('gguf_reader_fuzz', `fixture_${path.basename(file)}`, fs.readFileSync(file));
  gguf++;
}

// ---- grammars ----

const schemas: unknown[] = [
  { type: 'object' },
  { type: 'object', properties: { name: { type: 'string' }, age: { type: 'integer' } }, required: ['name'] },
  { type: 'array', items: { type: 'number' }, maxItems: 3 },
  { enum: ['red', 'green', null, 3] },
  { type: 'string', pattern: '^[a-z]{2,4}[0-9]?$' },
  { type: 'boolean' },
];
let grammars = 0;
for (const [i, s] of schemas.entries()) {
  try {
    const words = encodeGrammar(jsonSchemaGrammar(s));
    const picks = Buffer.from('{"name":"x"}'.slice(0, 8 + i));
    const b = new Uint8Array(1 + picks.length + words.byteLength);
    b[0] = picks.length;
    b.set(picks, 1);
    b.set(new Uint8Array(words.buffer, words.byteOffset, words.byteLength), 1 + picks.length);
    write('grammar_fuzz', `schema_${i}.bin`, b);
    grammars++;
  } catch (e) {
    console.error(`fuzz seeds: schema ${i}: ${(e as Error).message}`);
  }
}

console.log(`fuzz seeds: ${gguf} GGUF, ${tabular} ONNX (${skipped} refused by the parser), ${grammars} grammars` +
  (fs.existsSync(fixtures) ? '' : ' (no ../shared/fixtures: generated seeds only)'));
