// The ai.onnx operators of the native tabular executor against onnxruntime-node, on small models
// built here and seeded random inputs at batch sizes 1, 7, 129 and 1000. Tolerance for float
// results: |ours - onnxruntime| <= 1e-5 + 1e-4 * |onnxruntime|; integers, booleans and strings
// exactly.
import { describe, expect, it } from 'vitest';

import { attr, mlpModel, ModelBuilder } from './helpers/onnx-builder.js';
import { randomDoubles, randomFloats, randomInts } from './helpers/tabular-data.js';
import { BATCHES, compareWithOrt, compileBytes } from './helpers/tabular-executor.js';

const f32 = (n: number, seed: number, lo = -2, hi = 2) => Array.from(randomFloats(n, seed, lo, hi));

describe('elementwise', () => {
  // x [N, 4], y [N, 1]: every broadcasting shape the four binary ops meet in tabular graphs.
  const broadcastModel = (type: 'float' | 'double') =>
    new ModelBuilder({ opsets: { '': 13 } })
      .input('x', type, ['N', 4])
      .input('y', type, ['N', 1])
      .initializer('b4', type, [4], f32(4, 1))
      .initializer('b14', type, [1, 4], f32(4, 2))
      .initializer('s', type, [], [1.5])
      .initializer('c31', type, [3, 1], f32(3, 3))
      .initializer('axes1', 'int64', [1], [1])
      .node('Add', ['x', 'b4'], ['a'])
      .node('Sub', ['b14', 'a'], ['b'])
      .node('Mul', ['b', 'y'], ['c'])
      .node('Div', ['c', 's'], ['d'])
      .node('Unsqueeze', ['d', 'axes1'], ['e'])
      .node('Add', ['e', 'c31'], ['f'])
      .node('Div', ['f', 'c31'], ['g'])
      .node('Mul', ['x', 'x'], ['h'])
      .output('d', type, ['N', 4])
      .output('g', type, ['N', 3, 4])
      .output('h', type, ['N', 4]);

  for (const type of ['float', 'double'] as const) {
    it(`Add, Sub, Mul, Div broadcast like numpy (${type})`, async () => {
      const bytes = broadcastModel(type).toBytes();
      for (const n of BATCHES) {
        const make = type === 'float' ? randomFloats : randomDoubles;
        await compareWithOrt(
          bytes,
          [
            { name: 'x', dims: [n, 4], data: make(n * 4, 10 + n) },
            { name: 'y', dims: [n, 1], data: make(n, 20 + n, 0.5, 3) },
          ],
          undefined,
          `${type} N=${n}`,
        );
      }
    });
  }

  it('integer arithmetic (int64 and int32) with broadcasting, wrapping and truncating division', async () => {
    for (const type of ['int64', 'int32'] as const) {
      const bytes = new ModelBuilder({ opsets: { '': 14 } })
        .input('x', type, ['N', 3])
        .input('y', type, ['N', 3])
        .initializer('k', type, [3], [7, -3, 2])
        .node('Add', ['x', 'k'], ['a'])
        .node('Sub', ['a', 'y'], ['b'])
        .node('Mul', ['b', 'k'], ['c'])
        .node('Div', ['c', 'k'], ['d'])
        .node('Div', ['x', 'y'], ['q'])
        .output('c', type, ['N', 3])
        .output('d', type, ['N', 3])
        .output('q', type, ['N', 3])
        .toBytes();
      for (const n of [1, 7, 129]) {
        const xs = randomInts(n * 3, n, -1000, 1000);
        const ys = randomInts(n * 3, n + 5, 1, 50).map((v, i) => (i % 2 ? -v : v));
        const data = (v: number[]) => (type === 'int64' ? BigInt64Array.from(v, BigInt) : Int32Array.from(v));
        await compareWithOrt(bytes, [
          { name: 'x', dims: [n, 3], data: data(xs) },
          { name: 'y', dims: [n, 3], data: data(ys) },
        ]);
      }
    }
  });

  it('Relu, LeakyRelu, Sigmoid, Tanh, Exp, Log, Identity and Clip (float and double)', async () => {
    for (const type of ['float', 'double'] as const) {
      // onnxruntime has LeakyRelu for float only: the double model uses Relu there.
      const b = new ModelBuilder({ opsets: { '': 13 } })
        .input('x', type, ['N', 5])
        .initializer('lo', type, [], [-0.5])
        .initializer('hi', type, [], [0.75])
        .node('Relu', ['x'], ['relu']);
      const bytes = (type === 'float' ? b.node('LeakyRelu', ['x'], ['leaky'], { alpha: attr.float(0.2) }) : b.node('Relu', ['x'], ['leaky']))
        .node('Sigmoid', ['x'], ['sig'])
        .node('Tanh', ['x'], ['tanh'])
        .node('Exp', ['x'], ['exp'])
        .node('Log', ['exp'], ['log'])
        .node('Identity', ['log'], ['id'])
        .node('Clip', ['x', 'lo', 'hi'], ['clip'])
        .node('Clip', ['x', '', 'hi'], ['clip_hi'])
        .node('Clip', ['x'], ['clip_none'])
        .output('relu', type, ['N', 5])
        .output('leaky', type, ['N', 5])
        .output('sig', type, ['N', 5])
        .output('tanh', type, ['N', 5])
        .output('exp', type, ['N', 5])
        .output('id', type, ['N', 5])
        .output('clip', type, ['N', 5])
        .output('clip_hi', type, ['N', 5])
        .output('clip_none', type, ['N', 5])
        .toBytes();
      for (const n of BATCHES) {
        const data = type === 'float' ? randomFloats(n * 5, n, -8, 8) : randomDoubles(n * 5, n, -8, 8);
        await compareWithOrt(bytes, [{ name: 'x', dims: [n, 5], data }], undefined, `${type} N=${n}`);
      }
    }
  });

  it('Clip 6 (bounds as attributes) and LeakyRelu default alpha', async () => {
    const bytes = new ModelBuilder({ opsets: { '': 6 } })
      .input('x', 'float', ['N', 3])
      .node('Clip', ['x'], ['c'], { min: attr.float(-1), max: attr.float(1.25) })
      .node('LeakyRelu', ['x'], ['l'])
      .output('c', 'float', ['N', 3])
      .output('l', 'float', ['N', 3])
      .toBytes();
    for (const n of BATCHES) await compareWithOrt(bytes, [{ name: 'x', dims: [n, 3], data: randomFloats(n * 3, n, -3, 3) }]);
  });

  it('Cast between numbers, booleans and strings', async () => {
    const bytes = new ModelBuilder({ opsets: { '': 13 } })
      .input('x', 'float', ['N', 4])
      .input('s', 'string', ['N'])
      .input('i', 'int64', ['N'])
      .node('Cast', ['x'], ['to_i32'], { to: 6 })
      .node('Cast', ['x'], ['to_i64'], { to: 7 })
      .node('Cast', ['x'], ['to_f64'], { to: 11 })
      .node('Cast', ['x'], ['to_bool'], { to: 9 })
      .node('Cast', ['x'], ['to_str'], { to: 8 })
      .node('Cast', ['to_f64'], ['back_f32'], { to: 1 })
      .node('Cast', ['s'], ['s_f32'], { to: 1 })
      .node('Cast', ['i'], ['i_f32'], { to: 1 })
      .node('Cast', ['i'], ['i_str'], { to: 8 })
      .node('Cast', ['to_bool'], ['bool_f'], { to: 1 })
      .output('to_i32', 'int32', ['N', 4])
      .output('to_i64', 'int64', ['N', 4])
      .output('to_f64', 'double', ['N', 4])
      .output('to_bool', 'bool', ['N', 4])
      .output('to_str', 'string', ['N', 4])
      .output('back_f32', 'float', ['N', 4])
      .output('s_f32', 'float', ['N'])
      .output('i_f32', 'float', ['N'])
      .output('i_str', 'string', ['N'])
      .output('bool_f', 'float', ['N'])
      .toBytes();
    for (const n of BATCHES) {
      const x = randomFloats(n * 4, n, -300, 300);
      x[0] = 0;
      const ints = randomInts(n, n + 1, -1e6, 1e6);
      await compareWithOrt(bytes, [
        { name: 'x', dims: [n, 4], data: x },
        { name: 's', dims: [n], data: ints.map((v) => (v / 8).toString()) },
        { name: 'i', dims: [n], data: BigInt64Array.from(ints, BigInt) },
      ]);
    }
  });
});

