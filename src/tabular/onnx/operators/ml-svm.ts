// The support vector machines (native/tabular/ops_ml_svm.cc): SVMClassifier and SVMRegressor,
// as scikit-learn's SVC, NuSVC, SVR, NuSVR and OneClassSVM convert. normalize checks that the
// attributes agree with each other (support vectors, coefficients, rho, Platt parameters, class
// counts), so that a malformed model is refused at upload with the count that is wrong; the
// executor checks them again, and the input width, when it compiles.

import { floats, i, ML, operatorSpec, POST_TRANSFORMS, s, type AttributeRule, type NodeContext, type OperatorSpec } from './spec.js';

const KERNEL_TYPES = ['LINEAR', 'POLY', 'RBF', 'SIGMOID'] as const;

/** The attributes both operators share. */
const SVM_ATTRIBUTES: Readonly<Record<string, AttributeRule>> = {
  coefficients: { type: 'floats', required: true },
  kernel_params: { type: 'floats', default: floats([0, 0, 0]), doc: '[gamma, coef0, degree]' },
  kernel_type: { type: 'string', default: s('LINEAR'), allowed: KERNEL_TYPES },
  rho: { type: 'floats', required: true },
  support_vectors: { type: 'floats', default: floats([]) },
};

function numbers(ctx: NodeContext, name: string): number[] {
  const a = ctx.node.attributes[name];
  return a?.type === 'floats' || a?.type === 'ints' ? a.value : [];
}

/** kernel_params: [gamma, coef0, degree]; an empty list means zeros, as in onnxruntime. */
function checkKernelParams(ctx: NodeContext): void {
  const n = numbers(ctx, 'kernel_params').length;
  if (n === 0) ctx.node.attributes.kernel_params = floats([0, 0, 0]);
  else if (n !== 3) ctx.invalid(`has ${n} kernel_params; they must be [gamma, coef0, degree]`);
}

/** The number of features the support vectors have (their values split into `vectors` rows). */
function checkSupportVectors(ctx: NodeContext, vectors: number, counter: string): void {
  const values = numbers(ctx, 'support_vectors').length;
  if (vectors === 0) {
    if (values > 0) ctx.invalid(`has ${values} support vector values but ${counter} counts no support vectors`);
  } else if (values === 0 || values % vectors !== 0) {
    ctx.invalid(`has ${values} support vector values, not a positive multiple of the ${vectors} vectors that ${counter} counts`);
  }
}

function normalizeClassifier(ctx: NodeContext): void {
  checkKernelParams(ctx);
  const attrs = ctx.node.attributes;
  const strings = attrs.classlabels_strings;
  const classes = strings?.type === 'strings' ? strings.value.length : numbers(ctx, 'classlabels_ints').length;
  if (classes === 0) ctx.invalid('has no class labels');
  const perClass = numbers(ctx, 'vectors_per_class');
  const negative = perClass.find((k) => k < 0);
  if (negative !== undefined) ctx.invalid(`has a negative count ${negative} in vectors_per_class`);
  const vectors = perClass.reduce((sum, k) => sum + k, 0);
  const coefficients = numbers(ctx, 'coefficients').length;
  const rho = numbers(ctx, 'rho').length;
  const probA = numbers(ctx, 'prob_a').length;
  const probB = numbers(ctx, 'prob_b').length;
  if (probA !== probB) ctx.invalid(`has ${probA} prob_a but ${probB} prob_b values`);
  if (vectors > 0 && perClass.length !== classes) ctx.invalid(`has ${perClass.length} vectors_per_class entries for ${classes} classes`);
  checkSupportVectors(ctx, vectors, 'vectors_per_class');
  if (vectors === 0) {
    // liblinear mode: coefficients are one row of weights per class, rho the one bias.
    if (probA > 0) ctx.invalid('has prob_a and prob_b but no support vectors (they calibrate pairwise decisions)');
    if (coefficients === 0 || coefficients % classes !== 0) {
      ctx.invalid(`has ${coefficients} coefficients without support vectors, not a positive multiple of the ${classes} classes`);
    }
    if (rho !== 1) ctx.invalid(`has ${rho} rho values without support vectors; it needs 1`);
    return;
  }
  if (classes < 2) ctx.invalid('has support vectors but only one class');
  if (classes > 4096) ctx.unsupported(`${classes} classes; at most 4096 are supported`);
  const pairs = (classes * (classes - 1)) / 2;
  if (coefficients !== (classes - 1) * vectors) {
    ctx.invalid(
      `has ${coefficients} coefficients; ${classes} classes and ${vectors} support vectors need ` +
        `(classes - 1) * vectors = ${(classes - 1) * vectors}`,
    );
  }
  if (rho !== pairs) ctx.invalid(`has ${rho} rho values; ${classes} classes need one per pair of classes, ${pairs}`);
  if (probA > 0 && probA !== pairs) {
    ctx.invalid(`has ${probA} prob_a and prob_b values; ${classes} classes need one per pair of classes, ${pairs}`);
  }
}

