// The encoding ML operators (native/tabular/ops_ml_encode.cc): ArrayFeatureExtractor,
// OneHotEncoder, LabelEncoder and ZipMap.

import type { ElementType, OnnxAttribute, OnnxTensor } from '../types.js';
import { i, int64Tensor, ML, operatorSpec, TWO, type NodeContext, type OperatorSpec } from './spec.js';

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

/** LabelEncoder's default as one element of the values' type: default_tensor, the matching default_*, or ONNX's. */
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

export const ML_ENCODE_OPERATORS: readonly OperatorSpec[] = [
  operatorSpec(ML, 'ArrayFeatureExtractor', [1], {
    inputs: TWO,
    canonical: 'inputs X and int64 indices Y selecting along the last axis of X; no attributes',
  }),
  operatorSpec(ML, 'OneHotEncoder', [1], {
    attributes: {
      cats_int64s: { type: 'ints' },
      cats_strings: { type: 'strings' },
      zeros: { type: 'int', default: i(1), allowed: [0, 1] },
    },
    exactlyOne: [['cats_int64s', 'cats_strings']],
    canonical: 'exactly one of cats_int64s / cats_strings; zeros always present; output float with one more dimension',
  }),
  operatorSpec(ML, 'LabelEncoder', [1, 2, 4], {
    supported: [2, 4],
    unsupportedVersion: () => 'version 1 (ai.onnx.ml opset 1) is not supported; convert with ai.onnx.ml opset 2 or later',
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
  }),
  operatorSpec(ML, 'ZipMap', [1], {
    attributes: {
      classlabels_int64s: { type: 'ints' },
      classlabels_strings: { type: 'strings' },
    },
    exactlyOne: [['classlabels_int64s', 'classlabels_strings']],
    canonical: 'float input [N, C] to seq(map(label, float)); exactly one of classlabels_int64s / classlabels_strings',
  }),
];