describe('Gemm and MatMul', () => {
  it('Gemm with transA/transB, alpha, beta and every C broadcast (float and double)', async () => {
    for (const type of ['float', 'double'] as const) {
      const bytes = new ModelBuilder({ opsets: { '': 13 } })
        .input('x', type, ['N', 5])
        .input('xt', type, [5, 'N'])
        .initializer('W', type, [3, 5], f32(15, 1))
        .initializer('Wt', type, [5, 3], f32(15, 2))
        .initializer('c3', type, [3], f32(3, 3))
        .initializer('c13', type, [1, 3], f32(3, 4))
        .initializer('c1', type, [], [0.25])
        .node('Gemm', ['x', 'W', 'c3'], ['y1'], { transB: 1 })
        .node('Gemm', ['x', 'Wt', 'c13'], ['y2'], { alpha: attr.float(0.5), beta: attr.float(2) })
        .node('Gemm', ['xt', 'Wt', 'c1'], ['y3'], { transA: 1, beta: attr.float(-1) })
        .node('Gemm', ['xt', 'W'], ['y4'], { transA: 1, transB: 1, alpha: attr.float(1.5) })
        .node('Gemm', ['y1', 'y1'], ['y5'], { transB: 1 })
        .output('y1', type, ['N', 3])
        .output('y2', type, ['N', 3])
        .output('y3', type, ['N', 3])
        .output('y4', type, ['N', 3])
        .output('y5', type, ['N', 'N'])
        .toBytes();
      for (const n of BATCHES) {
        const make = type === 'float' ? randomFloats : randomDoubles;
        const x = make(n * 5, n);
        const xt = new (type === 'float' ? Float32Array : Float64Array)(n * 5);
        for (let i = 0; i < n; i++) for (let k = 0; k < 5; k++) xt[k * n + i] = x[i * 5 + k]!;
        await compareWithOrt(
          bytes,
          [
            { name: 'x', dims: [n, 5], data: x },
            { name: 'xt', dims: [5, n], data: xt },
          ],
          undefined,
          `${type} N=${n}`,
        );
      }
    }
  });

  it('Gemm with a full [M, N] C', async () => {
    const bytes = new ModelBuilder({ opsets: { '': 11 } })
      .input('a', 'float', [4, 6])
      .input('b', 'float', [6, 'K'])
      .input('c', 'float', [4, 'K'])
      .node('Gemm', ['a', 'b', 'c'], ['y'], { beta: attr.float(0.5) })
      .output('y', 'float', [4, 'K'])
      .toBytes();
    for (const k of [1, 7, 129]) {
      await compareWithOrt(bytes, [
        { name: 'a', dims: [4, 6], data: randomFloats(24, k) },
        { name: 'b', dims: [6, k], data: randomFloats(6 * k, k + 1) },
        { name: 'c', dims: [4, k], data: randomFloats(4 * k, k + 2) },
      ]);
    }
  });

  it('MatMul: 2-D, batched with broadcasting, and 1-D operands (float, double, int64)', async () => {
    for (const type of ['float', 'double', 'int64'] as const) {
      const init = (name: string, dims: number[], seed: number) =>
        [name, type, dims, type === 'int64' ? randomInts(dims.reduce((a, b) => a * b, 1), seed, -9, 9) : f32(dims.reduce((a, b) => a * b, 1), seed)] as const;
      const bytes = new ModelBuilder({ opsets: { '': 13 } })
        .input('x', type, ['N', 4])
        .input('x3', type, [2, 'N', 4])
        .initializer(...init('W', [4, 3], 1))
        .initializer(...init('W3', [2, 4, 3], 2))
        .initializer(...init('v4', [4], 3))
        .node('MatMul', ['x', 'W'], ['y'])
        .node('MatMul', ['x3', 'W'], ['y3'])
        .node('MatMul', ['x3', 'W3'], ['y33'])
        .node('MatMul', ['x', 'v4'], ['yv'])
        .node('MatMul', ['v4', 'W'], ['vw'])
        .output('y', type, ['N', 3])
        .output('y3', type, [2, 'N', 3])
        .output('y33', type, [2, 'N', 3])
        .output('yv', type, ['N'])
        .output('vw', type, [3])
        .toBytes();
      for (const n of BATCHES) {
        const data = (len: number, seed: number) =>
          type === 'float' ? randomFloats(len, seed) : type === 'double' ? randomDoubles(len, seed) : BigInt64Array.from(randomInts(len, seed, -9, 9), BigInt);
        await compareWithOrt(
          bytes,
          [
            { name: 'x', dims: [n, 4], data: data(n * 4, n) },
            { name: 'x3', dims: [2, n, 4], data: data(2 * n * 4, n + 1) },
          ],
          undefined,
          `${type} N=${n}`,
        );
      }
    }
  });

  it('MatMul broadcasts batch dimensions of both operands', async () => {
    const bytes = new ModelBuilder({ opsets: { '': 13 } })
      .input('a', 'float', [2, 1, 'M', 4])
      .input('b', 'float', [3, 4, 2])
      .node('MatMul', ['a', 'b'], ['y'])
      .output('y', 'float', [2, 3, 'M', 2])
      .toBytes();
    for (const m of [1, 5]) {
      await compareWithOrt(bytes, [
        { name: 'a', dims: [2, 1, m, 4], data: randomFloats(8 * m, m) },
        { name: 'b', dims: [3, 4, 2], data: randomFloats(24, 9) },
      ]);
    }
  });

  it('an MLP (Gemm + Relu + Gemm + Softmax) at opsets 7 and 13', async () => {
    for (const opset of [7, 13]) {
      const bytes = mlpModel(opset).toBytes();
      for (const n of BATCHES) await compareWithOrt(bytes, [{ name: 'x', dims: [n, 4], data: randomFloats(n * 4, n) }]);
    }
  });
});

