// Writes small ONNX models (and TensorProtos) for tests, through the same protobufjs schema the
// parser reads (src/tabular/onnx/schema.ts), so tests need no Python and no fixture files.
//
//   const bytes = new ModelBuilder({ opsets: { '': 13 } })
//     .input('x', 'float', ['N', 4])
//     .initializer('W', 'float', [3, 4], [...])
//     .node('Gemm', ['x', 'W'], ['y'], { transB: 1, alpha: attr.float(1) })
//     .output('y', 'float', ['N', 3])
//     .toBytes();
//
// Attribute values: a whole number is an INT and any other number a FLOAT (as onnx.helper does
// with Python ints and floats); number[] is INTS when every element is whole, else FLOATS; string
// and string[] are STRING(S). Use attr.float / attr.floats / attr.tensor ... to say it exactly.

import { ModelProto, TensorProto } from '../../src/tabular/onnx/proto.js';
import { ONNX_SCHEMA } from '../../src/tabular/onnx/schema.js';
import { DATA_TYPE_CODES } from '../../src/tabular/onnx/tensor.js';
import type { Dim, ElementType } from '../../src/tabular/onnx/types.js';

type Proto = Record<string, unknown>;

export interface TensorInit {
  name?: string;
  type: ElementType;
  dims: readonly number[];
  values: readonly (number | bigint | string | boolean)[];
  /** Store the elements in raw_data (little-endian) instead of the typed repeated field. */
  raw?: boolean;
}

/** AttributeProto.AttributeType's codes, from the schema the parser reads. */
const ATTRIBUTE_TYPE = ONNX_SCHEMA.nested.onnx.nested.AttributeProto.nested.AttributeType.values;

const utf8 = new TextEncoder();

/** An int64 as the {low, high} pair protobufjs's writer accepts for int64 fields. */
function long(v: number | bigint): { low: number; high: number; unsigned: boolean } {
  const u = BigInt.asUintN(64, typeof v === 'bigint' ? v : BigInt(v));
  return { low: Number(u & 0xffffffffn) | 0, high: Number(u >> 32n) | 0, unsigned: false };
}

/** float32 bits of a number to IEEE half bits (round to nearest even; enough for tests). */
export function numberToHalf(value: number): number {
  const f32 = new Float32Array([value]);
  const x = new Uint32Array(f32.buffer)[0]!;
  const sign = (x >>> 16) & 0x8000;
  const exp = (x >>> 23) & 0xff;
  let mant = x & 0x7fffff;
  if (exp === 0xff) return sign | 0x7c00 | (mant ? 0x200 : 0);
  let e = exp - 127 + 15;
  if (e >= 0x1f) return sign | 0x7c00;
  if (e <= 0) {
    if (e < -10) return sign;
    mant |= 0x800000;
    const shift = 14 - e;
    let half = mant >> shift;
    if ((mant >> (shift - 1)) & 1 && (mant & ((1 << (shift - 1)) - 1) || half & 1)) half++;
    return sign | half;
  }
  let half = (e << 10) | (mant >> 13);
  if (mant & 0x1000 && (mant & 0xfff || half & 1)) half++;
  return sign | half;
}

function rawBytes(type: ElementType, values: TensorInit['values']): Uint8Array {
  const size = { float: 4, double: 8, int64: 8, uint64: 8, int32: 4, uint32: 4, int16: 2, uint16: 2, float16: 2, bfloat16: 2 }[
    type as string
  ] ?? 1;
  const view = new DataView(new ArrayBuffer(values.length * size));
  values.forEach((v, k) => {
    const n = typeof v === 'boolean' ? Number(v) : v;
    switch (type) {
      case 'float':
        return view.setFloat32(k * 4, Number(n), true);
      case 'double':
        return view.setFloat64(k * 8, Number(n), true);
      case 'int64':
        return view.setBigInt64(k * 8, BigInt(n), true);
      case 'uint64':
        return view.setBigUint64(k * 8, BigInt(n), true);
      case 'int32':
        return view.setInt32(k * 4, Number(n), true);
      case 'uint32':
        return view.setUint32(k * 4, Number(n), true);
      case 'int16':
        return view.setInt16(k * 2, Number(n), true);
      case 'uint16':
        return view.setUint16(k * 2, Number(n), true);
      case 'float16':
        return view.setUint16(k * 2, numberToHalf(Number(n)), true);
      case 'int8':
        return view.setInt8(k, Number(n));
      default:
        return view.setUint8(k, Number(n));
    }
  });
  return new Uint8Array(view.buffer);
}

