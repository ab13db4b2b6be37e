// Bad models and bad inputs must come back as clean JavaScript errors naming what is wrong (and,
// for model errors, the node and operator), never crash the process; plus the model object's
// lifecycle: async runs off the JavaScript thread, concurrency, dispose.
import { describe, expect, it } from 'vitest';

import { loadAddon } from '../src/native/addon.js';
import { compileTabularModel } from '../src/tabular/executor/index.js';
import type { NormalizedModel } from '../src/tabular/onnx/types.js';
import { attr, mlpModel, ModelBuilder, stumpRegressorAttrs, treeRegressorModel } from './helpers/onnx-builder.js';
import { compileBytes } from './helpers/tabular-executor.js';
import { normalized, randomFloats } from './helpers/tabular-data.js';
import { rng as rngFor } from './helpers/random.js';

// The addon's argument errors: a TypeError or RangeError with code 'invalid_argument' (native/addon/errors.h).
const invalidType = (message: string) => Object.assign(new TypeError(message), { code: 'invalid_argument' });
const invalidValue = (message: string) => Object.assign(new RangeError(message), { code: 'invalid_argument' });

const mlp = () => compileBytes(mlpModel().toBytes());
const x24 = () => ({ name: 'x', dims: [2, 4], data: randomFloats(8, 1) });

