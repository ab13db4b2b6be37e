// The ai.onnx.ml support vector machines (SVMClassifier, SVMRegressor) of the native tabular
// executor against onnxruntime-node, on random models written with the ONNX builder: every kernel
// (LINEAR, POLY, RBF, SIGMOID), two to four classes, with and without Platt scaling (prob_a/prob_b,
// pairwise coupling), int64 and string labels, every post_transform; the liblinear form (no support
// vectors); SVR and OneClassSVM; the malformed models normalize and the executor refuse; and one
// SVC build uploaded, deployed and asked through the real host.
//
// Tolerances: labels exactly. Scores 1e-5 + 1e-4 * |expected|: a decision value is a float sum of
// at most 8 products coefficient * kernel per pair of classes (|coefficient| <= 1), each kernel off by
// a few float ulps between engines (GEMM summation order: ours and MLAS's differ; std::tanh vs MLAS's
// approximation), so its absolute error is about 8 * 3 * 2^-24 * max|term|: ~1e-6 for kernels of
// size 1 and a few 1e-6 for the cubic POLY kernel (bases up to ~3 on these inputs, terms up to ~20).
// Verified at every SIMD level (PLATFORM_SIMD=scalar, avx2, avx512). PROBIT results 1e-3 absolute (probitTol): the
// erf-inverse approximation both engines use (onnxruntime's) computes -v + sqrt(v^2 - v2) with
// v ~ 4.3, which cancels near p = 0.5 and leaves rounding noise of up to sqrt(ulp(4.3)) ~ 7e-4 that
// a 1-ulp difference in the score reshuffles.
import ort from 'onnxruntime-node';
import { describe, expect, it } from 'vitest';

import { compileTabularModel, type TabularInput, type TabularOutput } from '../src/tabular/executor/index.js';
import { OnnxModelError, UnsupportedOperatorError } from '../src/tabular/onnx/errors.js';
import type { ElementType, NormalizedModel, OnnxAttribute } from '../src/tabular/onnx/types.js';
import { waitForDeployment } from './helpers/api.js';
import { hostForTests } from './helpers/in-process-host.js';
import { attr, ModelBuilder, type AttrValue } from './helpers/onnx-builder.js';
import { rng } from './helpers/random.js';
import { normalized, randomDoubles, randomFloats, randomInts } from './helpers/tabular-data.js';
import { compileBytes, expectClose, FLOAT_TOL, ortProbe, runOrt, type Tolerance } from './helpers/tabular-executor.js';

const ML = { '': 13, 'ai.onnx.ml': 1 };
const KERNELS = ['LINEAR', 'POLY', 'RBF', 'SIGMOID'] as const;
type Kernel = (typeof KERNELS)[number];
const POST_TRANSFORMS = ['NONE', 'LOGISTIC', 'SOFTMAX', 'SOFTMAX_ZERO', 'PROBIT'] as const;
type Post = (typeof POST_TRANSFORMS)[number];

/** [gamma, coef0, degree]: LINEAR ignores them (non-zero here to show it). */
const PARAMS: Record<Kernel, number[]> = {
  LINEAR: [0.3, 0.5, 3],
  POLY: [0.3, 0.5, 3],
  RBF: [0.4, 0, 0],
  SIGMOID: [0.2, 0.1, 0],
};

const probitTol: Tolerance = { abs: 1e-3, rel: 1e-4 };

function uniform(n: number, r: () => number, lo: number, hi: number): number[] {
  return Array.from({ length: n }, () => lo + (hi - lo) * r());
}

function labelAttrs(kind: 'int64' | 'string', classes: number): Record<string, AttrValue> {
  return kind === 'int64'
    ? { classlabels_ints: Array.from({ length: classes }, (_, c) => 10 * (c + 1)) }
    : { classlabels_strings: Array.from({ length: classes }, (_, c) => `class_${c}`) };
}

interface SvcOptions {
  classes: number;
  features?: number;
  kernel: Kernel;
  params?: number[];
  probabilities: boolean;
  labels: 'int64' | 'string';
  post: Post;
  seed: number;
  inputType?: ElementType;
}

/** The attributes of a random libsvm-style SVC (1 to 4 support vectors per class). */
function svcAttributes(o: SvcOptions): Record<string, AttrValue> {
  const r = rng(o.seed);
  const f = o.features ?? 5;
  const perClass = Array.from({ length: o.classes }, () => 1 + Math.floor(r() * 4));
  const v = perClass.reduce((a, b) => a + b, 0);
  const pairs = (o.classes * (o.classes - 1)) / 2;
  return {
    kernel_type: o.kernel,
    kernel_params: attr.floats(o.params ?? PARAMS[o.kernel]),
    support_vectors: attr.floats(uniform(v * f, r, -1, 1)),
    vectors_per_class: perClass,
    coefficients: attr.floats(uniform((o.classes - 1) * v, r, -1, 1)),
    rho: attr.floats(uniform(pairs, r, -0.5, 0.5)),
    ...(o.probabilities ? { prob_a: attr.floats(uniform(pairs, r, -3, -0.5)), prob_b: attr.floats(uniform(pairs, r, -0.3, 0.3)) } : {}),
    ...labelAttrs(o.labels, o.classes),
    post_transform: o.post,
  };
}

