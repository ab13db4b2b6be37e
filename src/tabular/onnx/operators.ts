// The operator support table: which ONNX operators the native executor runs, in which versions,
// with which attributes and attribute values, and the one canonical form of each that `normalize`
// produces, so that the executor implements one form per operator instead of every opset's.
//
// validateSupported(model) throws UnsupportedOperatorError (or OnnxModelError for a malformed node)
// for the first node the engine cannot run; normalize(model) returns the executor's form of the
// model. What normalize guarantees, for every node it returns:
// - the node's operator is in OPERATORS and `version` is the operator version that applies;
// - every attribute is of the type listed in the operator's `attributes`, every attribute with a
//   default is present (defaults filled in), version-specific and ignored attributes are gone, and
//   the operator-specific canonical form (`canonical` below) holds;
// - trailing omitted inputs ('') are trimmed, so `inputs.length` counts the inputs given;
// - Constant nodes are folded into initializers (named after their output), so the executor never
//   sees a Constant; initializers no node or graph output uses any more are dropped;
// - integer attributes are exact (no int64 outside ±(2^53 - 1) survives).

import { OnnxModelError, UnsupportedOperatorError } from './errors.js';
import { qualifiedOpType } from './parse.js';
import { DATA_TYPE_CODES, dataTypeName, elementTypeFromCode } from './tensor.js';
import type {
  ElementType,
  NormalizedModel,
  NormalizedNode,
  OnnxAttribute,
  OnnxAttributeType,
  OnnxModel,
  OnnxTensor,
} from './types.js';

export { UnsupportedOperatorError } from './errors.js';

/** Operator set versions we accept, by normalised domain ('' is ai.onnx). */
export const SUPPORTED_OPSETS: Readonly<Record<string, { readonly min: number; readonly max: number }>> = {
  '': { min: 1, max: 25 },
  'ai.onnx.ml': { min: 1, max: 5 },
};

export interface AttributeRule {
  type: OnnxAttributeType;
  /** The attribute's type in the operator's versions up to `until` when it differed then. */
  legacy?: { until: number; type: OnnxAttributeType };
  /** First operator version (since-version) that has the attribute; default: all. */
  since?: number;
  /** Last operator version (since-version) that has it; default: all later ones. */
  until?: number;
  required?: boolean;
  /** Filled in by normalize when the node leaves the attribute out. */
  default?: OnnxAttribute | ((version: number) => OnnxAttribute);
  /** The values we implement (of the scalar, or of each element of a list). */
  allowed?: readonly (string | number)[];
  /** Accepted and checked, but left out of the canonical form: the executor ignores it. */
  drop?: boolean;
  /** Valid ONNX, but any use of it is refused (e.g. the legacy broadcasting `axis`). */
  refused?: boolean;
  doc?: string;
}

export interface NodeContext {
  /** The node being normalised: attributes already checked, defaults filled, dropped ones gone. */
  node: NormalizedNode;
  version: number;
  opset: number;
  /** The value of an initializer or of an already folded Constant, if `name` is one. */
  constant(name: string): OnnxTensor | undefined;
  /** Adds an initializer with a fresh name derived from `base`; returns the name. */
  addInitializer(base: string, tensor: Omit<OnnxTensor, 'name'>): string;
  /** Folds the node away, its single output becoming this initializer (Constant). */
  fold(tensor: Omit<OnnxTensor, 'name'>): void;
  /** Throws UnsupportedOperatorError: `operator ... is not supported: <reason>`. */
  unsupported(reason: string): never;
  /** Throws UnsupportedOperatorError: `attribute "<name>"=<value> of operator ... is not supported`. */
  unsupportedAttribute(name: string, value?: string): never;
  /** Throws OnnxModelError: `node "<name>" (operator "<op>") <what>`. */
  invalid(what: string): never;
}

export interface OperatorSpec {
  /** '' for ai.onnx. */
  domain: '' | 'ai.onnx.ml';
  opType: string;
  /** Every since-version of the operator in ONNX up to the newest opset we know. */
  history: readonly number[];
  /** The since-versions we support. */
  supported: readonly number[];
  /** Why a known version outside `supported` is refused (ends the error message). */
  unsupportedVersion?: (version: number) => string;
  /** [min, max] number of inputs, by operator version. */
  inputs: (version: number) => readonly [number, number];
  outputs: readonly [number, number];
  attributes: Readonly<Record<string, AttributeRule>>;
  /** Groups of attributes of which exactly one must be set. */
  exactlyOne?: readonly (readonly string[])[];
  /** The canonical form normalize produces, for the executor's authors. */
  canonical: string;
  normalize?: (ctx: NodeContext) => void;
}

// ---- helpers for the table ----

const f = (value: number): OnnxAttribute => ({ type: 'float', value });
const i = (value: number): OnnxAttribute => ({ type: 'int', value });
const s = (value: string): OnnxAttribute => ({ type: 'string', value });
const floats = (value: number[]): OnnxAttribute => ({ type: 'floats', value });
const ints = (value: number[]): OnnxAttribute => ({ type: 'ints', value });

const fixed =
  (min: number, max: number) =>
  (): readonly [number, number] => [min, max];
const ONE = fixed(1, 1);
const TWO = fixed(2, 2);

const POST_TRANSFORMS = ['NONE', 'SOFTMAX', 'LOGISTIC', 'SOFTMAX_ZERO', 'PROBIT'] as const;
const AGGREGATE_FUNCTIONS = ['AVERAGE', 'SUM', 'MIN', 'MAX'] as const;
const TREE_MODES = ['BRANCH_LEQ', 'BRANCH_LT', 'BRANCH_GTE', 'BRANCH_GT', 'BRANCH_EQ', 'BRANCH_NEQ', 'LEAF'] as const;
/** TreeEnsemble-5's uint8 node modes, by code. */
const TREE_ENSEMBLE_MODES = ['BRANCH_LEQ', 'BRANCH_LT', 'BRANCH_GTE', 'BRANCH_GT', 'BRANCH_EQ', 'BRANCH_NEQ', 'BRANCH_MEMBER'] as const;
/** TreeEnsemble-5's aggregate_function codes. */
const TREE_ENSEMBLE_AGGREGATES = ['AVERAGE', 'SUM', 'MIN', 'MAX'] as const;

/** Element types Cast may convert to. */
const CAST_TARGETS: readonly ElementType[] = [
  'float',
  'double',
  'int8',
  'uint8',
  'int16',
  'uint16',
  'int32',
  'uint32',
  'int64',
  'uint64',
  'bool',
  'string',
];

const CONSUMED_INPUTS: AttributeRule = {
  type: 'ints',
  until: 1,
  drop: true,
  doc: 'legacy memory-reuse hint of version 1, ignored',
};

function unary(opType: string, history: number[], canonical = 'one input, no attributes'): OperatorSpec {
  return {
    domain: '',
    opType,
    history,
    supported: history,
    inputs: ONE,
    outputs: [1, 1],
    attributes: { consumed_inputs: CONSUMED_INPUTS },
    canonical,
  };
}