/** A TensorProto as a plain object for protobufjs's encoder. */
export function tensorProto(t: TensorInit): Proto {
  const proto: Proto = { dims: t.dims.map((d) => long(d)), dataType: DATA_TYPE_CODES[t.type] };
  if (t.name !== undefined) proto.name = t.name;
  if (t.raw) {
    if (t.type === 'string') throw new Error('string tensors cannot use raw_data');
    proto.rawData = rawBytes(t.type, t.values);
    return proto;
  }
  const v = t.values;
  switch (t.type) {
    case 'float':
      proto.floatData = v.map(Number);
      break;
    case 'double':
      proto.doubleData = v.map(Number);
      break;
    case 'int64':
      proto.int64Data = v.map((x) => long(typeof x === 'bigint' ? x : Number(x)));
      break;
    case 'uint32':
    case 'uint64':
      proto.uint64Data = v.map((x) => ({ ...long(typeof x === 'bigint' ? x : Number(x)), unsigned: true }));
      break;
    case 'string':
      proto.stringData = v.map((x) => utf8.encode(String(x)));
      break;
    case 'float16':
      proto.int32Data = v.map((x) => numberToHalf(Number(x)));
      break;
    default:
      proto.int32Data = v.map((x) => Number(x));
  }
  return proto;
}

export function encodeTensorProto(t: TensorInit): Uint8Array {
  return TensorProto.encode(tensorProto(t) as never).finish();
}

/** An explicitly typed attribute value. */
export class Attr {
  constructor(readonly proto: Proto) {}
}

export const attr = {
  float: (v: number) => new Attr({ type: ATTRIBUTE_TYPE.FLOAT, f: v }),
  floats: (v: readonly number[]) => new Attr({ type: ATTRIBUTE_TYPE.FLOATS, floats: [...v] }),
  int: (v: number | bigint) => new Attr({ type: ATTRIBUTE_TYPE.INT, i: long(v) }),
  ints: (v: readonly (number | bigint)[]) => new Attr({ type: ATTRIBUTE_TYPE.INTS, ints: v.map(long) }),
  string: (v: string) => new Attr({ type: ATTRIBUTE_TYPE.STRING, s: utf8.encode(v) }),
  strings: (v: readonly string[]) => new Attr({ type: ATTRIBUTE_TYPE.STRINGS, strings: v.map((x) => utf8.encode(x)) }),
  tensor: (t: TensorInit) => new Attr({ type: ATTRIBUTE_TYPE.TENSOR, t: tensorProto(t) }),
  graph: (g: GraphBuilder) => new Attr({ type: ATTRIBUTE_TYPE.GRAPH, g: g.toGraphProto() }),
  /** Any AttributeProto fields, as given (e.g. a wrong type code); `name` is added. */
  raw: (proto: Proto) => new Attr(proto),
};

export type AttrValue = number | string | readonly number[] | readonly string[] | Attr;

function attributeProto(name: string, value: AttrValue): Proto {
  let proto: Proto;
  if (value instanceof Attr) proto = value.proto;
  else if (typeof value === 'string') proto = attr.string(value).proto;
  else if (typeof value === 'number') proto = (Number.isInteger(value) ? attr.int(value) : attr.float(value)).proto;
  else if (value.every((x) => typeof x === 'string')) proto = attr.strings(value as string[]).proto;
  else {
    const nums = value as readonly number[];
    proto = (nums.every((x) => Number.isInteger(x)) ? attr.ints(nums) : attr.floats(nums)).proto;
  }
  return { name, ...proto };
}

export type ValueTypeInit =
  | { kind?: 'tensor'; type: ElementType; shape?: readonly Dim[] }
  | { kind: 'sequence-map'; keyType: 'int64' | 'string'; valueType: ElementType }
  | { kind: 'none' };

function typeProto(t: ValueTypeInit): Proto | undefined {
  if (t.kind === 'none') return undefined;
  if (t.kind === 'sequence-map') {
    return {
      sequenceType: {
        elemType: {
          mapType: {
            keyType: DATA_TYPE_CODES[t.keyType],
            valueType: { tensorType: { elemType: DATA_TYPE_CODES[t.valueType] } },
          },
        },
      },
    };
  }
  const tensorType: Proto = { elemType: DATA_TYPE_CODES[t.type] };
  if (t.shape) {
    tensorType.shape = {
      dim: t.shape.map((d) => (d === null ? {} : typeof d === 'number' ? { dimValue: long(d) } : { dimParam: d })),
    };
  }
  return { tensorType };
}