function scoreColumns(classes: number, probabilities: boolean): number {
  if (probabilities) return classes;
  return classes === 2 ? 2 : (classes * (classes - 1)) / 2;
}

function classifierModel(attributes: Record<string, AttrValue>, labels: 'int64' | 'string', cols: number, features = 5, inputType: ElementType = 'float'): Uint8Array {
  return new ModelBuilder({ opsets: ML })
    .input('x', inputType, ['N', features])
    .mlNode('SVMClassifier', ['x'], ['label', 'scores'], attributes, 'svc')
    .output('label', labels, ['N'])
    .output('scores', 'float', ['N', cols])
    .toBytes();
}

function svcModel(o: SvcOptions): Uint8Array {
  return classifierModel(svcAttributes(o), o.labels, scoreColumns(o.classes, o.probabilities), o.features ?? 5, o.inputType);
}

function input(n: number, f: number, seed: number, type: ElementType = 'float'): TabularInput {
  if (type === 'double') return { name: 'x', dims: [n, f], data: randomDoubles(n * f, seed, -1.5, 1.5) };
  if (type === 'int64') return { name: 'x', dims: [n, f], data: BigInt64Array.from(randomInts(n * f, seed, -2, 2), BigInt) };
  if (type === 'int32') return { name: 'x', dims: [n, f], data: Int32Array.from(randomInts(n * f, seed, -2, 2)) };
  return { name: 'x', dims: [n, f], data: randomFloats(n * f, seed, -1.5, 1.5) };
}

/** Column 0 of an [N, 2] result. */
function firstColumn<T extends { dims: readonly number[]; data: ArrayLike<unknown> }>(t: T): T {
  const n = t.dims[0]!;
  return { ...t, dims: [n, 1], data: Float32Array.from({ length: n }, (_, i) => Number(t.data[i * 2])) };
}

/**
 * Runs `bytes` on both engines for every input and compares every output. `firstColumnOnly`: for
 * two classes without probabilities and PROBIT, onnxruntime leaves the second score column unset
 * (its value changes from run to run), so only the first is compared and ours must be 0.
 */
async function compare(bytes: Uint8Array, inputs: readonly TabularInput[], what: string, tol: Tolerance = FLOAT_TOL, firstColumnOnly = false): Promise<TabularOutput[][]> {
  const ours = compileBytes(bytes);
  const results: TabularOutput[][] = [];
  try {
    for (const inp of inputs) {
      const got = ours.runSync([inp]);
      const want = await runOrt(bytes, [inp]);
      for (const out of got) {
        const label = `${what} N=${inp.dims[0]} ${out.name}`;
        const e = want.get(out.name)!;
        if (firstColumnOnly && out.dims.length === 2) {
          expectClose(firstColumn(out), firstColumn(e), tol, label);
          for (let i = 0; i < out.dims[0]!; i++) expect((out.data as Float32Array)[i * 2 + 1]).toBe(0);
        } else {
          expectClose(out, e, tol, label);
        }
      }
      results.push(got);
    }
    return results;
  } finally {
    ours.dispose();
  }
}