function binary(opType: string): OperatorSpec {
  return {
    domain: '',
    opType,
    history: [1, 6, 7, 13, 14],
    supported: [1, 6, 7, 13, 14],
    inputs: TWO,
    outputs: [1, 1],
    attributes: {
      consumed_inputs: CONSUMED_INPUTS,
      broadcast: {
        type: 'int',
        until: 6,
        allowed: [0, 1],
        drop: true,
        doc: 'versions 1 and 6: 1 enables suffix broadcasting of B, a case of numpy broadcasting',
      },
      axis: {
        type: 'int',
        until: 6,
        refused: true,
        doc: 'versions 1 and 6: legacy broadcasting of B from a given axis, not supported',
      },
    },
    canonical: 'inputs A and B with numpy-style (multidirectional) broadcasting; no attributes',
  };
}

// ---- conversions used by several normalizers ----

function tensorNumbers(ctx: NodeContext, name: string, t: OnnxTensor): number[] {
  if (t.data instanceof Float32Array || t.data instanceof Float64Array) return Array.from(t.data);
  return ctx.invalid(`attribute "${name}" must hold floating-point values, not ${t.dataType}`);
}

/** Replaces `<name>_as_tensor` (a tensor) by `<name>` (floats), as the canonical form. */
function asTensorToFloats(ctx: NodeContext, name: string): void {
  const attrs = ctx.node.attributes;
  const t = attrs[`${name}_as_tensor`];
  if (t === undefined) return;
  if (attrs[name] !== undefined) ctx.invalid(`sets both "${name}" and "${name}_as_tensor"`);
  delete attrs[`${name}_as_tensor`];
  if (t.type === 'tensor') attrs[name] = floats(tensorNumbers(ctx, `${name}_as_tensor`, t.value));
}

function tensorToFloatsAttr(ctx: NodeContext, name: string): void {
  const a = ctx.node.attributes[name];
  if (a?.type === 'tensor') ctx.node.attributes[name] = floats(tensorNumbers(ctx, name, a.value));
}

function listLength(a: OnnxAttribute | undefined): number {
  if (a === undefined) return 0;
  return Array.isArray(a.value) ? a.value.length : 1;
}

function requireSameLength(ctx: NodeContext, names: readonly string[]): number {
  const attrs = ctx.node.attributes;
  const present = names.filter((n) => attrs[n] !== undefined);
  const first = present[0];
  if (first === undefined) return 0;
  const n = listLength(attrs[first]);
  for (const other of present) {
    const m = listLength(attrs[other]);
    if (m !== n) ctx.invalid(`attributes "${first}" and "${other}" have different lengths (${n} and ${m})`);
  }
  return n;
}

/** Fills a per-node 0/1 list (missing_value_tracks_true) with zeros when it is absent or empty. */
function fillZeros(ctx: NodeContext, name: string, length: number): void {
  const a = ctx.node.attributes[name];
  if (a === undefined || (a.type === 'ints' && a.value.length === 0)) {
    ctx.node.attributes[name] = ints(new Array<number>(length).fill(0));
  } else if (listLength(a) !== length) {
    ctx.invalid(`attribute "${name}" has ${listLength(a)} entries for ${length} tree nodes`);
  }
}

function fillTargets(ctx: NodeContext, idsName: string): void {
  if (ctx.node.attributes.n_targets !== undefined) return;
  const ids = ctx.node.attributes[idsName];
  const values = ids?.type === 'ints' ? ids.value : [];
  ctx.node.attributes.n_targets = i(values.reduce((max, v) => Math.max(max, v + 1), 1));
}

function int64Tensor(values: readonly number[], exact?: readonly string[]): Omit<OnnxTensor, 'name'> {
  return {
    dataType: 'int64',
    dims: [values.length],
    data: BigInt64Array.from(values, (v, k) => BigInt(exact?.[k] ?? v)),
  };
}

function constantInts(ctx: NodeContext, input: string, what: string): number[] {
  const t = ctx.constant(input);
  if (t === undefined) {
    return ctx.unsupported(`its "${what}" input must be a constant (an initializer or a Constant node)`);
  }
  if (!(t.data instanceof BigInt64Array)) ctx.invalid(`input "${what}" must be an int64 tensor, not ${t.dataType}`);
  return Array.from(t.data, (v) => {
    if (v > BigInt(Number.MAX_SAFE_INTEGER) || v < BigInt(Number.MIN_SAFE_INTEGER)) {
      ctx.unsupported(`its "${what}" input holds ${v.toString()}`);
    }
    return Number(v);
  });
}

/** An attribute list (floats, int64s, strings) or 1-D tensor as a tensor, for LabelEncoder. */
function labelTensor(ctx: NodeContext, name: string, a: OnnxAttribute, allowed: readonly ElementType[]): OnnxTensor {
  let t: OnnxTensor;
  switch (a.type) {
    case 'floats':
      t = { name, dataType: 'float', dims: [a.value.length], data: Float32Array.from(a.value) };
      break;
    case 'ints':
      t = { name, ...int64Tensor(a.value, a.exact) };
      break;
    case 'strings':
      t = { name, dataType: 'string', dims: [a.value.length], data: [...a.value] };
      break;
    case 'tensor':
      t = { ...a.value, name, dims: [a.value.data.length] };
      break;
    default:
      return ctx.invalid(`attribute "${name}" has an unexpected type ${a.type}`);
  }
  if (!allowed.includes(t.dataType)) ctx.unsupportedAttribute(name, `tensor(${t.dataType})`);
  return t;
}

const LABEL_ENCODER_TYPES: readonly ElementType[] = ['string', 'int64', 'float', 'int32', 'int16', 'double'];

function labelEncoderDefault(ctx: NodeContext, values: OnnxTensor): OnnxTensor {
  const attrs = ctx.node.attributes;
  const given = attrs.default_tensor;
  if (given?.type === 'tensor') {
    if (given.value.dataType !== values.dataType) {
      ctx.invalid(`attribute "default_tensor" is ${given.value.dataType} but the values are ${values.dataType}`);
    }
    if (given.value.data.length !== 1) {
      ctx.invalid(`attribute "default_tensor" must hold one element, not ${given.value.data.length}`);
    }
    return { ...given.value, name: 'default_tensor', dims: [1] };
  }
  const one = (dataType: ElementType, data: OnnxTensor['data']): OnnxTensor => ({
    name: 'default_tensor',
    dataType,
    dims: [1],
    data,
  });
  switch (values.dataType) {
    case 'string': {
      const d = attrs.default_string;
      return one('string', [d?.type === 'string' ? d.value : '_Unused']);
    }
    case 'int64':
    case 'int32':
    case 'int16': {
      const d = attrs.default_int64;
      const v = d?.type === 'int' ? d.value : -1;
      return values.dataType === 'int64' ? one('int64', BigInt64Array.of(BigInt(v))) : one(values.dataType, Int32Array.of(v));
    }
    default: {
      const d = attrs.default_float;
      const v = d?.type === 'float' ? d.value : -0;
      return values.dataType === 'double' ? one('double', Float64Array.of(v)) : one('float', Float32Array.of(v));
    }
  }
}