describe('model errors', () => {
  it('a Gemm whose constant shapes do not fit fails at compile time, naming the node', () => {
    const bytes = new ModelBuilder({ opsets: { '': 13 } })
      .input('x', 'float', ['N', 4])
      .initializer('W', 'float', [3, 5], new Array(15).fill(0.5))
      .node('Gemm', ['x', 'W'], ['y'], { transB: 1 }, { name: 'dense' })
      .output('y', 'float', ['N', 3])
      .toBytes();
    expect(() => compileBytes(bytes)).toThrow(
      'node "dense" (operator "Gemm"): A [?, 4] and B [3, 5] (transposed) have different inner dimensions (4 and 5)',
    );
  });

  it('a Gemm whose run-time shapes do not fit fails at run time, naming the node', async () => {
    const bytes = new ModelBuilder({ opsets: { '': 13 } })
      .input('a', 'float', ['M', 'K'])
      .input('b', 'float', ['K2', 'N'])
      .node('Gemm', ['a', 'b'], ['y'], {}, { name: 'gemm' })
      .output('y', 'float', ['M', 'N'])
      .toBytes();
    const model = compileBytes(bytes);
    const inputs = [
      { name: 'a', dims: [2, 3], data: randomFloats(6, 1) },
      { name: 'b', dims: [4, 2], data: randomFloats(8, 2) },
    ];
    const message = 'node "gemm" (operator "Gemm"): A [2, 3] and B [4, 2] have different inner dimensions (3 and 4)';
    expect(() => model.runSync(inputs)).toThrow(message);
    await expect(model.run(inputs)).rejects.toThrow(message);
  });

  it('broadcasting and reshaping mismatches are compile errors when static, run errors otherwise', () => {
    expect(() =>
      compileBytes(
        new ModelBuilder({ opsets: { '': 13 } })
          .input('x', 'float', ['N', 3])
          .input('y', 'float', ['N', 2])
          .node('Add', ['x', 'y'], ['s'], {}, { name: 'add' })
          .output('s', 'float', null as never)
          .toBytes(),
      ),
    ).toThrow('node "add" (operator "Add"): shapes [?, 3] and [?, 2] cannot be broadcast together');
    const model = compileBytes(
      new ModelBuilder({ opsets: { '': 13 } })
        .input('x', 'float', ['N', 3])
        .input('y', 'float', ['M', 'K'])
        .initializer('shape', 'int64', [2], [-1, 4])
        .node('Add', ['x', 'y'], ['s'], {}, { name: 'add' })
        .node('Reshape', ['x', 'shape'], ['r'], {}, { name: 'reshape' })
        .output('s', 'float', null as never)
        .output('r', 'float', [null, 4])
        .toBytes(),
    );
    expect(() =>
      model.runSync([
        { name: 'x', dims: [2, 3], data: randomFloats(6, 1) },
        { name: 'y', dims: [2, 2], data: randomFloats(4, 1) },
      ]),
    ).toThrow('node "add" (operator "Add"): shapes [2, 3] and [2, 2] cannot be broadcast together');
    expect(() =>
      model.runSync([
        { name: 'x', dims: [3, 3], data: randomFloats(9, 1) },
        { name: 'y', dims: [1, 1], data: randomFloats(1, 1) },
      ]),
    ).toThrow('node "reshape" (operator "Reshape"): cannot reshape an input of shape [3, 3] (9 elements) to [-1, 4]');
  });

  it('constant operands are checked at compile time (Reshape shape, integer divisor, feature indices)', () => {
    const reshape = new ModelBuilder({ opsets: { '': 13 } })
      .input('x', 'float', [2, 3])
      .initializer('shape', 'int64', [2], [4, -1])
      .node('Reshape', ['x', 'shape'], ['y'], {}, { name: 'reshape' })
      .output('y', 'float', [4, null])
      .toBytes();
    expect(() => compileBytes(reshape)).toThrow(
      'node "reshape" (operator "Reshape"): cannot reshape an input of shape [2, 3] (6 elements) to [4, -1]',
    );
    const div = new ModelBuilder({ opsets: { '': 13 } })
      .input('x', 'int32', ['N', 2])
      .initializer('d', 'int32', [2], [3, 0])
      .node('Div', ['x', 'd'], ['y'], {}, { name: 'div' })
      .output('y', 'int32', ['N', 2])
      .toBytes();
    expect(() => compileBytes(div)).toThrow('node "div" (operator "Div"): integer division by zero (the divisor is a constant holding 0)');
    const afe = new ModelBuilder({ opsets: { '': 13, 'ai.onnx.ml': 1 } })
      .input('x', 'float', ['N', 3])
      .initializer('i', 'int64', [2], [0, 3])
      .mlNode('ArrayFeatureExtractor', ['x', 'i'], ['y'], {}, 'afe')
      .output('y', 'float', ['N', 2])
      .toBytes();
    expect(() => compileBytes(afe)).toThrow('node "afe" (operator "ai.onnx.ml.ArrayFeatureExtractor"): index 3 is out of range for 3 features');
  });

  it('refuses element types an operator does not take, at compile time', () => {
    const bytes = new ModelBuilder({ opsets: { '': 13 } })
      .input('s', 'string', ['N', 2])
      .node('Relu', ['s'], ['y'], {}, { name: 'relu' })
      .output('y', 'string', ['N', 2])
      .toBytes();
    expect(() => compileBytes(bytes)).toThrow(
      'node "relu" (operator "Relu"): input 0 has element type string; expected float, double, int8, int16, int32, int64',
    );
    const mixed = new ModelBuilder({ opsets: { '': 13 } })
      .input('a', 'float', ['N'])
      .input('b', 'double', ['N'])
      .node('Add', ['a', 'b'], ['y'], {}, { name: 'add' })
      .output('y', 'float', ['N'])
      .toBytes();
    expect(() => compileBytes(mixed)).toThrow('node "add" (operator "Add"): inputs have different element types (float and double)');
  });

  it('tree ensembles with dangling children, cycles or too few features are refused', () => {
    const tree = (attrs: Record<string, unknown>, width = 2) =>
      new ModelBuilder({ opsets: { '': 13, 'ai.onnx.ml': 3 } })
        .input('x', 'float', ['N', width])
        .mlNode(
          'TreeEnsembleRegressor',
          ['x'],
          ['y'],
          { ...stumpRegressorAttrs(), ...attrs } as never,
          'trees',
        )
        .output('y', 'float', ['N', 1])
        .toBytes();
    expect(() => compileBytes(tree({ nodes_falsenodeids: [7, 0, 0] }))).toThrow(
      'node "trees" (operator "ai.onnx.ml.TreeEnsembleRegressor"): node 0 of tree 0 has the false child 7, which does not exist',
    );
    expect(() =>
      compileBytes(tree({ nodes_modes: ['BRANCH_LEQ', 'BRANCH_LEQ', 'LEAF'], nodes_truenodeids: [1, 0, 0], nodes_falsenodeids: [2, 2, 0] })),
    ).toThrow('node "trees" (operator "ai.onnx.ml.TreeEnsembleRegressor"): a tree has a cycle');
    expect(() => compileBytes(tree({ nodes_featureids: [5, 0, 0] }))).toThrow(
      'node "trees" (operator "ai.onnx.ml.TreeEnsembleRegressor"): a tree reads feature 5 but the input has 2 features',
    );
    // With the width unknown until run time, the same check runs then.
    const open = compileBytes(
      new ModelBuilder({ opsets: { '': 13, 'ai.onnx.ml': 3 } })
        .input('x', 'float', ['N', null])
        .mlNode('TreeEnsembleRegressor', ['x'], ['y'], stumpRegressorAttrs(3))
        .output('y', 'float', ['N', 1])
        .toBytes(),
    );
    expect(() => open.runSync([{ name: 'x', dims: [1, 2], data: Float32Array.of(1, 2) }])).toThrow(
      'a tree reads feature 3 but the input has 2 features',
    );
  });

  it('run-time data errors: Binarizer NaN, integer division by zero, OneHotEncoder zeros = 0', () => {
    const ml = { '': 13, 'ai.onnx.ml': 1 };
    const bin = compileBytes(
      new ModelBuilder({ opsets: ml }).input('x', 'float', ['N']).mlNode('Binarizer', ['x'], ['y'], {}, 'bin').output('y', 'float', ['N']).toBytes(),
    );
    expect(() => bin.runSync([{ name: 'x', dims: [3], data: Float32Array.of(1, NaN, 2) }])).toThrow(
      'node "bin" (operator "ai.onnx.ml.Binarizer"): input element 1 is NaN',
    );
    const div = compileBytes(
      new ModelBuilder({ opsets: { '': 13 } })
        .input('a', 'int64', ['N'])
        .input('b', 'int64', ['N'])
        .node('Div', ['a', 'b'], ['y'], {}, { name: 'div' })
        .output('y', 'int64', ['N'])
        .toBytes(),
    );
    expect(() =>
      div.runSync([
        { name: 'a', dims: [2], data: BigInt64Array.of(1n, 2n) },
        { name: 'b', dims: [2], data: BigInt64Array.of(1n, 0n) },
      ]),
    ).toThrow('node "div" (operator "Div"): integer division by zero');
    const ohe = compileBytes(
      new ModelBuilder({ opsets: ml })
        .input('x', 'string', ['N'])
        .mlNode('OneHotEncoder', ['x'], ['y'], { cats_strings: ['a', 'b'], zeros: 0 }, 'ohe')
        .output('y', 'float', ['N', 2])
        .toBytes(),
    );
    expect(() => ohe.runSync([{ name: 'x', dims: [2], data: ['a', 'z'] }])).toThrow(
      'node "ohe" (operator "ai.onnx.ml.OneHotEncoder"): input element 1 ("z") is not a category and zeros = 0',
    );
  });

  it('operators outside the executor and graphs with dangling references are refused', () => {
    const base = normalized(mlpModel().toBytes());
    const withNode = (node: Record<string, unknown>): NormalizedModel => ({
      ...base,
      graph: { ...base.graph, nodes: [...base.graph.nodes, node as never] },
    });
    expect(() =>
      compileTabularModel(withNode({ name: 'topk', opType: 'TopK', domain: '', version: 11, inputs: ['probs'], outputs: ['t'], attributes: {} })),
    ).toThrow('node "topk" (operator "TopK") is not supported by the executor');
    expect(() =>
      compileTabularModel(withNode({ name: 'late', opType: 'Relu', domain: '', version: 14, inputs: ['nowhere'], outputs: ['t'], attributes: {} })),
    ).toThrow('node "late" (operator "Relu") reads "nowhere", which no earlier node, graph input or initializer defines');
    expect(() =>
      compileTabularModel({ ...base, graph: { ...base.graph, outputs: [{ name: 'ghost', kind: 'tensor', elemType: 'float', shape: null }] } }),
    ).toThrow('graph output "ghost" is not produced by any node, input or initializer');
  });

  it('a malformed model object is a TypeError that says where', () => {
    const base = normalized(mlpModel().toBytes());
    expect(() => compileTabularModel(null as never)).toThrow(invalidType('tabularCompile: model must be an object, got null'));
    expect(() => compileTabularModel({ ...base, graph: { ...base.graph, nodes: 'x' as never } })).toThrow(
      invalidType('tabularCompile: model.graph.nodes must be an array, got string'),
    );
    const badAttr = structuredClone(base);
    badAttr.graph.nodes[0]!.attributes.alpha = { type: 'float', value: 'one' as never };
    expect(() => compileTabularModel(badAttr)).toThrow(
      invalidType('tabularCompile: model.graph.nodes[0].attributes.alpha.value must be a number, got string'),
    );
    const badInit = structuredClone(base);
    badInit.graph.initializers[0]!.data = new Float64Array(12);
    expect(() => compileTabularModel(badInit)).toThrow(
      invalidType('tabularCompile: model.graph.initializers[0]: data must be a Float32Array for element type float, got Float64Array'),
    );
    const short = structuredClone(base);
    short.graph.initializers[0]!.data = new Float32Array(5);
    expect(() => compileTabularModel(short)).toThrow(
      invalidValue('tabularCompile: model.graph.initializers[0]: dims [3, 4] hold 12 elements but data has 5'),
    );
    expect(() => loadAddon().tabularCompile(base, { threads: 1.5 })).toThrow(
      invalidValue('tabularCompile: options.threads must be an integer from 0 (the default) to 256, got 1.5'),
    );
  });
});