describe('SVMClassifier with support vectors', () => {
  for (const kernel of KERNELS) {
    it(`${kernel}: 2, 3 and 4 classes, with and without prob_a/prob_b, every post_transform`, async () => {
      let seed = 1;
      for (const classes of [2, 3, 4]) {
        for (const probabilities of [false, true]) {
          for (const post of POST_TRANSFORMS) {
            const labels = seed % 2 ? 'int64' : 'string';
            const bytes = svcModel({ classes, kernel, probabilities, labels, post, seed: seed * 31 + classes });
            // Decision values (no probabilities) carry the kernel's error; probabilities are in [0, 1].
            const tol = post === 'PROBIT' ? probitTol : FLOAT_TOL;
            const what = `${kernel} ${classes} classes ${probabilities ? 'prob' : 'decision'} ${labels} ${post}`;
            const probitBinary = classes === 2 && !probabilities && post === 'PROBIT';
            await compare(bytes, [input(1, 5, seed), input(97, 5, seed + 1000)], what, tol, probitBinary);
            seed++;
          }
        }
      }
    });
  }

  it('POLY kernels of degree 2, 4 and 2.5 (on non-negative bases), and a zero coef0', async () => {
    for (const params of [
      [0.4, 0.3, 2],
      [0.2, 1, 4],
      [0.1, 2, 2.5],
      [0.5, 0, 3],
    ]) {
      for (const probabilities of [false, true]) {
        const bytes = svcModel({ classes: 3, kernel: 'POLY', params, probabilities, labels: 'int64', post: 'NONE', seed: 7 });
        await compare(bytes, [input(64, 5, 3)], `POLY ${params.join(',')}`);
      }
    }
  });

  it('double, int64 and int32 inputs (converted to float, as onnxruntime does) and a single [F] row', async () => {
    for (const inputType of ['double', 'int64', 'int32'] as const) {
      const bytes = svcModel({ classes: 3, kernel: 'RBF', probabilities: true, labels: 'string', post: 'NONE', seed: 5, inputType });
      await compare(bytes, [input(1, 5, 2, inputType), input(50, 5, 3, inputType)], inputType);
    }
    const bytes = new ModelBuilder({ opsets: ML })
      .input('x', 'float', [5])
      .mlNode('SVMClassifier', ['x'], ['label', 'scores'], svcAttributes({ classes: 3, kernel: 'RBF', probabilities: false, labels: 'int64', post: 'NONE', seed: 9 }))
      .output('label', 'int64', [1])
      .output('scores', 'float', [1, 3])
      .toBytes();
    await compare(bytes, [{ name: 'x', dims: [5], data: randomFloats(5, 4, -1, 1) }], '[F]');
  });

  it('a batch large enough to run on the thread pool agrees too (30 features, 60 vectors, 3000 rows)', async () => {
    for (const kernel of ['RBF', 'SIGMOID'] as const) {
      const bytes = svcModel({ classes: 3, kernel, features: 30, params: [0.02, 0.1, 0], probabilities: true, labels: 'int64', post: 'NONE', seed: 11 });
      await compare(bytes, [input(3000, 30, 12)], `${kernel} large`);
    }
    const r = rng(3);
    const perClass = [20, 25, 15];
    const attrs = {
      kernel_type: 'RBF',
      kernel_params: attr.floats([0.02, 0, 0]),
      support_vectors: attr.floats(uniform(60 * 30, r, -1, 1)),
      vectors_per_class: perClass,
      coefficients: attr.floats(uniform(2 * 60, r, -1, 1)),
      rho: attr.floats(uniform(3, r, -0.5, 0.5)),
      classlabels_ints: [0, 1, 2],
    };
    await compare(classifierModel(attrs, 'int64', 3, 30), [input(3000, 30, 13)], 'large decision values');
  });

  it('the label is the class with the most one-vs-one votes, as scikit-learn predicts', () => {
    // Three classes, one support vector each, linear kernel: decision(i, j) = c1 * k_i + c2 * k_j + rho.
    const model = compileBytes(
      classifierModel(
        {
          kernel_type: 'LINEAR',
          support_vectors: attr.floats([1, 0, 0, 1, -1, -1]),
          vectors_per_class: [1, 1, 1],
          // rows: coefficients of (vs class 1 | 2); sums for pair (0,1): coef[0][0] k0 + coef[0][1] k1 ...
          coefficients: attr.floats([1, -1, -1, 1, 1, -1]),
          rho: attr.floats([0, 0, 0]),
          classlabels_strings: ['a', 'b', 'c'],
        },
        'string',
        3,
        2,
      ),
    );
    const [label, scores] = model.runSync([{ name: 'x', dims: [3, 2], data: Float32Array.from([2, 0, 0, 2, -2, -2]) }]);
    const k = (x: number[], sv: number[]) => x[0]! * sv[0]! + x[1]! * sv[1]!;
    const svs = [[1, 0], [0, 1], [-1, -1]];
    const rows = [[2, 0], [0, 2], [-2, -2]];
    const coef = [[1, -1, -1], [1, 1, -1]];
    rows.forEach((x, n) => {
      const ks = svs.map((sv) => k(x, sv));
      const votes = [0, 0, 0];
      const d: number[] = [];
      for (let i = 0; i < 2; i++) {
        for (let j = i + 1; j < 3; j++) {
          const v = coef[j - 1]![i]! * ks[i]! + coef[i]![j]! * ks[j]!;
          d.push(v);
          votes[v > 0 ? i : j]!++;
        }
      }
      expect(Array.from((scores!.data as Float32Array).slice(n * 3, n * 3 + 3))).toEqual(d);
      expect((label!.data as string[])[n]).toBe(['a', 'b', 'c'][votes.indexOf(Math.max(...votes))]);
    });
  });
});

