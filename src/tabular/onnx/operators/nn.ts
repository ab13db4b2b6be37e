// The neural-network operators (native/tabular/ops_nn.cc): Softmax and inference-time
// BatchNormalization.

import { f, fixed, i, operatorSpec, type OperatorSpec } from './spec.js';

export const NN_OPERATORS: readonly OperatorSpec[] = [
  operatorSpec('', 'Softmax', [1, 11, 13], {
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
  }),
  operatorSpec('', 'BatchNormalization', [1, 6, 7, 9, 14, 15], {
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
  }),
];