describe('input errors', () => {
  const cases: [string, unknown, Error][] = [
    ['inputs not an array', { x: 1 }, invalidType('runSync: inputs must be an array of {name, dims, data}, got object')],
    ['an input not an object', [7], invalidType('runSync: inputs[0] must be an object {name, dims, data}, got number')],
    ['a name not a string', [{ name: 3, dims: [1], data: [] }], invalidType('runSync: inputs[0].name must be a string, got number')],
    ['an unknown name', [{ ...x24(), name: 'z' }], invalidValue('runSync: unknown input "z"; the model\'s inputs are "x"')],
    ['dims not an array', [{ ...x24(), dims: 8 }], invalidType('runSync: input "x": dims must be an array, got number')],
    ['a negative dimension', [{ ...x24(), dims: [-2, 4] }], invalidValue('runSync: input "x": dims must be an array of non-negative integers, got -2 at 0')],
    ['dims that do not match the data', [{ ...x24(), dims: [3, 4] }], invalidValue('runSync: input "x": dims [3, 4] hold 12 elements but data has 8')],
    ['the wrong typed array', [{ ...x24(), data: new Float64Array(8) }], invalidType('runSync: input "x": data must be a Float32Array for element type float, got Float64Array')],
    ['BigInt64Array for float', [{ ...x24(), data: new BigInt64Array(8) }], invalidType('runSync: input "x": data must be a Float32Array for element type float, got BigInt64Array')],
    ['strings for float', [{ ...x24(), data: ['1', '2', '3', '4', '5', '6', '7', '8'] }], invalidType('runSync: input "x": data must be a typed array for element type float, got array')],
    ['a shape the model does not declare', [{ ...x24(), dims: [4, 2] }], invalidValue('runSync: input "x" has shape [4, 2] but the model declares [?, 4] (the first dimension may be any batch size)')],
    ['a missing input', [], invalidValue('runSync: missing input "x"')],
    ['an input given twice', [x24(), x24()], invalidValue('runSync: input "x" is given twice')],
  ];

  for (const [what, inputs, error] of cases) {
    it(`rejects ${what}`, async () => {
      const model = mlp();
      expect(() => model.runSync(inputs as never)).toThrow(error);
      const asyncError = Object.assign(new (error.constructor as ErrorConstructor)(error.message.replace(/^runSync:/, 'run:')), { code: 'invalid_argument' });
      await expect(model.run(inputs as never)).rejects.toThrow(asyncError);
    });
  }

  it('rejects a number where a string is needed, and an out-of-range value for a narrow integer input', () => {
    const strings = compileBytes(
      new ModelBuilder({ opsets: { '': 13 } }).input('s', 'string', ['N']).node('Identity', ['s'], ['y']).output('y', 'string', ['N']).toBytes(),
    );
    expect(() => strings.runSync([{ name: 's', dims: [2], data: ['a', 5] as never }])).toThrow(
      invalidType('runSync: input "s": data[1] must be a string, got number'),
    );
    const bytes = compileBytes(
      new ModelBuilder({ opsets: { '': 13 } }).input('b', 'uint8', ['N']).node('Identity', ['b'], ['y']).output('y', 'uint8', ['N']).toBytes(),
    );
    expect(() => bytes.runSync([{ name: 'b', dims: [2], data: Int32Array.of(1, 300) }])).toThrow(
      invalidValue('runSync: input "b": data[1] = 300 is out of range for uint8'),
    );
    expect(bytes.runSync([{ name: 'b', dims: [2], data: Int32Array.of(1, 255) }])[0]).toMatchObject({ dataType: 'uint8', data: Int32Array.of(1, 255) });
  });
});