describe('SVMClassifier without support vectors (liblinear form)', () => {
  function linearModel(classes: number, post: Post, labels: 'int64' | 'string', kernel: Kernel = 'LINEAR'): { bytes: Uint8Array; w: number[]; rho: number } {
    const r = rng(classes * 13 + post.length);
    const w = uniform(classes * 4, r, -1, 1);
    const rho = 0.25;
    const bytes = new ModelBuilder({ opsets: ML })
      .input('x', 'float', ['N', 4])
      .mlNode('SVMClassifier', ['x'], ['label', 'scores'], {
        kernel_type: kernel,
        kernel_params: attr.floats(PARAMS[kernel]),
        coefficients: attr.floats(w),
        rho: attr.floats([rho]),
        ...labelAttrs(labels, classes),
        post_transform: post,
      }, 'svc')
      .output('label', labels, ['N'])
      .output('scores', 'float', ['N', classes])
      .toBytes();
    return { bytes, w, rho };
  }

  it('3 classes, every post_transform, both label types; the kernel type does not apply', async () => {
    for (const post of POST_TRANSFORMS) {
      for (const labels of ['int64', 'string'] as const) {
        const { bytes } = linearModel(3, post, labels, labels === 'string' ? 'RBF' : 'LINEAR');
        // PROBIT needs scores in (0, 1): inputs near 0 keep them near rho.
        const x = post === 'PROBIT' ? [{ name: 'x', dims: [40, 4], data: randomFloats(160, 1, -0.1, 0.1) }] : [input(1, 4, 1), input(60, 4, 2)];
        await compare(bytes, x, `linear 3 ${post} ${labels}`, post === 'PROBIT' ? probitTol : FLOAT_TOL);
      }
    }
  });

  it('2 classes: the scores agree; the label is the higher score (onnxruntime picks class 1 whenever a score is positive)', async () => {
    for (const post of ['NONE', 'LOGISTIC', 'SOFTMAX'] as const) {
      const { bytes, w, rho } = linearModel(2, post, 'int64');
      const x = input(200, 4, 5);
      const ours = compileBytes(bytes);
      const [label, scores] = ours.runSync([x]);
      ours.dispose();
      const want = await runOrt(bytes, [x]);
      expectClose(scores!, want.get('scores')!, FLOAT_TOL, `linear 2 ${post} scores`);
      const xs = x.data as Float32Array;
      let differ = 0;
      for (let n = 0; n < 200; n++) {
        const s = [0, 1].map((c) => rho + [0, 1, 2, 3].reduce((acc, j) => acc + xs[n * 4 + j]! * Math.fround(w[c * 4 + j]!), 0));
        if (Math.abs(s[0]! - s[1]!) < 1e-5) continue;
        expect((label!.data as BigInt64Array)[n], `row ${n}`).toBe(s[0]! >= s[1]! ? 10n : 20n);
        // onnxruntime's rule for two classes with mixed-sign weights.
        const ortLabel = Math.max(s[0]!, s[1]!) > 0 ? 20n : s[0]! >= s[1]! ? 10n : 20n;
        expect((want.get('label')!.data as BigInt64Array)[n], `onnxruntime row ${n}`).toBe(ortLabel);
        if (ortLabel !== (label!.data as BigInt64Array)[n]) differ++;
      }
      expect(differ).toBeGreaterThan(0); // the data does reach the case where the two differ
    }
  });
});

describe('SVMRegressor', () => {
  function svrModel(kernel: Kernel, oneClass: boolean, seed: number, vectors = 12, features = 5, inputType: ElementType = 'float'): Uint8Array {
    const r = rng(seed);
    return new ModelBuilder({ opsets: ML })
      .input('x', inputType, ['N', features])
      .mlNode('SVMRegressor', ['x'], ['y'], {
        kernel_type: kernel,
        kernel_params: attr.floats(PARAMS[kernel]),
        n_supports: vectors,
        support_vectors: attr.floats(uniform(vectors * features, r, -1, 1)),
        coefficients: attr.floats(uniform(vectors, r, -1, 1)),
        rho: attr.floats([uniform(1, r, -0.5, 0.5)[0]!]),
        one_class: oneClass ? 1 : 0,
        post_transform: 'NONE',
      }, 'svr')
      .output('y', 'float', ['N', 1])
      .toBytes();
  }

  it('every kernel, plain (SVR) and one_class (OneClassSVM)', async () => {
    for (const kernel of KERNELS) {
      for (const oneClass of [false, true]) {
        const bytes = svrModel(kernel, oneClass, kernel.length * 7 + Number(oneClass));
        const [, batch] = await compare(bytes, [input(1, 5, 3), input(200, 5, 4)], `${kernel} one_class=${oneClass}`);
        if (oneClass) {
          const ys = Array.from(batch![0]!.data as Float32Array);
          expect(ys.every((y) => y === 1 || y === -1)).toBe(true);
          expect(new Set(ys).size).toBe(2); // both sides of the boundary occur
        }
      }
    }
  });

  it('without support vectors (n_supports 0): coefficients are the weights of a linear model', async () => {
    const bytes = new ModelBuilder({ opsets: ML })
      .input('x', 'float', ['N', 4])
      .mlNode('SVMRegressor', ['x'], ['y'], {
        kernel_type: 'RBF',
        kernel_params: attr.floats(PARAMS.RBF),
        coefficients: attr.floats([0.5, -1.25, 2, 0.75]),
        rho: attr.floats([0.3]),
      })
      .output('y', 'float', ['N', 1])
      .toBytes();
    await compare(bytes, [input(1, 4, 1), input(100, 4, 2)], 'linear SVR');
  });

  it('an empty kernel_params means gamma = coef0 = degree = 0, as in onnxruntime', async () => {
    const bytes = new ModelBuilder({ opsets: ML })
      .input('x', 'float', ['N', 2])
      .mlNode('SVMRegressor', ['x'], ['y'], {
        kernel_type: 'SIGMOID',
        kernel_params: attr.floats([]),
        n_supports: 2,
        support_vectors: attr.floats([1, 2, -1, 0.5]),
        coefficients: attr.floats([0.5, -2]),
        rho: attr.floats([0.25]),
      })
      .output('y', 'float', ['N', 1])
      .toBytes();
    const [outputs] = await compare(bytes, [input(9, 2, 1)], 'empty kernel_params');
    // tanh(0 * x.sv + 0) = 0 for every vector: only rho remains.
    expect(Array.from(outputs![0]!.data as Float32Array)).toEqual(new Array(9).fill(0.25));
  });

  it('a large batch on the thread pool, and double / int64 inputs (onnxruntime has float only: checked against the float model)', async () => {
    await compare(svrModel('RBF', false, 3, 80, 30), [input(2000, 30, 6)], 'large SVR');
    const float = compileBytes(svrModel('SIGMOID', false, 4));
    for (const type of ['double', 'int64'] as const) {
      const other = compileBytes(svrModel('SIGMOID', false, 4, 12, 5, type));
      const x = input(30, 5, 8, type);
      const asFloat = { name: 'x', dims: x.dims, data: Float32Array.from(x.data as ArrayLike<number | bigint>, Number) };
      expect(Array.from(other.runSync([x])[0]!.data as Float32Array)).toEqual(Array.from(float.runSync([asFloat])[0]!.data as Float32Array));
      other.dispose();
    }
    float.dispose();
  });
});