/** The nodes_* attributes and post_transform of TreeEnsembleRegressor/Classifier 1 and 3. */
const TREE_NODE_ATTRIBUTES: Readonly<Record<string, AttributeRule>> = {
  nodes_treeids: { type: 'ints', required: true },
  nodes_nodeids: { type: 'ints', required: true },
  nodes_featureids: { type: 'ints', required: true },
  nodes_modes: { type: 'strings', required: true, allowed: TREE_MODES },
  nodes_values: { type: 'floats' },
  nodes_values_as_tensor: { type: 'tensor', since: 3 },
  nodes_truenodeids: { type: 'ints', required: true },
  nodes_falsenodeids: { type: 'ints', required: true },
  nodes_missing_value_tracks_true: { type: 'ints', allowed: [0, 1] },
  nodes_hitrates: { type: 'floats', drop: true, doc: 'performance hint, ignored' },
  nodes_hitrates_as_tensor: { type: 'tensor', since: 3, drop: true, doc: 'performance hint, ignored' },
  post_transform: { type: 'string', default: s('NONE'), allowed: POST_TRANSFORMS },
};

const TREE_NODE_LISTS = [
  'nodes_treeids',
  'nodes_nodeids',
  'nodes_featureids',
  'nodes_modes',
  'nodes_values',
  'nodes_truenodeids',
  'nodes_falsenodeids',
];

const ML = 'ai.onnx.ml' as const;
const TREE_DEPRECATED = (version: number) =>
  version >= 5 ? 'it is deprecated from ai.onnx.ml opset 5, where ai.onnx.ml.TreeEnsemble replaces it' : '';

// ---- the table ----

