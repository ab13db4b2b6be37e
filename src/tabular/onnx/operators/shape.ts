// The shape operators (native/tabular/ops_shape.cc): Flatten, Reshape, Squeeze and Unsqueeze
// (views of their input), Concat and Transpose.

import { CONSUMED_INPUTS, fixed, i, int64Tensor, ints, operatorSpec, type NodeContext, type OperatorSpec } from './spec.js';

/** A constant int64 input's values as numbers; refused when it is not constant or not exact. */
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

/** Squeeze's and Unsqueeze's version 13 axes input becomes the axes attribute of versions 1 and 11. */
function axesInputToAttribute(ctx: NodeContext): void {
  const axesInput = ctx.node.inputs[1];
  if (axesInput) {
    ctx.node.attributes.axes = ints(constantInts(ctx, axesInput, 'axes'));
    ctx.node.inputs = [ctx.node.inputs[0] ?? ''];
  }
}

/** Squeeze and Unsqueeze changed in the same opsets. */
const SQUEEZE_HISTORY = [1, 11, 13, 21, 23, 24, 25];

export const SHAPE_OPERATORS: readonly OperatorSpec[] = [
  operatorSpec('', 'Flatten', [1, 9, 11, 13, 21, 23, 24, 25], {
    attributes: { axis: { type: 'int', default: i(1) } },
    canonical: 'output [prod(d[0..axis)), prod(d[axis..))]; attribute axis always present (negative from version 11)',
  }),
  operatorSpec('', 'Reshape', [1, 5, 13, 14, 19, 21, 23, 24, 25], {
    inputs: (v) => (v >= 5 ? [2, 2] : [1, 1]),
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
  }),
  operatorSpec('', 'Squeeze', SQUEEZE_HISTORY, {
    inputs: (v) => (v >= 13 ? [1, 2] : [1, 1]),
    attributes: { axes: { type: 'ints', until: 11 } },
    canonical:
      'one input; attribute axes (ints) when given, from the attribute (versions 1 and 11) or from a constant ' +
      'axes input (version 13 on, which must be an initializer or a Constant); no axes: every dimension of size 1',
    normalize: axesInputToAttribute,
  }),
  operatorSpec('', 'Unsqueeze', SQUEEZE_HISTORY, {
    inputs: (v) => (v >= 13 ? [2, 2] : [1, 1]),
    attributes: { axes: { type: 'ints', until: 11, required: true } },
    canonical:
      'one input; attribute axes (ints, always present), from the attribute (versions 1 and 11) or from the ' +
      'constant axes input (version 13 on, which must be an initializer or a Constant)',
    normalize: axesInputToAttribute,
  }),
  operatorSpec('', 'Concat', [1, 4, 11, 13], {
    inputs: fixed(1, Infinity),
    attributes: {
      axis: { type: 'int', doc: 'optional (default 1) in version 1, required from version 4, negative from version 11' },
    },
    canonical: 'one or more inputs concatenated along axis; attribute axis always present',
    normalize(ctx) {
      if (ctx.node.attributes.axis !== undefined) return;
      if (ctx.version >= 4) ctx.invalid('lacks the required attribute "axis"');
      ctx.node.attributes.axis = i(1);
    },
  }),
  operatorSpec('', 'Transpose', [1, 13, 21, 23, 24, 25], {
    attributes: { perm: { type: 'ints' } },
    canonical: 'one input; attribute perm (ints) when given, otherwise the dimensions are reversed',
  }),
];