describe('malformed models', () => {
  const base = (): Record<string, AttrValue> => svcAttributes({ classes: 3, kernel: 'RBF', probabilities: true, labels: 'int64', post: 'NONE', seed: 2 });
  // base(): vectors_per_class from seed 2, 5 features.
  const perClass = (base().vectors_per_class as number[]).slice();
  const v = perClass.reduce((a, b) => a + b, 0);
  const refusal = (attrs: Record<string, AttrValue>, op = 'SVMClassifier'): Error => {
    const b = new ModelBuilder({ opsets: ML }).input('x', 'float', ['N', 5]);
    const bytes =
      op === 'SVMClassifier'
        ? b.mlNode(op, ['x'], ['label', 'scores'], attrs, 'svc').output('label', 'int64', ['N']).output('scores', 'float', ['N', 3]).toBytes()
        : b.mlNode(op, ['x'], ['y'], attrs, 'svr').output('y', 'float', ['N', 1]).toBytes();
    try {
      normalized(bytes);
    } catch (err) {
      return err as Error;
    }
    throw new Error('normalize accepted the model');
  };
  const svc = 'node "svc" (operator "ai.onnx.ml.SVMClassifier")';
  const svr = 'node "svr" (operator "ai.onnx.ml.SVMRegressor")';

  it('normalize refuses inconsistent SVMClassifier attributes, naming the count that is wrong', () => {
    const cases: [Record<string, AttrValue>, string][] = [
      [{ support_vectors: attr.floats(new Array(v * 5 - 1).fill(0.5)) }, `has ${v * 5 - 1} support vector values, not a positive multiple of the ${v} vectors that vectors_per_class counts`],
      [{ vectors_per_class: [...perClass.slice(0, 2), perClass[2]! + 1] }, `has ${v * 5} support vector values, not a positive multiple of the ${v + 1} vectors that vectors_per_class counts`],
      [{ vectors_per_class: [1, 1, 1, 1] }, 'has 4 vectors_per_class entries for 3 classes'],
      [{ vectors_per_class: [perClass[0]! + 1, -1, perClass[1]! + perClass[2]!] }, 'has a negative count -1 in vectors_per_class'],
      [{ coefficients: attr.floats(new Array(2 * v + 1).fill(0.1)) }, `has ${2 * v + 1} coefficients; 3 classes and ${v} support vectors need (classes - 1) * vectors = ${2 * v}`],
      [{ rho: attr.floats([0.1, 0.2]) }, 'has 2 rho values; 3 classes need one per pair of classes, 3'],
      [{ prob_a: attr.floats([-1, -1]), prob_b: attr.floats([0, 0]) }, 'has 2 prob_a and prob_b values; 3 classes need one per pair of classes, 3'],
      [{ prob_b: attr.floats([0.1]) }, 'has 3 prob_a but 1 prob_b values'],
      [{ kernel_params: attr.floats([0.1, 0.2]) }, 'has 2 kernel_params; they must be [gamma, coef0, degree]'],
    ];
    for (const [change, message] of cases) {
      const err = refusal({ ...base(), ...change });
      expect(err, message).toBeInstanceOf(OnnxModelError);
      expect(err.message).toBe(`${svc} ${message}`);
    }
    // Without support vectors: weights per class and one rho.
    const linear = { coefficients: attr.floats([1, 2, 3, 4, 5, 6, 7]), rho: attr.floats([0]), classlabels_ints: [1, 2, 3] };
    expect(refusal(linear).message).toBe(`${svc} has 7 coefficients without support vectors, not a positive multiple of the 3 classes`);
    expect(refusal({ ...linear, coefficients: attr.floats(new Array(15).fill(1)), rho: attr.floats([0, 1, 2]) }).message).toBe(
      `${svc} has 3 rho values without support vectors; it needs 1`,
    );
    expect(refusal({ ...linear, support_vectors: attr.floats([1, 2]) }).message).toBe(`${svc} has 2 support vector values but vectors_per_class counts no support vectors`);
  });

  it('an unknown kernel or transform is an unsupported attribute', () => {
    const err = refusal({ ...base(), kernel_type: 'GAUSSIAN' });
    expect(err).toBeInstanceOf(UnsupportedOperatorError);
    expect(err.message).toBe('attribute "kernel_type"="GAUSSIAN" of operator "ai.onnx.ml.SVMClassifier" (node "svc", opset ai.onnx.ml 1) is not supported');
    expect(refusal({ ...base(), post_transform: 'SQUARE' }).message).toContain('attribute "post_transform"="SQUARE"');
    const svrAttrs = { n_supports: 1, support_vectors: attr.floats([1, 2, 3, 4, 5]), coefficients: attr.floats([1]), rho: attr.floats([0]) };
    expect(refusal({ ...svrAttrs, post_transform: 'LOGISTIC' }, 'SVMRegressor').message).toBe(
      'attribute "post_transform"="LOGISTIC" of operator "ai.onnx.ml.SVMRegressor" (node "svr", opset ai.onnx.ml 1) is not supported',
    );
    expect(refusal({ ...svrAttrs, kernel_type: 'rbf' }, 'SVMRegressor')).toBeInstanceOf(UnsupportedOperatorError);
  });

  it('normalize refuses inconsistent SVMRegressor attributes', () => {
    const ok = { n_supports: 2, support_vectors: attr.floats(new Array(10).fill(0.5)), coefficients: attr.floats([1, -1]), rho: attr.floats([0]) };
    const cases: [Record<string, AttrValue>, string][] = [
      [{ n_supports: 3 }, 'has 10 support vector values, not a positive multiple of the 3 vectors that n_supports counts'],
      [{ coefficients: attr.floats([1, 2, 3]) }, 'has 3 coefficients for n_supports = 2 support vectors'],
      [{ rho: attr.floats([0, 1]) }, 'has 2 rho values; it needs 1'],
      [{ n_supports: -1 }, 'has n_supports = -1; it must not be negative'],
      [{ n_supports: 0 }, 'has 10 support vector values but n_supports counts no support vectors'],
    ];
    for (const [change, message] of cases) expect(refusal({ ...ok, ...change }, 'SVMRegressor').message).toBe(`${svr} ${message}`);
    expect(refusal({ ...ok, one_class: 2 }, 'SVMRegressor')).toBeInstanceOf(UnsupportedOperatorError);
  });

  // The executor does not trust normalize: a NormalizedModel edited after normalize (as a bug there
  // would leave it) is refused at compile, never read out of bounds.
  function compileEdited(model: NormalizedModel, edit: Record<string, OnnxAttribute>): () => void {
    const node = model.graph.nodes[0]!;
    node.attributes = { ...node.attributes, ...edit };
    return () => compileTabularModel(model).dispose();
  }
  const floats = (value: number[]): OnnxAttribute => ({ type: 'floats', value });
  const ints = (value: number[]): OnnxAttribute => ({ type: 'ints', value });
  const svcBytes = () => svcModel({ classes: 3, kernel: 'RBF', probabilities: true, labels: 'int64', post: 'NONE', seed: 2 });

  it('the executor refuses the same inconsistencies at compile time, naming the node', () => {
    const cases: [Record<string, OnnxAttribute>, string][] = [
      [{ support_vectors: floats(new Array(v * 5 - 1).fill(0.5)) }, `has ${v * 5 - 1} support vector values, not a positive multiple of the ${v} vectors that vectors_per_class counts`],
      [{ vectors_per_class: ints([1, 1]) }, 'vectors_per_class has 2 entries for 3 classes'],
      [{ coefficients: floats([1, 2, 3]) }, `has 3 coefficients; 3 classes and ${v} support vectors need (classes - 1) * vectors = ${2 * v}`],
      [{ rho: floats([1]) }, 'has 1 rho values; 3 classes need one per pair, 3'],
      [{ prob_b: floats([1]) }, 'has 3 prob_a but 1 prob_b values'],
      [{ kernel_type: { type: 'string', value: 'GAUSSIAN' } }, 'kernel_type "GAUSSIAN" is not supported (LINEAR, POLY, RBF or SIGMOID)'],
      [{ kernel_params: floats([1]) }, 'kernel_params has 1 values; it must be [gamma, coef0, degree]'],
      [{ vectors_per_class: ints([-1, 1, v]) }, 'vectors_per_class has a negative count -1'],
      [{ classlabels_ints: ints([]) }, 'needs exactly one of classlabels_ints and classlabels_strings'],
      // Hostile counts: each vectors_per_class entry is checked against the support vector values
      // before it is added, so the sum can neither overflow nor wrap onto a count that passes.
      ...hostileCounts(),
    ];
    for (const [edit, message] of cases) {
      expect(compileEdited(normalized(svcBytes()), edit), message).toThrow(`${svc}: ${message}`);
    }
  });

  /**
   * vectors_per_class entries whose sum wraps 2^64 (2048 entries of 2^53 - 1 sum to 2^64 - 2048) onto a
   * small count that divides the support vector values, with coefficients, rho and labels sized for
   * the wrapped count: before the fix compile accepted the first and runSync read far past the
   * coefficients (a segfault). Plus a single huge entry and small entries that add up to too many.
   */
  function hostileCounts(): [Record<string, OnnxAttribute>, string][] {
    const huge = Number.MAX_SAFE_INTEGER; // 2^53 - 1, the largest integer the addon takes
    const classes = 2049;
    const wrapped = (perClass: number[], values: number, vectors: number): Record<string, OnnxAttribute> => ({
      classlabels_ints: ints(Array.from({ length: classes }, (_, c) => c)),
      vectors_per_class: ints(perClass),
      support_vectors: floats(new Array(values).fill(0.5)),
      coefficients: floats(new Array((classes - 1) * vectors).fill(0.5)),
      rho: floats(new Array((classes * (classes - 1)) / 2).fill(0)),
      prob_a: floats([]),
      prob_b: floats([]),
    });
    const hugeEntries = new Array<number>(classes - 1).fill(huge);
    return [
      // The reviewer's reproducer: the sum wraps to 1, 5 support vector values (5 features).
      [wrapped([...hugeEntries, classes], 5, 1), `vectors_per_class counts more support vectors than the 5 support vector values hold (entry 0 is ${huge})`],
      // The huge entries last, the sum wrapping to 5 vectors of 2 features.
      [wrapped([classes + 4, ...hugeEntries], 10, 5), `vectors_per_class counts more support vectors than the 10 support vector values hold (entry 0 is ${classes + 4})`],
      // One huge entry in the 3-class model.
      [{ vectors_per_class: ints([1, huge, 1]) }, `vectors_per_class counts more support vectors than the ${v * 5} support vector values hold (entry 1 is ${huge})`],
      // Entries each within bounds whose sum is not.
      [{ vectors_per_class: ints([v * 5, 0, 1]) }, `vectors_per_class counts more support vectors than the ${v * 5} support vector values hold (entry 2 is 1)`],
    ];
  }

  it('the executor refuses an SVMRegressor n_supports beyond its support vectors at compile time', () => {
    const bytes = new ModelBuilder({ opsets: ML })
      .input('x', 'float', ['N', 5])
      .mlNode('SVMRegressor', ['x'], ['y'], { n_supports: 2, support_vectors: attr.floats(new Array(10).fill(0.5)), coefficients: attr.floats([1, -1]), rho: attr.floats([0]) }, 'svr')
      .output('y', 'float', ['N', 1])
      .toBytes();
    const huge = Number.MAX_SAFE_INTEGER;
    const cases: [Record<string, OnnxAttribute>, string][] = [
      [{ n_supports: { type: 'int', value: huge } }, `n_supports = ${huge} counts more support vectors than the 10 support vector values hold`],
      [{ n_supports: { type: 'int', value: 11 }, coefficients: floats(new Array(11).fill(1)) }, 'n_supports = 11 counts more support vectors than the 10 support vector values hold'],
    ];
    for (const [edit, message] of cases) {
      expect(compileEdited(normalized(bytes), edit), message).toThrow(`${svr}: ${message}`);
    }
  });

  it('the executor checks the input width against the support vectors, at compile and at run time', () => {
    const attrs = svcAttributes({ classes: 3, kernel: 'RBF', probabilities: false, labels: 'int64', post: 'NONE', seed: 2 });
    expect(() => compileBytes(classifierModel(attrs, 'int64', 3, 6))).toThrow(`${svc}: the input has 6 features but the model is for 5`);
    const open = new ModelBuilder({ opsets: ML })
      .input('x', 'float', ['N', 'F'])
      .mlNode('SVMClassifier', ['x'], ['label', 'scores'], attrs, 'svc')
      .output('label', 'int64', ['N'])
      .output('scores', 'float', ['N', 3])
      .toBytes();
    const model = compileBytes(open);
    expect(() => model.runSync([input(4, 7, 1)])).toThrow(`${svc}: the input has 7 features but the model is for 5`);
    expect(model.runSync([input(4, 5, 1)])[0]!.dims).toEqual([4]);
    model.dispose();
    const svr = new ModelBuilder({ opsets: ML })
      .input('x', 'float', ['N', 3])
      .mlNode('SVMRegressor', ['x'], ['y'], { n_supports: 2, support_vectors: attr.floats([1, 2, 3, 4, 5, 6, 7, 8]), coefficients: attr.floats([1, 1]), rho: attr.floats([0]) }, 'svr')
      .output('y', 'float', ['N', 1])
      .toBytes();
    expect(() => compileBytes(svr)).toThrow('node "svr" (operator "ai.onnx.ml.SVMRegressor"): the input has 3 features but the model is for 4');
  });
});