export const OPERATORS: readonly OperatorSpec[] = [
  {
    domain: '',
    opType: 'Gemm',
    history: [1, 6, 7, 9, 11, 13],
    supported: [1, 6, 7, 9, 11, 13],
    inputs: (v) => (v >= 11 ? [2, 3] : [3, 3]),
    outputs: [1, 1],
    attributes: {
      alpha: { type: 'float', default: f(1) },
      beta: { type: 'float', default: f(1) },
      transA: { type: 'int', default: i(0), allowed: [0, 1] },
      transB: { type: 'int', default: i(0), allowed: [0, 1] },
      broadcast: {
        type: 'int',
        until: 6,
        allowed: [0, 1],
        drop: true,
        doc: 'versions 1 and 6: C is unidirectionally broadcast, as in every later version',
      },
    },
    canonical:
      'Y = alpha * A\' * B\' + beta * C with A\' = transpose(A) if transA, B\' likewise; inputs A, B and optional C ' +
      '(unidirectionally broadcast to [M, N]); attributes alpha, beta, transA, transB always present',
  },
  {
    domain: '',
    opType: 'MatMul',
    history: [1, 9, 13],
    supported: [1, 9, 13],
    inputs: TWO,
    outputs: [1, 1],
    attributes: {},
    canonical: 'numpy matmul of inputs A and B (batched, 1-D operands promoted); no attributes',
  },
  binary('Add'),
  binary('Sub'),
  binary('Mul'),
  binary('Div'),
  unary('Relu', [1, 6, 13, 14]),
  {
    domain: '',
    opType: 'LeakyRelu',
    history: [1, 6, 16],
    supported: [1, 6, 16],
    inputs: ONE,
    outputs: [1, 1],
    attributes: { alpha: { type: 'float', default: f(0.01) }, consumed_inputs: CONSUMED_INPUTS },
    canonical: 'y = x < 0 ? alpha * x : x; attribute alpha always present',
  },
  unary('Sigmoid', [1, 6, 13]),
  unary('Tanh', [1, 6, 13]),
  unary('Exp', [1, 6, 13]),
  unary('Log', [1, 6, 13]),
  {
    domain: '',
    opType: 'Softmax',
    history: [1, 11, 13],
    supported: [1, 11, 13],
    inputs: ONE,
    outputs: [1, 1],
    attributes: {
      axis: { type: 'int', default: (v) => i(v >= 13 ? -1 : 1) },
    },
    canonical:
      'attributes axis (always present; its default was 1 before opset 13 and -1 since) and coerce_2d: ' +
      'coerce_2d = 1 (versions 1 and 11) normalises over all dimensions from axis on taken together (the input ' +
      'viewed as 2-D [prod(d[0..axis)), prod(d[axis..)) ]), coerce_2d = 0 (version 13) along axis alone',
    normalize(ctx) {
      ctx.node.attributes.coerce_2d = i(ctx.version >= 13 ? 0 : 1);
    },
  },
  {
    domain: '',
    opType: 'Identity',
    history: [1, 13, 14, 16, 19, 21, 23, 24, 25],
    supported: [1, 13, 14, 16, 19, 21, 23, 24, 25],
    inputs: ONE,
    outputs: [1, 1],
    attributes: {},
    canonical: 'one tensor input copied to the output; no attributes',
  },
  {
    domain: '',
    opType: 'Flatten',
    history: [1, 9, 11, 13, 21, 23, 24, 25],
    supported: [1, 9, 11, 13, 21, 23, 24, 25],
    inputs: ONE,
    outputs: [1, 1],
    attributes: { axis: { type: 'int', default: i(1) } },
    canonical: 'output [prod(d[0..axis)), prod(d[axis..))]; attribute axis always present (negative from version 11)',
  },
  {
    domain: '',
    opType: 'Reshape',
    history: [1, 5, 13, 14, 19, 21, 23, 24, 25],
    supported: [1, 5, 13, 14, 19, 21, 23, 24, 25],
    inputs: (v) => (v >= 5 ? [2, 2] : [1, 1]),
    outputs: [1, 1],
    attributes: {
      shape: { type: 'ints', until: 1, required: true, doc: 'version 1: the new shape as an attribute' },
      consumed_inputs: CONSUMED_INPUTS,
      allowzero: { type: 'int', since: 14, allowed: [0, 1] },
    },
    canonical:
      'inputs data and shape (an int64 tensor; version 1\'s shape attribute becomes an initializer); attribute ' +
      'allowzero always present (0 before version 14): with 0 a 0 in shape copies the input dimension, with 1 it ' +
      'means an empty dimension; -1 infers one dimension',
    normalize(ctx) {
      const attrs = ctx.node.attributes;
      const shape = attrs.shape;
      if (shape?.type === 'ints') {
        delete attrs.shape;
        const name = ctx.addInitializer(`${ctx.node.name}_shape`, int64Tensor(shape.value));
        ctx.node.inputs = [ctx.node.inputs[0] ?? '', name];
      }
      if (attrs.allowzero === undefined) attrs.allowzero = i(0);
    },
  },
  {
    domain: '',
    opType: 'Concat',
    history: [1, 4, 11, 13],
    supported: [1, 4, 11, 13],
    inputs: fixed(1, Infinity),
    outputs: [1, 1],
    attributes: {
      axis: { type: 'int', doc: 'optional (default 1) in version 1, required from version 4, negative from version 11' },
    },
    canonical: 'one or more inputs concatenated along axis; attribute axis always present',
    normalize(ctx) {
      if (ctx.node.attributes.axis !== undefined) return;
      if (ctx.version >= 4) ctx.invalid('lacks the required attribute "axis"');
      ctx.node.attributes.axis = i(1);
    },
  },
  {
    domain: '',
    opType: 'Cast',
    history: [1, 6, 9, 13, 19, 21, 23, 24, 25],
    supported: [1, 6, 9, 13, 19, 21, 23, 24, 25],
    inputs: ONE,
    outputs: [1, 1],
    attributes: {
      to: {
        type: 'int',
        legacy: { until: 1, type: 'string' },
        required: true,
        doc: 'the target TensorProto.DataType code (version 1: its name, e.g. "FLOAT")',
      },
      saturate: { type: 'int', since: 19, drop: true, doc: 'float8 targets only, which are not supported' },
      round_mode: { type: 'string', since: 19, drop: true, doc: 'float8e8m0 targets only, which are not supported' },
    },
    canonical:
      'attribute to as a string: the target element type name (float, double, int8, uint8, int16, uint16, int32, ' +
      'uint32, int64, uint64, bool or string), whether the file gave a code (version 6 on) or a name (version 1)',
    normalize(ctx) {
      const to = ctx.node.attributes.to;
      let target: ElementType | undefined;
      let shown: string;
      if (to?.type === 'string') {
        // Version 1 names the type: "FLOAT", "INT64", ...
        const code = (DATA_TYPE_CODES as Record<string, number>)[to.value.toLowerCase()];
        target = code === undefined ? undefined : elementTypeFromCode(code);
        shown = JSON.stringify(to.value);
      } else if (to?.type === 'int') {
        target = elementTypeFromCode(to.value);
        shown = dataTypeName(to.value);
      } else {
        return ctx.invalid('lacks the required attribute "to"');
      }
      if (target === undefined || !CAST_TARGETS.includes(target)) return ctx.unsupportedAttribute('to', shown);
      ctx.node.attributes.to = s(target);
    },
  },
  {
    domain: '',
    opType: 'Squeeze',
    history: [1, 11, 13, 21, 23, 24, 25],
    supported: [1, 11, 13, 21, 23, 24, 25],
    inputs: (v) => (v >= 13 ? [1, 2] : [1, 1]),
    outputs: [1, 1],
    attributes: { axes: { type: 'ints', until: 11 } },
    canonical:
      'one input; attribute axes (ints) when given, from the attribute (versions 1 and 11) or from a constant ' +
      'axes input (version 13 on, which must be an initializer or a Constant); no axes: every dimension of size 1',
    normalize(ctx) {
      const axesInput = ctx.node.inputs[1];
      if (axesInput) {
        ctx.node.attributes.axes = ints(constantInts(ctx, axesInput, 'axes'));
        ctx.node.inputs = [ctx.node.inputs[0] ?? ''];
      }
    },
  },
  {
    domain: '',
    opType: 'Unsqueeze',
    history: [1, 11, 13, 21, 23, 24, 25],
    supported: [1, 11, 13, 21, 23, 24, 25],
    inputs: (v) => (v >= 13 ? [2, 2] : [1, 1]),
    outputs: [1, 1],
    attributes: { axes: { type: 'ints', until: 11, required: true } },
    canonical:
      'one input; attribute axes (ints, always present), from the attribute (versions 1 and 11) or from the ' +
      'constant axes input (version 13 on, which must be an initializer or a Constant)',
    normalize(ctx) {
      const axesInput = ctx.node.inputs[1];
      if (axesInput) {
        ctx.node.attributes.axes = ints(constantInts(ctx, axesInput, 'axes'));
        ctx.node.inputs = [ctx.node.inputs[0] ?? ''];
      }
    },
  },
  {
    domain: '',
    opType: 'Clip',
    history: [1, 6, 11, 12, 13],
    supported: [1, 6, 11, 12, 13],
    inputs: (v) => (v >= 11 ? [1, 3] : [1, 1]),
    outputs: [1, 1],
    attributes: {
      min: { type: 'float', until: 6, doc: 'versions 1 and 6: the lower bound as an attribute' },
      max: { type: 'float', until: 6, doc: 'versions 1 and 6: the upper bound as an attribute' },
      consumed_inputs: CONSUMED_INPUTS,
    },
    canonical:
      'inputs x, min, max with the bounds always as inputs (\'\' or absent: unbounded on that side); versions 1 ' +
      'and 6 bound attributes become float32 scalar initializers (the executor converts a bound to x\'s element ' +
      'type); no attributes',
    normalize(ctx) {
      if (ctx.version >= 11) return;
      const attrs = ctx.node.attributes;
      const bound = (name: 'min' | 'max') => {
        const a = attrs[name];
        delete attrs[name];
        if (a?.type !== 'float') return '';
        return ctx.addInitializer(`${ctx.node.name}_${name}`, {
          dataType: 'float',
          dims: [],
          data: Float32Array.of(a.value),
        });
      };
      ctx.node.inputs = [ctx.node.inputs[0] ?? '', bound('min'), bound('max')];
    },
  },
  {
    domain: '',
    opType: 'BatchNormalization',
    history: [1, 6, 7, 9, 14, 15],
    supported: [7, 9, 14, 15],
    unsupportedVersion: () => 'versions before opset 7 are not supported',
    inputs: fixed(5, 5),
    outputs: [1, 5],
    attributes: {
      epsilon: { type: 'float', default: f(1e-5) },
      momentum: { type: 'float', drop: true, doc: 'training only, ignored' },
      spatial: { type: 'int', until: 7, allowed: [1], drop: true, doc: 'version 7: only the default 1' },
      training_mode: { type: 'int', since: 14, allowed: [0], drop: true, doc: 'inference only' },
    },
    canonical:
      'inference: Y = scale * (X - mean) / sqrt(var + epsilon) + B over the channel axis 1, inputs X, scale, B, ' +
      'mean, var; one output; attribute epsilon always present',
    normalize(ctx) {
      if (ctx.node.outputs.length > 1) {
        ctx.unsupported('its training outputs (running or saved mean and variance) are not supported');
      }
    },
  },
  {
    domain: '',
    opType: 'Constant',
    history: [1, 9, 11, 12, 13, 19, 21, 23, 24, 25],
    supported: [1, 9, 11, 12, 13, 19, 21, 23, 24, 25],
    inputs: fixed(0, 0),
    outputs: [1, 1],
    attributes: {
      value: { type: 'tensor' },
      sparse_value: { type: 'sparse_tensor', since: 11, refused: true },
      value_float: { type: 'float', since: 12 },
      value_floats: { type: 'floats', since: 12 },
      value_int: { type: 'int', since: 12 },
      value_ints: { type: 'ints', since: 12 },
      value_string: { type: 'string', since: 12 },
      value_strings: { type: 'strings', since: 12 },
    },
    exactlyOne: [
      ['value', 'sparse_value', 'value_float', 'value_floats', 'value_int', 'value_ints', 'value_string', 'value_strings'],
    ],
    canonical: 'folded by normalize into an initializer named after its output; the executor never sees it',
    normalize(ctx) {
      const [name, a] = Object.entries(ctx.node.attributes)[0] ?? [];
      if (name === undefined || a === undefined) return ctx.invalid('has no value');
      switch (a.type) {
        case 'tensor':
          return ctx.fold(a.value);
        case 'float':
          return ctx.fold({ dataType: 'float', dims: [], data: Float32Array.of(a.value) });
        case 'floats':
          return ctx.fold({ dataType: 'float', dims: [a.value.length], data: Float32Array.from(a.value) });
        case 'int':
          return ctx.fold({ dataType: 'int64', dims: [], data: BigInt64Array.of(BigInt(a.exact ?? a.value)) });
        case 'ints':
          return ctx.fold(int64Tensor(a.value, a.exact));
        case 'string':
          return ctx.fold({ dataType: 'string', dims: [], data: [a.value] });
        case 'strings':
          return ctx.fold({ dataType: 'string', dims: [a.value.length], data: [...a.value] });
        default:
          return ctx.unsupportedAttribute(name);
      }
    },
  },
  {
    domain: '',
    opType: 'Transpose',
    history: [1, 13, 21, 23, 24, 25],
    supported: [1, 13, 21, 23, 24, 25],
    inputs: ONE,
    outputs: [1, 1],
    attributes: { perm: { type: 'ints' } },
    canonical: 'one input; attribute perm (ints) when given, otherwise the dimensions are reversed',
  },

  // ---- ai.onnx.ml ----
  {
    domain: ML,
    opType: 'LinearRegressor',
    history: [1],
    supported: [1],
    inputs: ONE,
    outputs: [1, 1],
    attributes: {
      coefficients: { type: 'floats', required: true },
      intercepts: { type: 'floats', default: floats([]) },
      post_transform: { type: 'string', default: s('NONE'), allowed: POST_TRANSFORMS },
      targets: { type: 'int', default: i(1) },
    },
    canonical:
      'Y[n, t] = sum_f X[n, f] * coefficients[t * F + f] + intercepts[t] (intercepts may be empty), then ' +
      'post_transform; attributes coefficients, intercepts, post_transform, targets always present',
    normalize(ctx) {
      const t = ctx.node.attributes.targets;
      if (t?.type === 'int' && t.value < 1) ctx.unsupportedAttribute('targets', String(t.value));
    },
  },
  {
    domain: ML,
    opType: 'LinearClassifier',
    history: [1],
    supported: [1],
    inputs: ONE,
    outputs: [1, 2],
    attributes: {
      classlabels_ints: { type: 'ints' },
      classlabels_strings: { type: 'strings' },
      coefficients: { type: 'floats', required: true },
      intercepts: { type: 'floats', default: floats([]) },
      multi_class: { type: 'int', default: i(0), allowed: [0, 1] },
      post_transform: { type: 'string', default: s('NONE'), allowed: POST_TRANSFORMS },
    },
    exactlyOne: [['classlabels_ints', 'classlabels_strings']],
    canonical:
      'outputs Y (labels) and Z (scores [N, E]); exactly one of classlabels_ints / classlabels_strings; ' +
      'coefficients, intercepts, multi_class, post_transform always present',
  },
  {
    domain: ML,
    opType: 'TreeEnsembleRegressor',
    history: [1, 3, 5],
    supported: [1, 3],
    unsupportedVersion: TREE_DEPRECATED,
    inputs: ONE,
    outputs: [1, 1],
    attributes: {
      ...TREE_NODE_ATTRIBUTES,
      aggregate_function: { type: 'string', default: s('SUM'), allowed: AGGREGATE_FUNCTIONS },
      base_values: { type: 'floats' },
      base_values_as_tensor: { type: 'tensor', since: 3 },
      n_targets: { type: 'int' },
      target_ids: { type: 'ints', required: true },
      target_nodeids: { type: 'ints', required: true },
      target_treeids: { type: 'ints', required: true },
      target_weights: { type: 'floats' },
      target_weights_as_tensor: { type: 'tensor', since: 3 },
    },
    exactlyOne: [
      ['nodes_values', 'nodes_values_as_tensor'],
      ['target_weights', 'target_weights_as_tensor'],
    ],
    canonical:
      'nodes_treeids, nodes_nodeids, nodes_featureids, nodes_truenodeids, nodes_falsenodeids (ints), nodes_modes ' +
      '(strings BRANCH_LEQ|BRANCH_LT|BRANCH_GTE|BRANCH_GT|BRANCH_EQ|BRANCH_NEQ|LEAF), nodes_values (floats), ' +
      'nodes_missing_value_tracks_true (ints, one per node, zeros by default), target_ids, target_nodeids, ' +
      'target_treeids (ints), target_weights (floats), base_values (floats, may be empty), n_targets (int; ' +
      'max(target_ids) + 1 when absent), aggregate_function (SUM|AVERAGE|MIN|MAX), post_transform; the ' +
      '*_as_tensor variants become the plain floats attributes (values exact, as numbers); nodes_hitrates dropped',
    normalize(ctx) {
      for (const n of ['nodes_values', 'target_weights', 'base_values']) asTensorToFloats(ctx, n);
      if (ctx.node.attributes.base_values === undefined) ctx.node.attributes.base_values = floats([]);
      const count = requireSameLength(ctx, TREE_NODE_LISTS);
      fillZeros(ctx, 'nodes_missing_value_tracks_true', count);
      requireSameLength(ctx, ['target_ids', 'target_nodeids', 'target_treeids', 'target_weights']);
      fillTargets(ctx, 'target_ids');
    },
  },
  {
    domain: ML,
    opType: 'TreeEnsembleClassifier',
    history: [1, 3, 5],
    supported: [1, 3],
    unsupportedVersion: TREE_DEPRECATED,
    inputs: ONE,
    outputs: [1, 2],
    attributes: {
      ...TREE_NODE_ATTRIBUTES,
      base_values: { type: 'floats' },
      base_values_as_tensor: { type: 'tensor', since: 3 },
      class_ids: { type: 'ints', required: true },
      class_nodeids: { type: 'ints', required: true },
      class_treeids: { type: 'ints', required: true },
      class_weights: { type: 'floats' },
      class_weights_as_tensor: { type: 'tensor', since: 3 },
      classlabels_int64s: { type: 'ints' },
      classlabels_strings: { type: 'strings' },
    },
    exactlyOne: [
      ['nodes_values', 'nodes_values_as_tensor'],
      ['class_weights', 'class_weights_as_tensor'],
      ['classlabels_int64s', 'classlabels_strings'],
    ],
    canonical:
      'as TreeEnsembleRegressor for nodes_*; class_ids, class_nodeids, class_treeids (ints), class_weights ' +
      '(floats), exactly one of classlabels_int64s / classlabels_strings, base_values (floats, may be empty), ' +
      'post_transform; outputs Y (labels) and Z (scores [N, E])',
    normalize(ctx) {
      for (const n of ['nodes_values', 'class_weights', 'base_values']) asTensorToFloats(ctx, n);
      if (ctx.node.attributes.base_values === undefined) ctx.node.attributes.base_values = floats([]);
      const count = requireSameLength(ctx, TREE_NODE_LISTS);
      fillZeros(ctx, 'nodes_missing_value_tracks_true', count);
      requireSameLength(ctx, ['class_ids', 'class_nodeids', 'class_treeids', 'class_weights']);
    },
  },
  {
    domain: ML,
    opType: 'TreeEnsemble',
    history: [5],
    supported: [5],
    inputs: ONE,
    outputs: [1, 1],
    attributes: {
      nodes_featureids: { type: 'ints', required: true },
      nodes_splits: { type: 'tensor', required: true },
      nodes_hitrates: { type: 'tensor', drop: true, doc: 'performance hint, ignored' },
      nodes_modes: { type: 'tensor', required: true, doc: 'uint8 codes 0..6, see TREE_ENSEMBLE_MODES' },
      nodes_truenodeids: { type: 'ints', required: true },
      nodes_falsenodeids: { type: 'ints', required: true },
      nodes_trueleafs: { type: 'ints', required: true, allowed: [0, 1] },
      nodes_falseleafs: { type: 'ints', required: true, allowed: [0, 1] },
      nodes_missing_value_tracks_true: { type: 'ints', allowed: [0, 1] },
      tree_roots: { type: 'ints', required: true },
      membership_values: { type: 'tensor' },
      leaf_targetids: { type: 'ints', required: true },
      leaf_weights: { type: 'tensor', required: true },
      n_targets: { type: 'int' },
      post_transform: { type: 'int', default: i(0), allowed: [0, 1, 2, 3, 4] },
      aggregate_function: { type: 'int', default: i(1), allowed: [0, 1, 2, 3] },
    },
    canonical:
      'nodes_modes as strings (BRANCH_LEQ|BRANCH_LT|BRANCH_GTE|BRANCH_GT|BRANCH_EQ|BRANCH_NEQ|BRANCH_MEMBER), ' +
      'post_transform and aggregate_function as the same strings as the older tree operators; nodes_splits, ' +
      'leaf_weights, membership_values (empty when absent) as floats; nodes_missing_value_tracks_true filled with ' +
      'zeros; n_targets max(leaf_targetids) + 1 when absent; nodes_hitrates dropped',
    normalize(ctx) {
      const attrs = ctx.node.attributes;
      const modes = attrs.nodes_modes;
      if (modes?.type === 'tensor') {
        const names = Array.from(modes.value.data as ArrayLike<number | bigint | string>, (code) => {
          const name = typeof code === 'number' ? TREE_ENSEMBLE_MODES[code] : undefined;
          return name ?? ctx.unsupportedAttribute('nodes_modes', String(code));
        });
        attrs.nodes_modes = { type: 'strings', value: names };
      }
      const post = attrs.post_transform;
      if (post?.type === 'int') attrs.post_transform = s(POST_TRANSFORMS[post.value] ?? 'NONE');
      const agg = attrs.aggregate_function;
      if (agg?.type === 'int') attrs.aggregate_function = s(TREE_ENSEMBLE_AGGREGATES[agg.value] ?? 'SUM');
      for (const n of ['nodes_splits', 'leaf_weights', 'membership_values']) tensorToFloatsAttr(ctx, n);
      if (attrs.membership_values === undefined) attrs.membership_values = floats([]);
      const count = requireSameLength(ctx, [
        'nodes_featureids',
        'nodes_splits',
        'nodes_modes',
        'nodes_truenodeids',
        'nodes_falsenodeids',
        'nodes_trueleafs',
        'nodes_falseleafs',
      ]);
      fillZeros(ctx, 'nodes_missing_value_tracks_true', count);
      requireSameLength(ctx, ['leaf_targetids', 'leaf_weights']);
      fillTargets(ctx, 'leaf_targetids');
    },
  },
  {
    domain: ML,
    opType: 'Scaler',
    history: [1],
    supported: [1],
    inputs: ONE,
    outputs: [1, 1],
    attributes: {
      offset: { type: 'floats', required: true },
      scale: { type: 'floats', required: true },
    },
    canonical: 'Y = (X - offset) * scale, each of length 1 or F; output float',
  },
  {
    domain: ML,
    opType: 'Normalizer',
    history: [1],
    supported: [1],
    inputs: ONE,
    outputs: [1, 1],
    attributes: { norm: { type: 'string', default: s('MAX'), allowed: ['MAX', 'L1', 'L2'] } },
    canonical: 'row-wise MAX, L1 or L2 normalisation (rows whose divisor is 0 unchanged); attribute norm always present',
  },
  {
    domain: ML,
    opType: 'Binarizer',
    history: [1],
    supported: [1],
    inputs: ONE,
    outputs: [1, 1],
    attributes: { threshold: { type: 'float', default: f(0) } },
    canonical: 'Y = X > threshold ? 1 : 0; attribute threshold always present',
  },
  {
    domain: ML,
    opType: 'LabelEncoder',
    history: [1, 2, 4],
    supported: [2, 4],
    unsupportedVersion: () => 'version 1 (ai.onnx.ml opset 1) is not supported; convert with ai.onnx.ml opset 2 or later',
    inputs: ONE,
    outputs: [1, 1],
    attributes: {
      keys_floats: { type: 'floats' },
      keys_int64s: { type: 'ints' },
      keys_strings: { type: 'strings' },
      keys_tensor: { type: 'tensor', since: 4 },
      values_floats: { type: 'floats' },
      values_int64s: { type: 'ints' },
      values_strings: { type: 'strings' },
      values_tensor: { type: 'tensor', since: 4 },
      default_float: { type: 'float' },
      default_int64: { type: 'int' },
      default_string: { type: 'string' },
      default_tensor: { type: 'tensor', since: 4 },
    },
    exactlyOne: [
      ['keys_floats', 'keys_int64s', 'keys_strings', 'keys_tensor'],
      ['values_floats', 'values_int64s', 'values_strings', 'values_tensor'],
    ],
    canonical:
      'exactly three tensor attributes: keys_tensor and values_tensor (1-D, same length; element types string, ' +
      'int64, float, int32, int16 or double) and default_tensor (one element of the values\' type: the default_* ' +
      'attribute that matches, or "_Unused" / -1 / -0.0)',
    normalize(ctx) {
      const attrs = ctx.node.attributes;
      const pick = (prefix: string) => {
        const name = ['floats', 'int64s', 'strings', 'tensor'].map((k) => `${prefix}_${k}`).find((n) => attrs[n]);
        return name === undefined ? undefined : ([name, attrs[name]!] as const);
      };
      const keys = pick('keys');
      const values = pick('values');
      if (!keys || !values) return ctx.invalid('needs one keys_* and one values_* attribute');
      const keysTensor = labelTensor(ctx, keys[0], keys[1], LABEL_ENCODER_TYPES);
      const valuesTensor = labelTensor(ctx, values[0], values[1], LABEL_ENCODER_TYPES);
      if (keysTensor.data.length !== valuesTensor.data.length) {
        ctx.invalid(
          `has ${keysTensor.data.length} keys but ${valuesTensor.data.length} values in "${keys[0]}" and "${values[0]}"`,
        );
      }
      const defaultTensor = labelEncoderDefault(ctx, valuesTensor);
      ctx.node.attributes = {
        keys_tensor: { type: 'tensor', value: { ...keysTensor, name: 'keys_tensor' } },
        values_tensor: { type: 'tensor', value: { ...valuesTensor, name: 'values_tensor' } },
        default_tensor: { type: 'tensor', value: defaultTensor },
      };
    },
  },
  {
    domain: ML,
    opType: 'OneHotEncoder',
    history: [1],
    supported: [1],
    inputs: ONE,
    outputs: [1, 1],
    attributes: {
      cats_int64s: { type: 'ints' },
      cats_strings: { type: 'strings' },
      zeros: { type: 'int', default: i(1), allowed: [0, 1] },
    },
    exactlyOne: [['cats_int64s', 'cats_strings']],
    canonical: 'exactly one of cats_int64s / cats_strings; zeros always present; output float with one more dimension',
  },
  {
    domain: ML,
    opType: 'Imputer',
    history: [1],
    supported: [1],
    inputs: ONE,
    outputs: [1, 1],
    attributes: {
      imputed_value_floats: { type: 'floats' },
      imputed_value_int64s: { type: 'ints' },
      replaced_value_float: { type: 'float', default: f(0) },
      replaced_value_int64: { type: 'int', default: i(0) },
    },
    exactlyOne: [['imputed_value_floats', 'imputed_value_int64s']],
    canonical:
      'exactly one of imputed_value_floats / imputed_value_int64s (length 1 or F); replaced_value_float (NaN ' +
      'matches NaN) and replaced_value_int64 always present',
  },
  {
    domain: ML,
    opType: 'ArrayFeatureExtractor',
    history: [1],
    supported: [1],
    inputs: TWO,
    outputs: [1, 1],
    attributes: {},
    canonical: 'inputs X and int64 indices Y selecting along the last axis of X; no attributes',
  },
  {
    domain: ML,
    opType: 'ZipMap',
    history: [1],
    supported: [1],
    inputs: ONE,
    outputs: [1, 1],
    attributes: {
      classlabels_int64s: { type: 'ints' },
      classlabels_strings: { type: 'strings' },
    },
    exactlyOne: [['classlabels_int64s', 'classlabels_strings']],
    canonical: 'float input [N, C] to seq(map(label, float)); exactly one of classlabels_int64s / classlabels_strings',
  },
];

