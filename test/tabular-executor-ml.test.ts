// The ai.onnx.ml linear models, transforms and encoders of the native tabular executor against
// onnxruntime-node: LinearRegressor, LinearClassifier (int64 and string labels, every
// post_transform, the one-column binary case), Scaler, Normalizer, Binarizer, Imputer,
// ArrayFeatureExtractor, OneHotEncoder, LabelEncoder (string <-> int64 <-> float, version 2 and 4)
// and ZipMap (compared through the probability tensor it wraps). Float tolerance 1e-5 + 1e-4 * |x|;
// labels and strings exactly. Where onnxruntime lacks a kernel (double inputs of some operators)
// the expected values are computed here.
import { describe, expect, it } from 'vitest';

import { attr, ModelBuilder, type AttrValue } from './helpers/onnx-builder.js';
import { randomDoubles, randomFloats, randomInts } from './helpers/tabular-data.js';
import { BATCHES, compareWithOrt, compileBytes, FLOAT_TOL } from './helpers/tabular-executor.js';

const ML = { '': 13, 'ai.onnx.ml': 1 };
const floats = (n: number, seed: number, lo = -1, hi = 1) => Array.from(randomFloats(n, seed, lo, hi));

describe('linear models', () => {
  it('LinearRegressor with 1 and 3 targets and every post_transform', async () => {
    for (const [targets, post] of [
      [1, 'NONE'],
      [1, 'PROBIT'],
      [3, 'NONE'],
      [3, 'SOFTMAX'],
      [3, 'LOGISTIC'],
      [3, 'SOFTMAX_ZERO'],
    ] as const) {
      const bytes = new ModelBuilder({ opsets: ML })
        .input('x', 'float', ['N', 4])
        .mlNode('LinearRegressor', ['x'], ['y'], {
          coefficients: attr.floats(floats(4 * targets, targets)),
          intercepts: attr.floats(floats(targets, 7)),
          targets,
          post_transform: post,
        })
        .output('y', 'float', ['N', targets])
        .toBytes();
      for (const n of BATCHES) {
        // PROBIT needs scores in (0, 1).
        const x = post === 'PROBIT' ? randomFloats(n * 4, n, 0, 0.2) : randomFloats(n * 4, n);
        await compareWithOrt(bytes, [{ name: 'x', dims: [n, 4], data: x }], undefined, `${targets} ${post} N=${n}`);
      }
    }
  });

  it('LinearRegressor on int64 and double inputs (computed in float)', () => {
    const coef = [0.5, -1.25, 2];
    for (const type of ['int64', 'double', 'int32'] as const) {
      const model = compileBytes(
        new ModelBuilder({ opsets: ML })
          .input('x', type, ['N', 3])
          .mlNode('LinearRegressor', ['x'], ['y'], { coefficients: attr.floats(coef), intercepts: attr.floats([0.25]) })
          .output('y', 'float', ['N', 1])
          .toBytes(),
      );
      const xs = randomInts(21, 3, -50, 50);
      const data = type === 'int64' ? BigInt64Array.from(xs, BigInt) : type === 'int32' ? Int32Array.from(xs) : Float64Array.from(xs);
      const [y] = model.runSync([{ name: 'x', dims: [7, 3], data }]);
      expect(y!.dims).toEqual([7, 1]);
      for (let i = 0; i < 7; i++) {
        const want = 0.25 + coef[0]! * xs[i * 3]! + coef[1]! * xs[i * 3 + 1]! + coef[2]! * xs[i * 3 + 2]!;
        expect((y!.data as Float32Array)[i]).toBeCloseTo(want, 4);
      }
    }
  });

  for (const labels of ['int64', 'string'] as const) {
    it(`LinearClassifier, 3 classes, ${labels} labels, every post_transform`, async () => {
      for (const post of ['NONE', 'LOGISTIC', 'SOFTMAX', 'SOFTMAX_ZERO']) {
        const b = new ModelBuilder({ opsets: ML })
          .input('x', 'float', ['N', 4])
          .mlNode('LinearClassifier', ['x'], ['label', 'scores'], {
            coefficients: attr.floats(floats(12, 3)),
            intercepts: attr.floats([0.1, -0.2, 0.05]),
            ...(labels === 'int64' ? { classlabels_ints: [10, 20, 30] } : { classlabels_strings: ['setosa', 'versicolor', 'virginica'] }),
            multi_class: 1,
            post_transform: post,
          })
          .output('label', labels, ['N'])
          .output('scores', 'float', ['N', 3]);
        for (const n of BATCHES) {
          await compareWithOrt(b.toBytes(), [{ name: 'x', dims: [n, 4], data: randomFloats(n * 4, n, -3, 3) }], undefined, `${post} N=${n}`);
        }
      }
    });
  }

  it('LinearClassifier with one score column and two labels gives [1 - p, p]', async () => {
    for (const post of ['NONE', 'LOGISTIC']) {
      const choices: Record<string, AttrValue>[] = [{ classlabels_ints: [3, 7] }, { classlabels_strings: ['no', 'yes'] }];
      for (const labels of choices) {
        const bytes = new ModelBuilder({ opsets: ML })
          .input('x', 'float', ['N', 2])
          .mlNode('LinearClassifier', ['x'], ['label', 'scores'], {
            coefficients: attr.floats([0.5, -0.25]),
            intercepts: attr.floats([0.1]),
            ...labels,
            post_transform: post,
          })
          .output('label', 'classlabels_ints' in labels ? 'int64' : 'string', ['N'])
          .output('scores', 'float', ['N', 2])
          .toBytes();
        for (const n of BATCHES) await compareWithOrt(bytes, [{ name: 'x', dims: [n, 2], data: randomFloats(n * 2, n, -2, 2) }]);
      }
    }
  });

  it('LinearClassifier on double, int64 and int32 inputs', async () => {
    for (const type of ['double', 'int64', 'int32'] as const) {
      const bytes = new ModelBuilder({ opsets: ML })
        .input('x', type, ['N', 3])
        .mlNode('LinearClassifier', ['x'], ['label', 'scores'], {
          coefficients: attr.floats(floats(9, 5)),
          intercepts: attr.floats([0, 0.5, -0.5]),
          classlabels_ints: [0, 1, 2],
          post_transform: 'SOFTMAX',
        })
        .output('label', 'int64', ['N'])
        .output('scores', 'float', ['N', 3])
        .toBytes();
      for (const n of [1, 7, 129]) {
        const ints = randomInts(n * 3, n, -5, 5);
        const data = type === 'double' ? randomDoubles(n * 3, n) : type === 'int64' ? BigInt64Array.from(ints, BigInt) : Int32Array.from(ints);
        await compareWithOrt(bytes, [{ name: 'x', dims: [n, 3], data }], undefined, type);
      }
    }
  });
});