function normalizeRegressor(ctx: NodeContext): void {
  checkKernelParams(ctx);
  const attrs = ctx.node.attributes;
  const vectors = attrs.n_supports?.type === 'int' ? attrs.n_supports.value : 0;
  if (vectors < 0) ctx.invalid(`has n_supports = ${vectors}; it must not be negative`);
  checkSupportVectors(ctx, vectors, 'n_supports');
  const coefficients = numbers(ctx, 'coefficients').length;
  if (coefficients === 0) ctx.invalid('has no coefficients');
  if (vectors > 0 && coefficients !== vectors) {
    ctx.invalid(`has ${coefficients} coefficients for n_supports = ${vectors} support vectors`);
  }
  const rho = numbers(ctx, 'rho').length;
  if (rho !== 1) ctx.invalid(`has ${rho} rho values; it needs 1`);
}

export const ML_SVM_OPERATORS: readonly OperatorSpec[] = [
  operatorSpec(ML, 'SVMClassifier', [1], {
    outputs: [1, 2],
    attributes: {
      ...SVM_ATTRIBUTES,
      classlabels_ints: { type: 'ints' },
      classlabels_strings: { type: 'strings' },
      post_transform: { type: 'string', default: s('NONE'), allowed: POST_TRANSFORMS },
      prob_a: { type: 'floats', default: floats([]) },
      prob_b: { type: 'floats', default: floats([]) },
      vectors_per_class: { type: 'ints', default: { type: 'ints', value: [] } },
    },
    exactlyOne: [['classlabels_ints', 'classlabels_strings']],
    canonical:
      'exactly one of classlabels_ints / classlabels_strings (C labels); kernel_type, kernel_params ' +
      '([gamma, coef0, degree]), support_vectors, vectors_per_class, prob_a, prob_b, post_transform always ' +
      'present. With support vectors (V = sum(vectors_per_class) > 0, one count per class): support_vectors ' +
      '[V, F], coefficients [C - 1, V] (libsvm one-vs-one layout), rho and prob_a/prob_b (or none) one per pair ' +
      'of classes; outputs Y (labels, by votes) and Z: [N, C] coupled probabilities with prob_a/prob_b, else ' +
      '[N, 2] for two classes, else [N, C(C-1)/2] decision values. Without support vectors: coefficients ' +
      '[C, F] weights, one rho, Z [N, C]',
    normalize: normalizeClassifier,
  }),
  operatorSpec(ML, 'SVMRegressor', [1], {
    attributes: {
      ...SVM_ATTRIBUTES,
      n_supports: { type: 'int', default: i(0) },
      one_class: { type: 'int', default: i(0), allowed: [0, 1] },
      // onnxruntime ignores post_transform for this operator: only the value that changes nothing runs.
      post_transform: { type: 'string', default: s('NONE'), allowed: ['NONE'] },
    },
    canonical:
      'kernel_type, kernel_params ([gamma, coef0, degree]), support_vectors, n_supports, one_class, ' +
      'post_transform (NONE) always present; one rho. With n_supports = V > 0: support_vectors [V, F], ' +
      'coefficients [V], Y[n, 0] = sum_v coefficients[v] kernel(x_n, sv_v) + rho; with n_supports 0: ' +
      'coefficients are F weights; one_class maps Y to +1 (> 0) or -1',
    normalize: normalizeRegressor,
  }),
];