describe('lifecycle', () => {
  it('run() resolves off the JavaScript thread with the same outputs as runSync()', async () => {
    const model = mlp();
    const input = [{ name: 'x', dims: [1000, 4], data: randomFloats(4000, 3) }];
    const promise = model.run(input);
    expect(promise).toBeInstanceOf(Promise);
    // The inputs were copied: changing them now does not change the result.
    const expected = model.runSync(input);
    input[0]!.data.fill(0);
    expect(await promise).toEqual(expected);
  });

  it('serves concurrent runs of one model', async () => {
    const model = mlp();
    const inputs = Array.from({ length: 16 }, (_, k) => [{ name: 'x', dims: [k + 1, 4], data: randomFloats((k + 1) * 4, k) }]);
    const results = await Promise.all(inputs.map((i) => model.run(i)));
    results.forEach((r, k) => expect(r).toEqual(model.runSync(inputs[k]!)));
  });

  it('dispose() lets a run in flight finish and refuses later calls', async () => {
    const model = mlp();
    const pending = model.run([x24()]);
    model.dispose();
    expect(model.disposed).toBe(true);
    expect((await pending)[0]!.dims).toEqual([2, 2]);
    expect(() => model.runSync([x24()])).toThrow('runSync: the model has been disposed');
    await expect(model.run([x24()])).rejects.toThrow('run: the model has been disposed');
    expect(model.describe()).toEqual({ disposed: true });
    model.dispose(); // idempotent
  });

  it('describe() reports inputs, outputs, operators and sizes', () => {
    const info = mlp().describe();
    expect(info).toMatchObject({
      disposed: false,
      inputs: [{ name: 'x', kind: 'tensor', dataType: 'float', shape: [null, 4] }],
      outputs: [{ name: 'probs', kind: 'tensor', dataType: 'float', shape: [null, 2] }],
      nodes: 4,
      operators: ['Gemm', 'Relu', 'Softmax'],
      initializerBytes: (12 + 3 + 6 + 2) * 4,
    });
    expect(info.threads).toBeGreaterThanOrEqual(1);
  });

  it('TabularModel cannot be constructed from JavaScript', () => {
    const native = loadAddon().tabularCompile(normalized(mlpModel().toBytes()));
    const Ctor = (native as unknown as { constructor: new (...args: unknown[]) => unknown }).constructor;
    expect(() => new Ctor()).toThrow(invalidType('TabularModel cannot be constructed directly; use tabularCompile(model)'));
  });
});

