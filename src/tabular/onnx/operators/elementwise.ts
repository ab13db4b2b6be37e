// The elementwise operators (native/tabular/ops_elementwise.cc): arithmetic with numpy
// broadcasting, activations, Clip, Identity and Cast.

import { DATA_TYPE_CODES, dataTypeName, elementTypeFromCode } from '../tensor.js';
import type { ElementType } from '../types.js';
import { CONSUMED_INPUTS, f, operatorSpec, s, TWO, type OperatorSpec } from './spec.js';

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

function unary(opType: string, history: number[], canonical = 'one input, no attributes'): OperatorSpec {
  return operatorSpec('', opType, history, { attributes: { consumed_inputs: CONSUMED_INPUTS }, canonical });
}

function binary(opType: string): OperatorSpec {
  return operatorSpec('', opType, [1, 6, 7, 13, 14], {
    inputs: TWO,
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
  });
}

export const ELEMENTWISE_OPERATORS: readonly OperatorSpec[] = [
  binary('Add'),
  binary('Sub'),
  binary('Mul'),
  binary('Div'),
  unary('Relu', [1, 6, 13, 14]),
  operatorSpec('', 'LeakyRelu', [1, 6, 16], {
    attributes: { alpha: { type: 'float', default: f(0.01) }, consumed_inputs: CONSUMED_INPUTS },
    canonical: 'y = x < 0 ? alpha * x : x; attribute alpha always present',
  }),
  unary('Sigmoid', [1, 6, 13]),
  unary('Tanh', [1, 6, 13]),
  unary('Exp', [1, 6, 13]),
  unary('Log', [1, 6, 13]),
  operatorSpec('', 'Clip', [1, 6, 11, 12, 13], {
    inputs: (v) => (v >= 11 ? [1, 3] : [1, 1]),
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
  }),
  operatorSpec('', 'Identity', [1, 13, 14, 16, 19, 21, 23, 24, 25], {
    canonical: 'one tensor input copied to the output; no attributes',
  }),
  operatorSpec('', 'Cast', [1, 6, 9, 13, 19, 21, 23, 24, 25], {
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
  }),
];