describe('transforms', () => {
  it('Scaler per feature and with one offset/scale, on float, double and int64', async () => {
    for (const type of ['float', 'double', 'int64'] as const) {
      for (const [offset, scale] of [
        [[0.5, -1, 2], [2, 0.25, -1.5]],
        [[1.5], [0.5]],
      ]) {
        const bytes = new ModelBuilder({ opsets: ML })
          .input('x', type, ['N', 3])
          .mlNode('Scaler', ['x'], ['y'], { offset: attr.floats(offset!), scale: attr.floats(scale!) })
          .output('y', 'float', ['N', 3])
          .toBytes();
        for (const n of BATCHES) {
          const data =
            type === 'float' ? randomFloats(n * 3, n, -10, 10) : type === 'double' ? randomDoubles(n * 3, n, -10, 10) : BigInt64Array.from(randomInts(n * 3, n, -100, 100), BigInt);
          await compareWithOrt(bytes, [{ name: 'x', dims: [n, 3], data }], undefined, `${type} N=${n}`);
        }
      }
    }
  });

  it('Normalizer MAX, L1 and L2, including all-zero rows', async () => {
    for (const norm of ['MAX', 'L1', 'L2']) {
      for (const type of ['float', 'double', 'int64'] as const) {
        const bytes = new ModelBuilder({ opsets: ML })
          .input('x', type, ['N', 4])
          .mlNode('Normalizer', ['x'], ['y'], { norm })
          .output('y', 'float', ['N', 4])
          .toBytes();
        for (const n of BATCHES) {
          const ints = randomInts(n * 4, n, -20, 20);
          const data = type === 'float' ? randomFloats(n * 4, n, -5, 5) : type === 'double' ? randomDoubles(n * 4, n, -5, 5) : BigInt64Array.from(ints, BigInt);
          for (let k = 0; k < 4; k++) (data as Float32Array)[k] = (type === 'int64' ? 0n : 0) as never; // row 0 is all zeros
          await compareWithOrt(bytes, [{ name: 'x', dims: [n, 4], data }], undefined, `${norm} ${type} N=${n}`);
        }
      }
    }
  });

  it('Binarizer', async () => {
    const bytes = new ModelBuilder({ opsets: ML })
      .input('x', 'float', ['N', 3])
      .mlNode('Binarizer', ['x'], ['y'], { threshold: attr.float(0.25) })
      .output('y', 'float', ['N', 3])
      .toBytes();
    for (const n of BATCHES) await compareWithOrt(bytes, [{ name: 'x', dims: [n, 3], data: randomFloats(n * 3, n) }]);
  });

  it('Imputer replaces NaN (float) and a sentinel (int64), per feature or with one value', async () => {
    for (const values of [[1.5, -2, 3], [7]]) {
      const bytes = new ModelBuilder({ opsets: ML })
        .input('x', 'float', ['N', 3])
        .mlNode('Imputer', ['x'], ['y'], { imputed_value_floats: attr.floats(values), replaced_value_float: attr.float(NaN) })
        .output('y', 'float', ['N', 3])
        .toBytes();
      for (const n of BATCHES) {
        const x = randomFloats(n * 3, n);
        for (let i = 0; i < x.length; i += 2) x[i] = NaN;
        await compareWithOrt(bytes, [{ name: 'x', dims: [n, 3], data: x }]);
      }
    }
    const ints = new ModelBuilder({ opsets: ML })
      .input('x', 'int64', ['N', 2])
      .mlNode('Imputer', ['x'], ['y'], { imputed_value_int64s: [100, 200], replaced_value_int64: -1 })
      .output('y', 'int64', ['N', 2])
      .toBytes();
    for (const n of BATCHES) {
      await compareWithOrt(ints, [{ name: 'x', dims: [n, 2], data: BigInt64Array.from(randomInts(n * 2, n, -3, 3), BigInt) }]);
    }
  });
});