export interface NodeOptions {
  name?: string;
  domain?: string;
}

export class GraphBuilder {
  protected readonly inputs: Proto[] = [];
  protected readonly outputs: Proto[] = [];
  protected readonly initializers: Proto[] = [];
  protected readonly nodes: Proto[] = [];
  protected readonly valueInfos: Proto[] = [];

  constructor(protected graphName = 'test_graph') {}

  /** A graph input; `shape` entries: a number, a symbolic name, or null (unknown). */
  input(name: string, type: ElementType, shape?: readonly Dim[]): this {
    this.inputs.push({ name, type: typeProto({ type, ...(shape ? { shape } : {}) }) });
    return this;
  }

  /** A graph input with any type (e.g. a map), or none at all. */
  inputOfType(name: string, t: ValueTypeInit | Proto): this {
    this.inputs.push({ name, type: 'kind' in t || 'type' in t ? typeProto(t as ValueTypeInit) : t });
    return this;
  }

  output(name: string, type: ElementType, shape?: readonly Dim[]): this {
    this.outputs.push({ name, type: typeProto({ type, ...(shape ? { shape } : {}) }) });
    return this;
  }

  outputOfType(name: string, t: ValueTypeInit | Proto): this {
    const type = 'kind' in t || ('type' in t && typeof t.type === 'string') ? typeProto(t as ValueTypeInit) : t;
    this.outputs.push(type === undefined ? { name } : { name, type });
    return this;
  }

  /** A seq(map(key, value)) output, as ZipMap produces. */
  sequenceMapOutput(name: string, keyType: 'int64' | 'string', valueType: ElementType = 'float'): this {
    return this.outputOfType(name, { kind: 'sequence-map', keyType, valueType });
  }

  initializer(name: string, type: ElementType, dims: readonly number[], values: TensorInit['values'], raw = false): this {
    this.initializers.push(tensorProto({ name, type, dims, values, raw }));
    return this;
  }

  /** An initializer from raw TensorProto fields (for malformed tensors). */
  rawInitializer(proto: Proto): this {
    this.initializers.push(proto);
    return this;
  }

  node(
    opType: string,
    inputs: readonly string[],
    outputs: readonly string[],
    attributes: Record<string, AttrValue> = {},
    options: NodeOptions = {},
  ): this {
    this.nodes.push({
      opType,
      input: [...inputs],
      output: [...outputs],
      ...(options.name !== undefined ? { name: options.name } : {}),
      ...(options.domain !== undefined ? { domain: options.domain } : {}),
      attribute: Object.entries(attributes).map(([n, v]) => attributeProto(n, v)),
    });
    return this;
  }

  /** A node in the ai.onnx.ml domain. */
  mlNode(
    opType: string,
    inputs: readonly string[],
    outputs: readonly string[],
    attributes: Record<string, AttrValue> = {},
    name?: string,
  ): this {
    return this.node(opType, inputs, outputs, attributes, { domain: 'ai.onnx.ml', ...(name ? { name } : {}) });
  }

  valueInfo(name: string, type: ElementType, shape?: readonly Dim[]): this {
    this.valueInfos.push({ name, type: typeProto({ type, ...(shape ? { shape } : {}) }) });
    return this;
  }

  toGraphProto(): Proto {
    return {
      name: this.graphName,
      input: this.inputs,
      output: this.outputs,
      initializer: this.initializers,
      node: this.nodes,
      valueInfo: this.valueInfos,
    };
  }
}

export interface ModelOptions {
  /** Imported operator sets by domain ('' for ai.onnx); default { '': 13 }. */
  opsets?: Record<string, number>;
  irVersion?: number;
  producerName?: string;
  producerVersion?: string;
  metadata?: Record<string, string>;
  graphName?: string;
}

export class ModelBuilder extends GraphBuilder {
  private readonly options: ModelOptions;

  constructor(options: ModelOptions = {}) {
    super(options.graphName ?? 'test_graph');
    this.options = options;
  }