const BY_NAME = new Map(OPERATORS.map((op) => [qualifiedOpType(op.domain, op.opType), op]));

/** The table entry of an operator, by normalised domain and op type. */
export function findOperator(domain: string, opType: string): OperatorSpec | undefined {
  return BY_NAME.get(qualifiedOpType(domain, opType));
}

// ---- messages ----

function domainLabel(domain: string): string {
  return domain === '' ? 'ai.onnx' : domain;
}

function formatScalar(v: string | number | bigint): string {
  return typeof v === 'string' ? JSON.stringify(v) : String(v);
}

function formatAttribute(a: OnnxAttribute): string {
  switch (a.type) {
    case 'float':
    case 'string':
      return formatScalar(a.value);
    case 'int':
      return a.exact ?? String(a.value);
    case 'floats':
    case 'strings':
    case 'ints': {
      const items = (a.type === 'ints' && a.exact ? a.exact : a.value.map(formatScalar)).slice(0, 8);
      return `[${items.join(', ')}${a.value.length > 8 ? ', ...' : ''}]`;
    }
    case 'tensor':
      return `tensor(${a.value.dataType})[${a.value.dims.join(', ')}]`;
    default:
      return a.type;
  }
}

const ARTICLE: Readonly<Record<OnnxAttributeType, string>> = {
  float: 'a float',
  int: 'an int',
  string: 'a string',
  tensor: 'a tensor',
  graph: 'a graph',
  floats: 'a list of floats',
  ints: 'a list of ints',
  strings: 'a list of strings',
  tensors: 'a list of tensors',
  graphs: 'a list of graphs',
  sparse_tensor: 'a sparse tensor',
  sparse_tensors: 'a list of sparse tensors',
  type_proto: 'a type',
  type_protos: 'a list of types',
};