describe('encoders', () => {
  it('ArrayFeatureExtractor on float, int64 and string data, constant and input indices', async () => {
    for (const type of ['float', 'int64', 'string'] as const) {
      const bytes = new ModelBuilder({ opsets: ML })
        .input('x', type, ['N', 5])
        .input('idx', 'int64', ['K'])
        .initializer('pick', 'int64', [3], [4, 0, 4])
        .mlNode('ArrayFeatureExtractor', ['x', 'pick'], ['y'])
        .mlNode('ArrayFeatureExtractor', ['x', 'idx'], ['z'])
        .output('y', type, ['N', 3])
        .output('z', type, ['N', 'K'])
        .toBytes();
      for (const n of BATCHES) {
        const ints = randomInts(n * 5, n, -9, 9);
        const data = type === 'float' ? randomFloats(n * 5, n) : type === 'int64' ? BigInt64Array.from(ints, BigInt) : ints.map((v) => `s${v}`);
        await compareWithOrt(bytes, [
          { name: 'x', dims: [n, 5], data },
          { name: 'idx', dims: [2], data: BigInt64Array.of(1n, 3n) },
        ]);
      }
    }
  });

  it('OneHotEncoder for strings, int64 and doubles (unknown categories give zeros)', async () => {
    const strings = new ModelBuilder({ opsets: ML })
      .input('x', 'string', ['N', 1])
      .mlNode('OneHotEncoder', ['x'], ['y'], { cats_strings: ['red', 'green', 'blue'] })
      .output('y', 'float', ['N', 1, 3])
      .toBytes();
    const ints = new ModelBuilder({ opsets: ML })
      .input('x', 'int64', ['N'])
      .mlNode('OneHotEncoder', ['x'], ['y'], { cats_int64s: [1, 5, 9, 2], zeros: 1 })
      .output('y', 'float', ['N', 4])
      .toBytes();
    const doubles = new ModelBuilder({ opsets: ML })
      .input('x', 'double', ['N', 2])
      .mlNode('OneHotEncoder', ['x'], ['y'], { cats_int64s: [0, 1, 2] })
      .output('y', 'float', ['N', 2, 3])
      .toBytes();
    const colours = ['red', 'green', 'blue', 'mauve'];
    for (const n of BATCHES) {
      await compareWithOrt(strings, [{ name: 'x', dims: [n, 1], data: randomInts(n, n, 0, 3).map((k) => colours[k]!) }]);
      await compareWithOrt(ints, [{ name: 'x', dims: [n], data: BigInt64Array.from(randomInts(n, n, 0, 10), BigInt) }]);
      await compareWithOrt(doubles, [{ name: 'x', dims: [n, 2], data: randomDoubles(n * 2, n, 0, 3.5) }]);
    }
  });

  it('LabelEncoder 2: string -> int64, int64 -> string, float -> float, with defaults', async () => {
    const ml2 = { '': 13, 'ai.onnx.ml': 2 };
    const s2i = new ModelBuilder({ opsets: ml2 })
      .input('x', 'string', ['N'])
      .mlNode('LabelEncoder', ['x'], ['y'], { keys_strings: ['a', 'b', 'c'], values_int64s: [10, 20, 30], default_int64: -7 })
      .output('y', 'int64', ['N'])
      .toBytes();
    const i2s = new ModelBuilder({ opsets: ml2 })
      .input('x', 'int64', ['N', 2])
      .mlNode('LabelEncoder', ['x'], ['y'], { keys_int64s: [1, 2, 3], values_strings: ['one', 'two', 'three'], default_string: '?' })
      .output('y', 'string', ['N', 2])
      .toBytes();
    const f2f = new ModelBuilder({ opsets: ml2 })
      .input('x', 'float', ['N'])
      .mlNode('LabelEncoder', ['x'], ['y'], { keys_floats: attr.floats([0.5, 1.5, -2]), values_floats: attr.floats([5, 15, -20]), default_float: attr.float(99) })
      .output('y', 'float', ['N'])
      .toBytes();
    for (const n of BATCHES) {
      await compareWithOrt(s2i, [{ name: 'x', dims: [n], data: randomInts(n, n, 0, 3).map((k) => 'abcd'[k]!) }]);
      await compareWithOrt(i2s, [{ name: 'x', dims: [n, 2], data: BigInt64Array.from(randomInts(n * 2, n, 0, 4), BigInt) }]);
      await compareWithOrt(f2f, [{ name: 'x', dims: [n], data: Float32Array.from(randomInts(n, n, 0, 3), (k) => [0.5, 1.5, -2, 3][k]!) }]);
    }
  });

  it('LabelEncoder 4 with tensor keys and values (string -> string, int64 -> double, NaN keys)', async () => {
    const ml4 = { '': 13, 'ai.onnx.ml': 4 };
    const s2s = new ModelBuilder({ opsets: ml4 })
      .input('x', 'string', ['N'])
      .mlNode('LabelEncoder', ['x'], ['y'], {
        keys_tensor: attr.tensor({ type: 'string', dims: [2], values: ['x', 'y'] }),
        values_tensor: attr.tensor({ type: 'string', dims: [2], values: ['ex', 'why'] }),
        default_tensor: attr.tensor({ type: 'string', dims: [1], values: ['none'] }),
      })
      .output('y', 'string', ['N'])
      .toBytes();
    const i2d = new ModelBuilder({ opsets: ml4 })
      .input('x', 'int64', ['N'])
      .mlNode('LabelEncoder', ['x'], ['y'], {
        keys_tensor: attr.tensor({ type: 'int64', dims: [3], values: [4, 5, 6] }),
        values_tensor: attr.tensor({ type: 'double', dims: [3], values: [0.4, 0.5, 0.6] }),
      })
      .output('y', 'double', ['N'])
      .toBytes();
    const nan = new ModelBuilder({ opsets: ml4 })
      .input('x', 'float', ['N'])
      .mlNode('LabelEncoder', ['x'], ['y'], {
        keys_tensor: attr.tensor({ type: 'float', dims: [2], values: [NaN, 1] }),
        values_tensor: attr.tensor({ type: 'int64', dims: [2], values: [100, 200] }),
        default_tensor: attr.tensor({ type: 'int64', dims: [1], values: [-1] }),
      })
      .output('y', 'int64', ['N'])
      .toBytes();
    for (const n of BATCHES) {
      await compareWithOrt(s2s, [{ name: 'x', dims: [n], data: randomInts(n, n, 0, 2).map((k) => 'xyz'[k]!) }]);
      await compareWithOrt(i2d, [{ name: 'x', dims: [n], data: BigInt64Array.from(randomInts(n, n, 3, 7), BigInt) }]);
      await compareWithOrt(nan, [{ name: 'x', dims: [n], data: Float32Array.from(randomInts(n, n, 0, 2), (k) => [NaN, 1, 2][k]!) }]);
    }
  });
});