describe('an SVC build through the host', () => {
  const { api } = hostForTests({ PREDICT_MAX_WAIT_MICROS: '20000' });

  const FEATURES = ['sepal_length', 'sepal_width', 'petal_length', 'petal_width'];
  const LABELS = ['setosa', 'versicolor', 'virginica'];

  /** As sklearn-onnx writes SVC(kernel='rbf', probability=True): SVMClassifier + ZipMap. */
  function irisSvc(attrs: Record<string, AttrValue>): Uint8Array {
    return new ModelBuilder({ opsets: ML })
      .input('float_input', 'float', [null, 4])
      .mlNode('SVMClassifier', ['float_input'], ['output_label', 'probabilities'], attrs, 'SVM')
      .mlNode('ZipMap', ['probabilities'], ['output_probability'], { classlabels_strings: LABELS }, 'ZipMap')
      .output('output_label', 'string', [null])
      .sequenceMapOutput('output_probability', 'string')
      .toBytes();
  }

  it('uploads, deploys and answers labels and probabilities that match onnxruntime', async () => {
    const attrs = { ...svcAttributes({ classes: 3, features: 4, kernel: 'RBF', probabilities: true, labels: 'string', post: 'NONE', seed: 26 }), classlabels_strings: LABELS };
    const bytes = irisSvc(attrs);
    expect((await api('POST', '/api/v1/models', { model_id: 'iris-svc' })).status).toBe(201);
    const build = await api<{ build_id: string; features: { name: string; type: string }[]; outputs: string[]; operators: string[] }>(
      'POST',
      `/api/v1/models/iris-svc/builds?feature_names=${FEATURES.join(',')}`,
      bytes,
    );
    expect(build.status, JSON.stringify(build.body)).toBe(201);
    expect(build.body.features).toEqual(FEATURES.map((name) => ({ name, type: 'float' })));
    expect(build.body.outputs).toEqual(['output_label', 'output_probability']);
    expect(build.body.operators).toEqual(['ai.onnx.ml.SVMClassifier', 'ai.onnx.ml.ZipMap']);
    const dep = await api<{ deployment_id: string }>('POST', '/api/v1/models/iris-svc/deployments', { build_id: build.body.build_id });
    expect(dep.status, JSON.stringify(dep.body)).toBe(202);
    const done = await waitForDeployment(api, dep.body.deployment_id);
    expect(done.status, done.reason ?? '').toBe('LIVE');

    const rows = Array.from({ length: 25 }, (_, n) => Array.from(randomFloats(4, 100 + n, -1.5, 1.5)));
    const res = await api<Array<{ output_label: string; output_probability: Record<string, number> }>>('POST', '/v1/iris-svc/predict', {
      columns: FEATURES,
      index: rows.map((_, n) => n),
      data: rows,
    });
    expect(res.status, JSON.stringify(res.body)).toBe(200);

    const session = await ort.InferenceSession.create(ortProbe(bytes).bytes);
    const out = await session.run({ float_input: new ort.Tensor('float32', Float32Array.from(rows.flat()), [rows.length, 4]) });
    await session.release();
    const labels = out.output_label!.data as string[];
    const probs = out.probabilities!.data as Float32Array;
    expect(new Set(labels).size).toBeGreaterThan(1);
    rows.forEach((_, n) => {
      const answer = res.body[n]!;
      expect(answer.output_label).toBe(labels[n]);
      LABELS.forEach((l, c) => {
        const want = probs[n * 3 + c]!;
        expect(Math.abs(answer.output_probability[l]! - want), `row ${n} ${l}`).toBeLessThanOrEqual(1e-5 + 1e-4 * want);
      });
    });
  });

  it('refuses a malformed SVC at upload with a 400 naming the problem', async () => {
    expect((await api('POST', '/api/v1/models', { model_id: 'bad-svc' })).status).toBe(201);
    const attrs = { ...svcAttributes({ classes: 3, features: 4, kernel: 'RBF', probabilities: true, labels: 'string', post: 'NONE', seed: 26 }), classlabels_strings: LABELS, rho: attr.floats([0.5]) };
    const res = await api<{ error: { code: string; message: string; param: string } }>(
      'POST',
      `/api/v1/models/bad-svc/builds?feature_names=${FEATURES.join(',')}`,
      irisSvc(attrs),
    );
    expect(res.status).toBe(400);
    expect(res.body.error).toMatchObject({
      code: 'invalid_argument',
      param: 'file',
      message: 'node "SVM" (operator "ai.onnx.ml.SVMClassifier") has 1 rho values; 3 classes need one per pair of classes, 3',
    });
  });
});