function ruleFor(spec: OperatorSpec, name: string, version: number): AttributeRule | undefined {
  const rule = spec.attributes[name];
  if (rule === undefined) return undefined;
  if (rule.since !== undefined && version < rule.since) return undefined;
  if (rule.until !== undefined && version > rule.until) return undefined;
  return rule;
}

// ---- normalisation ----

/** The since-version that applies at `opset`: the highest one not above it. */
export function resolveVersion(spec: OperatorSpec, opset: number): number | undefined {
  let found: number | undefined;
  for (const v of spec.history) if (v <= opset) found = v;
  return found;
}

interface ModelState {
  model: OnnxModel;
  constants: Map<string, OnnxTensor>;
  initializers: OnnxTensor[];
  taken: Set<string>;
}

function freshName(state: ModelState, base: string): string {
  let name = base;
  for (let k = 1; state.taken.has(name); k++) name = `${base}_${k}`;
  state.taken.add(name);
  return name;
}

function trimTrailing(names: string[]): string[] {
  let end = names.length;
  while (end > 0 && names[end - 1] === '') end--;
  return names.slice(0, end);
}

/** Normalises one node, or returns null when it was folded away. */
function normalizeNode(node: OnnxModel['graph']['nodes'][number], state: ModelState): NormalizedNode | null {
  const q = qualifiedOpType(node.domain, node.opType);
  const opset = state.model.opsetImports[node.domain] ?? 0;
  const opLabel = `operator "${q}" (node "${node.name}", opset ${domainLabel(node.domain)} ${opset})`;
  const details = { operator: q, node: node.name, domain: node.domain, opset };
  const unsupported = (reason?: string): never => {
    throw new UnsupportedOperatorError(`${opLabel} is not supported${reason ? `: ${reason}` : ''}`, details);
  };
  const unsupportedAttribute = (name: string, value?: string): never => {
    throw new UnsupportedOperatorError(
      `attribute "${name}"${value === undefined ? '' : `=${value}`} of ${opLabel} is not supported`,
      { ...details, attribute: name },
    );
  };
  const invalid = (what: string): never => {
    throw new OnnxModelError(`node "${node.name}" (operator "${q}") ${what}`);
  };

  const spec = findOperator(node.domain, node.opType);
  if (spec === undefined) {
    return unsupported(state.model.functions.includes(q) ? 'it is a model-local function' : undefined);
  }
  const range = SUPPORTED_OPSETS[node.domain];
  if (range && opset > range.max) {
    unsupported(`the newest supported ${domainLabel(node.domain)} opset is ${range.max}`);
  }
  const version = resolveVersion(spec, opset);
  if (version === undefined) {
    return unsupported(`it does not exist before ${domainLabel(node.domain)} opset ${spec.history[0]}`);
  }
  if (!spec.supported.includes(version)) return unsupported(spec.unsupportedVersion?.(version) || undefined);

  const inputs = trimTrailing(node.inputs);
  const outputs = trimTrailing(node.outputs);
  const [minIn, maxIn] = spec.inputs(version);
  if (inputs.length < minIn || inputs.length > maxIn) {
    const takes = minIn === maxIn ? `${minIn}` : maxIn === Infinity ? `at least ${minIn}` : `${minIn} to ${maxIn}`;
    invalid(`has ${inputs.length} input${inputs.length === 1 ? '' : 's'}, but version ${version} takes ${takes}`);
  }
  for (let k = 0; k < minIn; k++) if (inputs[k] === '') invalid(`leaves its required input ${k} empty`);
  const [minOut, maxOut] = spec.outputs;
  if (outputs.length < minOut || outputs.length > maxOut) {
    invalid(`has ${outputs.length} outputs, but version ${version} has ${minOut === maxOut ? minOut : `${minOut} to ${maxOut}`}`);
  }
  if (outputs[0] === '') invalid('leaves its first output empty');

  // Attributes: known, of the right type, with supported values.
  const attributes: Record<string, OnnxAttribute> = {};
  for (const [name, a] of Object.entries(node.attributes)) {
    const rule = ruleFor(spec, name, version);
    if (rule === undefined) return unsupportedAttribute(name);
    if (rule.refused) unsupportedAttribute(name, formatAttribute(a));
    const type = rule.legacy && version <= rule.legacy.until ? rule.legacy.type : rule.type;
    if (a.type !== type) invalid(`attribute "${name}" must be ${ARTICLE[type]}, not ${ARTICLE[a.type]}`);
    if ((a.type === 'int' || a.type === 'ints') && a.exact !== undefined) {
      const exact = typeof a.exact === 'string' ? [a.exact] : a.exact;
      const big = exact.find((e) => !Number.isSafeInteger(Number(e)));
      unsupportedAttribute(name, big ?? exact[0]);
    }
    if (rule.allowed) {
      const values: (string | number)[] =
        a.type === 'int' || a.type === 'float' || a.type === 'string'
          ? [a.value]
          : a.type === 'ints' || a.type === 'floats' || a.type === 'strings'
            ? a.value
            : [];
      const bad = values.find((v) => !rule.allowed!.includes(v));
      if (bad !== undefined) unsupportedAttribute(name, formatScalar(bad));
    }
    if (!rule.drop) attributes[name] = a;
  }
  for (const [name, rule] of Object.entries(spec.attributes)) {
    if (ruleFor(spec, name, version) !== rule) continue;
    if (node.attributes[name] === undefined) {
      if (rule.required) invalid(`lacks the required attribute "${name}"`);
      if (rule.default !== undefined) {
        attributes[name] = typeof rule.default === 'function' ? rule.default(version) : rule.default;
      }
    }
  }
  for (const group of spec.exactlyOne ?? []) {
    const applicable = group.filter((n) => ruleFor(spec, n, version) !== undefined);
    const set = applicable.filter((n) => node.attributes[n] !== undefined);
    if (set.length === 0) invalid(`sets none of the attributes ${applicable.map((n) => `"${n}"`).join(', ')}; it needs one`);
    if (set.length > 1) invalid(`sets both "${set[0]}" and "${set[1]}", of which it needs exactly one`);
  }

  const result: NormalizedNode = {
    name: node.name,
    opType: node.opType,
    domain: node.domain,
    version,
    inputs: [...inputs],
    outputs: [...outputs],
    attributes,
  };
  let folded = false;
  const ctx: NodeContext = {
    node: result,
    version,
    opset,
    constant: (name) => state.constants.get(name),
    addInitializer(base, tensor) {
      const name = freshName(state, base);
      const t = { ...tensor, name };
      state.constants.set(name, t);
      state.initializers.push(t);
      return name;
    },
    fold(tensor) {
      const name = outputs[0]!;
      const t = { ...tensor, name };
      state.constants.set(name, t);
      state.initializers.push(t);
      folded = true;
    },
    unsupported,
    unsupportedAttribute,
    invalid,
  };
  spec.normalize?.(ctx);
  if (folded) return null;
  result.inputs = trimTrailing(result.inputs);
  return result;
}