describe('robustness', () => {
  // Seeded mutations of valid models (attribute values, list lengths, input names, initializer
  // dims) and of input shapes: every compile and run must either succeed or throw an Error.
  function mutate(v: unknown, r: () => number): unknown {
    if (Array.isArray(v)) {
      const c = v.slice();
      if (c.length && r() < 0.3) {
        const i = Math.floor(r() * c.length);
        c[i] = mutate(c[i], r);
      }
      if (r() < 0.05) c.pop();
      if (r() < 0.05) c.push(c[0]);
      return c;
    }
    if (typeof v === 'number') {
      const k = r();
      return k < 0.3 ? -1 : k < 0.5 ? v + 1 : k < 0.6 ? 1e9 : k < 0.7 ? NaN : k < 0.8 ? 0 : v;
    }
    if (typeof v === 'string') return r() < 0.5 ? `${v}x` : '';
    if (ArrayBuffer.isView(v)) {
      const c = (v as Float32Array).slice();
      if (c.length) c[Math.floor(r() * c.length)] = (typeof c[0] === 'bigint' ? BigInt(Math.floor(r() * 10) - 3) : r() < 0.5 ? NaN : 1e30) as never;
      return c;
    }
    if (v && typeof v === 'object') {
      const o = { ...(v as Record<string, unknown>) };
      for (const k of Object.keys(o)) if (r() < 0.15) o[k] = mutate(o[k], r);
      return o;
    }
    return v;
  }

  it('survives 600 mutated models and inputs with clean errors', () => {
    const ml = { '': 13, 'ai.onnx.ml': 3 };
    const sources = [
      mlpModel(),
      treeRegressorModel(),
      new ModelBuilder({ opsets: ml })
        .input('x', 'float', ['N', 3])
        .mlNode('LinearClassifier', ['x'], ['label', 'p'], { coefficients: attr.floats([1, 2, 3, 4, 5, 6]), intercepts: attr.floats([0, 1]), classlabels_ints: [0, 1] })
        .mlNode('ZipMap', ['p'], ['zip'], { classlabels_int64s: [0, 1] })
        .output('label', 'int64', ['N'])
        .sequenceMapOutput('zip', 'int64'),
      new ModelBuilder({ opsets: { '': 11, 'ai.onnx.ml': 4 } })
        .input('s', 'string', ['N'])
        .mlNode('LabelEncoder', ['s'], ['y'], { keys_strings: ['a', 'b'], values_int64s: [1, 2] })
        .node('Cast', ['y'], ['f'], { to: 1 })
        .node('Unsqueeze', ['f'], ['u'], { axes: [1] })
        .node('Concat', ['u', 'u'], ['c'], { axis: 1 })
        .output('c', 'float', ['N', 2]),
    ].map((b) => normalized(b.toBytes()));
    const r = rngFor(12345);
    let compiled = 0;
    let ran = 0;
    for (let it = 0; it < 600; it++) {
      const m = structuredClone(sources[it % sources.length]!) as unknown as {
        graph: { nodes: { inputs: string[]; attributes: Record<string, { value: unknown }> }[]; initializers: { dims: number[] }[]; inputs: { name: string; elemType: string; shape: (number | string | null)[] | null }[] };
      };
      const node = m.graph.nodes[Math.floor(r() * m.graph.nodes.length)]!;
      for (const k of Object.keys(node.attributes)) {
        if (r() < 0.3) node.attributes[k] = { ...node.attributes[k]!, value: mutate(node.attributes[k]!.value, r) };
      }
      if (r() < 0.2) node.inputs = mutate(node.inputs, r) as string[];
      if (r() < 0.2 && m.graph.initializers.length) m.graph.initializers[0]!.dims = mutate(m.graph.initializers[0]!.dims, r) as number[];
      let model;
      try {
        model = compileTabularModel(m as unknown as NormalizedModel);
        compiled++;
      } catch (e) {
        expect(e).toBeInstanceOf(Error);
        continue;
      }
      for (const n of [1, 3]) {
        const inputs = m.graph.inputs.map((info) => {
          const dims = (info.shape ?? [n, 4]).map((d, k) => (k === 0 ? n : typeof d === 'number' ? (r() < 0.2 ? d + 1 : d) : 4));
          const size = dims.reduce((a, b) => a * b, 1);
          const data = info.elemType === 'string' ? Array.from({ length: size }, () => (r() < 0.5 ? 'a' : 'q')) : randomFloats(size, it);
          return { name: info.name, dims, data };
        });
        try {
          model.runSync(inputs);
          ran++;
        } catch (e) {
          expect(e).toBeInstanceOf(Error);
        }
      }
      model.dispose();
    }
    expect(compiled).toBeGreaterThan(100);
    expect(ran).toBeGreaterThan(100);
  });
});
