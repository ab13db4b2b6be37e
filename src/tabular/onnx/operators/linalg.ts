// The matrix products (native/tabular/ops_linalg.cc): Gemm and MatMul.

import { f, i, operatorSpec, TWO, type OperatorSpec } from './spec.js';

export const LINALG_OPERATORS: readonly OperatorSpec[] = [
  operatorSpec('', 'Gemm', [1, 6, 7, 9, 11, 13], {
    inputs: (v) => (v >= 11 ? [2, 3] : [3, 3]),
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
  }),
  operatorSpec('', 'MatMul', [1, 9, 13], {
    inputs: TWO,
    canonical: 'numpy matmul of inputs A and B (batched, 1-D operands promoted); no attributes',
  }),
];