/**
 * The executor's form of a parsed model (see the guarantees at the top of this file). Throws
 * UnsupportedOperatorError for the first node the engine cannot run, or OnnxModelError for a node
 * that is malformed for its operator. Does not modify `model`; tensors are shared, not copied.
 */
export function normalize(model: OnnxModel): NormalizedModel {
  const g = model.graph;
  const state: ModelState = {
    model,
    constants: new Map(g.initializers.map((t) => [t.name, t])),
    initializers: [...g.initializers],
    taken: new Set([
      ...g.inputs.map((v) => v.name),
      ...g.initializers.map((t) => t.name),
      ...g.nodes.flatMap((n) => n.outputs),
    ]),
  };
  const nodes: NormalizedNode[] = [];
  for (const node of g.nodes) {
    const n = normalizeNode(node, state);
    if (n) nodes.push(n);
  }
  const used = new Set([...nodes.flatMap((n) => n.inputs), ...g.outputs.map((o) => o.name)]);
  return {
    ...model,
    graph: {
      ...g,
      initializers: state.initializers.filter((t) => used.has(t.name)),
      nodes,
    },
  };
}

/**
 * Checks that the engine can run every node of the model: throws UnsupportedOperatorError naming
 * the operator, the node and the opset (or the attribute) of the first one it cannot, and
 * OnnxModelError for a node that is malformed for its operator.
 */
export function validateSupported(model: OnnxModel): void {
  normalize(model);
}

/** The table as plain data (no functions), e.g. for documentation or an API response. */
export function operatorSupportTable(): {
  operator: string;
  domain: string;
  versions: number[];
  attributes: Record<string, Omit<AttributeRule, 'default'> & { default?: unknown }>;
  canonical: string;
}[] {
  return OPERATORS.map((op) => ({
    operator: qualifiedOpType(op.domain, op.opType),
    domain: op.domain === '' ? 'ai.onnx' : op.domain,
    versions: [...op.supported],
    attributes: Object.fromEntries(
      Object.entries(op.attributes).map(([name, rule]) => {
        const { default: def, ...rest } = rule;
        return [
          name,
          def === undefined ? rest : { ...rest, default: typeof def === 'function' ? 'depends on the version' : def.value },
        ];
      }),
    ),
    canonical: op.canonical,
  }));
}