describe('shape operators', () => {
  it('Flatten, Reshape (0, -1, allowzero), Squeeze, Unsqueeze, Transpose, Concat', async () => {
    const model = new ModelBuilder({ opsets: { '': 14 } })
      .input('x', 'float', ['N', 2, 3, 2])
      .input('y', 'float', ['N', 5])
      .initializer('shape_a', 'int64', [3], [0, -1, 2])
      .initializer('shape_b', 'int64', [2], [-1, 4])
      .initializer('shape_z', 'int64', [3], [0, 0, -1])
      .initializer('sq_axes', 'int64', [1], [-1])
      .initializer('unsq_axes', 'int64', [2], [0, -1])
      .node('Flatten', ['x'], ['flat2'], { axis: 2 })
      .node('Flatten', ['x'], ['flat0'], { axis: 0 })
      .node('Flatten', ['x'], ['flatneg'], { axis: -1 })
      .node('Reshape', ['x', 'shape_a'], ['r_a'])
      .node('Reshape', ['x', 'shape_b'], ['r_b'], { allowzero: 1 })
      .node('Reshape', ['x', 'shape_z'], ['r_z'])
      .node('Transpose', ['x'], ['t_default'])
      .node('Transpose', ['x'], ['t_perm'], { perm: [0, 2, 3, 1] })
      .node('Unsqueeze', ['y', 'unsq_axes'], ['u'])
      .node('Squeeze', ['u', 'sq_axes'], ['s1'])
      .node('Flatten', ['x'], ['flat1'])
      .node('Concat', ['y', 'flat1', 'y'], ['cat'], { axis: 1 })
      .node('Concat', ['t_perm', 't_perm'], ['cat_neg'], { axis: -1 })
      .output('flat2', 'float', ['N', 6])
      .output('flat0', 'float', [1, null])
      .output('flatneg', 'float', [null, 2])
      .output('r_a', 'float', ['N', 3, 2])
      .output('r_b', 'float', [null, 4])
      .output('r_z', 'float', ['N', 2, 6])
      .output('t_default', 'float', [2, 3, 2, 'N'])
      .output('t_perm', 'float', ['N', 3, 2, 2])
      .output('s1', 'float', [1, 'N', 5])
      .output('cat', 'float', ['N', 22])
      .output('cat_neg', 'float', ['N', 3, 2, 4])
      .toBytes();
    for (const n of [1, 2, 7, 130]) {
      await compareWithOrt(model, [
        { name: 'x', dims: [n, 2, 3, 2], data: randomFloats(n * 12, n) },
        { name: 'y', dims: [n, 5], data: randomFloats(n * 5, n + 1) },
      ]);
    }
  });

  it('Squeeze without axes, opset-11 Squeeze/Unsqueeze attributes, Reshape 5 with an empty dimension', async () => {
    const bytes = new ModelBuilder({ opsets: { '': 11 } })
      .input('x', 'float', [1, 'N', 1, 3])
      .node('Squeeze', ['x'], ['s'])
      .node('Squeeze', ['x'], ['s0'], { axes: [0, -2] })
      .node('Unsqueeze', ['s0'], ['u'], { axes: [1, 3] })
      .output('s', 'float', null as never)
      .output('s0', 'float', ['N', 3])
      .output('u', 'float', ['N', 1, 3, 1])
      .toBytes();
    for (const n of [2, 7]) await compareWithOrt(bytes, [{ name: 'x', dims: [1, n, 1, 3], data: randomFloats(n * 3, n) }]);
  });

  it('Concat and Transpose of strings and int64', async () => {
    const bytes = new ModelBuilder({ opsets: { '': 13 } })
      .input('a', 'string', ['N', 2])
      .input('b', 'string', ['N', 1])
      .input('i', 'int64', ['N', 3])
      .node('Concat', ['a', 'b'], ['ab'], { axis: 1 })
      .node('Transpose', ['ab'], ['abt'])
      .node('Transpose', ['i'], ['it'], { perm: [1, 0] })
      .output('ab', 'string', ['N', 3])
      .output('abt', 'string', [3, 'N'])
      .output('it', 'int64', [3, 'N'])
      .toBytes();
    for (const n of [1, 7]) {
      await compareWithOrt(bytes, [
        { name: 'a', dims: [n, 2], data: Array.from({ length: n * 2 }, (_, k) => `a${k}`) },
        { name: 'b', dims: [n, 1], data: Array.from({ length: n }, (_, k) => `b${k}é`) },
        { name: 'i', dims: [n, 3], data: BigInt64Array.from(randomInts(n * 3, n, -5, 5), BigInt) },
      ]);
    }
  });
});