describe('ZipMap', () => {
  // Scaler -> LinearClassifier -> Normalizer -> ZipMap, the shape of sklearn-onnx's pipelines.
  const pipeline = (labels: { classlabels_ints: number[] } | { classlabels_strings: string[] }) => {
    const zip = 'classlabels_ints' in labels ? { classlabels_int64s: labels.classlabels_ints } : labels;
    const keyType = 'classlabels_ints' in labels ? 'int64' : 'string';
    return new ModelBuilder({ opsets: ML })
      .input('x', 'float', ['N', 3])
      .mlNode('Scaler', ['x'], ['scaled'], { offset: attr.floats([1, 2, 3]), scale: attr.floats([0.5, 0.25, 2]) })
      .mlNode('LinearClassifier', ['scaled'], ['label', 'prob'], {
        coefficients: attr.floats(floats(9, 11)),
        intercepts: attr.floats([0.2, 0, -0.2]),
        ...labels,
        post_transform: 'LOGISTIC',
      })
      .mlNode('Normalizer', ['prob'], ['prob_n'], { norm: 'L1' })
      .mlNode('ZipMap', ['prob_n'], ['probabilities'], zip)
      .output('label', keyType, ['N'])
      .sequenceMapOutput('probabilities', keyType)
      .toBytes();
  };

  it('returns the probability tensor with int64 map keys', async () => {
    const bytes = pipeline({ classlabels_ints: [3, 1, 2] });
    for (const n of BATCHES) {
      const outs = await compareWithOrt(bytes, [{ name: 'x', dims: [n, 3], data: randomFloats(n * 3, n, -3, 3) }]);
      const zip = outs[1]!;
      expect(zip.name).toBe('probabilities');
      expect(zip.dataType).toBe('float');
      expect(zip.dims).toEqual([n, 3]);
      expect(zip.mapKeys).toEqual(BigInt64Array.of(3n, 1n, 2n));
      for (let r = 0; r < n; r++) {
        const row = (zip.data as Float32Array).subarray(r * 3, r * 3 + 3);
        expect(row.reduce((a, b) => a + b, 0)).toBeCloseTo(1, 5);
      }
      expect(outs[0]!.mapKeys).toBeUndefined();
    }
  });

  it('returns string map keys', async () => {
    const bytes = pipeline({ classlabels_strings: ['cat', 'dog', 'emu'] });
    const outs = await compareWithOrt(bytes, [{ name: 'x', dims: [7, 3], data: randomFloats(21, 4, -3, 3) }], FLOAT_TOL);
    expect(outs[1]!.mapKeys).toEqual(['cat', 'dog', 'emu']);
  });
});