  toModelProto(): Proto {
    const opsets = this.options.opsets ?? { '': 13 };
    return {
      irVersion: long(this.options.irVersion ?? 8),
      producerName: this.options.producerName ?? 'onnx-builder',
      producerVersion: this.options.producerVersion ?? '1',
      opsetImport: Object.entries(opsets).map(([domain, version]) => ({ domain, version: long(version) })),
      metadataProps: Object.entries(this.options.metadata ?? {}).map(([key, value]) => ({ key, value })),
      graph: this.toGraphProto(),
    };
  }

  toBytes(): Uint8Array {
    return encodeModelProto(this.toModelProto());
  }
}

/** Encodes a ModelProto given as a plain object (for hand-made, possibly malformed models). */
export function encodeModelProto(proto: Proto): Uint8Array {
  return ModelProto.encode(proto as never).finish();
}

// ---- ready-made models ----

/** A 4 -> 3 -> 2 MLP: Gemm + Relu + Gemm + Softmax, float, batch dimension 'N'. */
export function mlpModel(opset = 13): ModelBuilder {
  const w1 = Array.from({ length: 12 }, (_, k) => (k % 5) / 10 - 0.2);
  const w2 = Array.from({ length: 6 }, (_, k) => (k % 3) / 4 - 0.25);
  return new ModelBuilder({ opsets: { '': opset } })
    .input('x', 'float', ['N', 4])
    .initializer('W1', 'float', [3, 4], w1)
    .initializer('B1', 'float', [3], [0.1, -0.1, 0.05])
    .initializer('W2', 'float', [2, 3], w2, true)
    .initializer('B2', 'float', [2], [0, 0.5], true)
    .node('Gemm', ['x', 'W1', 'B1'], ['h'], { transB: 1 }, { name: 'dense1' })
    .node('Relu', ['h'], ['a'], {}, { name: 'relu1' })
    .node('Gemm', ['a', 'W2', 'B2'], ['logits'], { transB: 1, alpha: attr.float(1) }, { name: 'dense2' })
    .node('Softmax', ['logits'], ['probs'], { axis: 1 }, { name: 'softmax' })
    .output('probs', 'float', ['N', 2]);
}

/** The attributes of a one-split TreeEnsembleRegressor, one target: x[feature] <= threshold ? 1 : 2. */
export function stumpRegressorAttrs(feature = 0, threshold = 0.5): Record<string, AttrValue> {
  return {
    n_targets: 1,
    nodes_treeids: [0, 0, 0],
    nodes_nodeids: [0, 1, 2],
    nodes_featureids: [feature, 0, 0],
    nodes_modes: ['BRANCH_LEQ', 'LEAF', 'LEAF'],
    nodes_values: attr.floats([threshold, 0, 0]),
    nodes_truenodeids: [1, 0, 0],
    nodes_falsenodeids: [2, 0, 0],
    target_ids: [0, 0],
    target_nodeids: [1, 2],
    target_treeids: [0, 0],
    target_weights: attr.floats([1, 2]),
  };
}

/** A one-tree TreeEnsembleRegressor on 2 features: x0 <= 0.5 ? 1.5 : (x1 <= 2 ? -1 : 3). */
export function treeRegressorModel(mlOpset = 3): ModelBuilder {
  return new ModelBuilder({ opsets: { '': 13, 'ai.onnx.ml': mlOpset } })
    .input('features', 'float', [null, 2])
    .mlNode(
      'TreeEnsembleRegressor',
      ['features'],
      ['score'],
      {
        n_targets: 1,
        nodes_treeids: [0, 0, 0, 0, 0],
        nodes_nodeids: [0, 1, 2, 3, 4],
        nodes_featureids: [0, 0, 1, 0, 0],
        nodes_modes: ['BRANCH_LEQ', 'LEAF', 'BRANCH_LEQ', 'LEAF', 'LEAF'],
        nodes_values: attr.floats([0.5, 0, 2, 0, 0]),
        nodes_truenodeids: [1, 0, 3, 0, 0],
        nodes_falsenodeids: [2, 0, 4, 0, 0],
        target_ids: [0, 0, 0],
        target_nodeids: [1, 3, 4],
        target_treeids: [0, 0, 0],
        target_weights: attr.floats([1.5, -1, 3]),
        post_transform: 'NONE',
      },
      'tree',
    )
    .output('score', 'float', [null, 1]);
}