describe('Softmax and BatchNormalization', () => {
  it('Softmax 13 along one axis, Softmax 1 and 11 over the flattened trailing block', async () => {
    for (const [opset, axis] of [
      [13, -1],
      [13, 1],
      [11, 1],
      [11, 2],
      [1, 1],
    ] as const) {
      const bytes = new ModelBuilder({ opsets: { '': opset } })
        .input('x', 'float', ['N', 3, 4])
        .node('Softmax', ['x'], ['y'], { axis })
        .output('y', 'float', ['N', 3, 4])
        .toBytes();
      for (const n of BATCHES) {
        await compareWithOrt(bytes, [{ name: 'x', dims: [n, 3, 4], data: randomFloats(n * 12, n, -10, 10) }], undefined, `opset ${opset} axis ${axis}`);
      }
    }
  });

  it('Softmax on double, default axis', async () => {
    const bytes = new ModelBuilder({ opsets: { '': 13 } })
      .input('x', 'double', ['N', 6])
      .node('Softmax', ['x'], ['y'])
      .output('y', 'double', ['N', 6])
      .toBytes();
    for (const n of BATCHES) await compareWithOrt(bytes, [{ name: 'x', dims: [n, 6], data: randomDoubles(n * 6, n, -30, 30) }]);
  });

  it('BatchNormalization on [N, C] and [N, C, H, W]', async () => {
    for (const opset of [9, 15]) {
      const bytes = new ModelBuilder({ opsets: { '': opset } })
        .input('x', 'float', ['N', 3])
        .input('x4', 'float', ['N', 3, 2, 2])
        .initializer('scale', 'float', [3], [1.5, -0.5, 2])
        .initializer('bias', 'float', [3], [0.1, 0.2, -0.3])
        .initializer('mean', 'float', [3], [0.5, -1, 0])
        .initializer('var', 'float', [3], [0.25, 2, 1e-3])
        .node('BatchNormalization', ['x', 'scale', 'bias', 'mean', 'var'], ['y'])
        .node('BatchNormalization', ['x4', 'scale', 'bias', 'mean', 'var'], ['y4'], { epsilon: attr.float(1e-3) })
        .output('y', 'float', ['N', 3])
        .output('y4', 'float', ['N', 3, 2, 2])
        .toBytes();
      for (const n of BATCHES) {
        await compareWithOrt(bytes, [
          { name: 'x', dims: [n, 3], data: randomFloats(n * 3, n) },
          { name: 'x4', dims: [n, 3, 2, 2], data: randomFloats(n * 12, n + 1) },
        ]);
      }
    }
  });
});

describe('in-place execution', () => {
  it('keeps inputs and shared values intact when a later node could write in place', () => {
    // relu(x) is read twice (by Add and by the output), so Add must not overwrite it.
    const bytes = new ModelBuilder({ opsets: { '': 13 } })
      .input('x', 'float', ['N', 3])
      .node('Relu', ['x'], ['r'])
      .node('Add', ['r', 'r'], ['s'])
      .node('Sigmoid', ['s'], ['t'])
      .node('Mul', ['t', 'r'], ['u'])
      .output('r', 'float', ['N', 3])
      .output('u', 'float', ['N', 3])
      .toBytes();
    const model = compileBytes(bytes);
    const x = randomFloats(6, 1);
    const copy = x.slice();
    const [r, u] = model.runSync([{ name: 'x', dims: [2, 3], data: x }]);
    expect(x).toEqual(copy);
    const relu = Array.from(copy, (v) => Math.max(v, 0));
    expect(Array.from(r!.data as Float32Array)).toEqual(relu.map((v) => Math.fround(v)));
    const expected = relu.map((v) => v / (1 + Math.exp(-2 * v)));
    Array.from(u!.data as Float32Array).forEach((v, i) => expect(v).toBeCloseTo(expected[i]!, 5));
  });
});
