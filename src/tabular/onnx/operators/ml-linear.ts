// The linear ML operators (native/tabular/ops_ml_linear.cc): LinearRegressor, LinearClassifier,
// Scaler, Normalizer, Binarizer and Imputer.

import { f, floats, i, ML, operatorSpec, POST_TRANSFORMS, s, type OperatorSpec } from './spec.js';

export const ML_LINEAR_OPERATORS: readonly OperatorSpec[] = [
  operatorSpec(ML, 'LinearRegressor', [1], {
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
  }),
  operatorSpec(ML, 'LinearClassifier', [1], {
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
  }),
  operatorSpec(ML, 'Scaler', [1], {
    attributes: {
      offset: { type: 'floats', required: true },
      scale: { type: 'floats', required: true },
    },
    canonical: 'Y = (X - offset) * scale, each of length 1 or F; output float',
  }),
  operatorSpec(ML, 'Normalizer', [1], {
    attributes: { norm: { type: 'string', default: s('MAX'), allowed: ['MAX', 'L1', 'L2'] } },
    canonical: 'row-wise MAX, L1 or L2 normalisation (rows whose divisor is 0 unchanged); attribute norm always present',
  }),
  operatorSpec(ML, 'Binarizer', [1], {
    attributes: { threshold: { type: 'float', default: f(0) } },
    canonical: 'Y = X > threshold ? 1 : 0; attribute threshold always present',
  }),
  operatorSpec(ML, 'Imputer', [1], {
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
  }),
];
