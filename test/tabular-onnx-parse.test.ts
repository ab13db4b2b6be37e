// parseOnnxModel / parseTensorProto on models written by the test builder: the normalised plain
// model, tensor decoding for every element type, and the exact message of every refusal.
import { describe, expect, it } from 'vitest';
import { OnnxModelError, parseOnnxModel, parseTensorProto } from '../src/tabular/onnx/parse.js';
import { TensorProto } from '../src/tabular/onnx/proto.js';
import {
  attr,
  encodeModelProto,
  encodeTensorProto,
  GraphBuilder,
  mlpModel,
  ModelBuilder,
  treeRegressorModel,
  type TensorInit,
} from './helpers/onnx-builder.js';
import { rng } from './helpers/random.js';

function parseError(bytes: Uint8Array): OnnxModelError {
  try {
    parseOnnxModel(bytes);
  } catch (err) {
    expect(err).toBeInstanceOf(OnnxModelError);
    return err as OnnxModelError;
  }
  throw new Error('expected parseOnnxModel to throw');
}

const message = (bytes: Uint8Array) => parseError(bytes).message;

/** A TensorProto from raw fields (for malformed tensors). */
function encodeRawTensor(proto: Record<string, unknown>): Uint8Array {
  return TensorProto.encode(proto as never).finish();
}

/** A model whose only node is Relu(x) -> y, with `extra` applied to the builder first. */
function relu(extra: (b: ModelBuilder) => void = () => {}, opsets?: Record<string, number>): Uint8Array {
  const b = new ModelBuilder(opsets ? { opsets } : {});
  extra(b);
  return b.input('x', 'float', ['N', 3]).node('Relu', ['x'], ['y']).output('y', 'float', ['N', 3]).toBytes();
}

/** Deterministic pseudo-random bytes. */
function randomBytes(n: number, seed: number): Uint8Array {
  const r = rng(seed);
  return Uint8Array.from({ length: n }, () => Math.floor(r() * 256));
}

describe('parseOnnxModel', () => {
  it('returns the model as plain data', () => {
    const m = parseOnnxModel(
      mlpModel()
        .valueInfo('h', 'float', ['N', 3])
        .toBytes(),
    );
    expect(m.irVersion).toBe(8);
    expect(m.opsetImports).toEqual({ '': 13 });
    expect(m.producerName).toBe('onnx-builder');
    expect(m.graph.name).toBe('test_graph');
    expect(m.graph.inputs).toEqual([{ name: 'x', kind: 'tensor', elemType: 'float', shape: ['N', 4] }]);
    expect(m.graph.outputs).toEqual([{ name: 'probs', kind: 'tensor', elemType: 'float', shape: ['N', 2] }]);
    expect(m.graph.valueInfo).toEqual([{ name: 'h', kind: 'tensor', elemType: 'float', shape: ['N', 3] }]);
    expect(m.graph.nodes.map((n) => [n.name, n.opType, n.domain, n.inputs, n.outputs])).toEqual([
      ['dense1', 'Gemm', '', ['x', 'W1', 'B1'], ['h']],
      ['relu1', 'Relu', '', ['h'], ['a']],
      ['dense2', 'Gemm', '', ['a', 'W2', 'B2'], ['logits']],
      ['softmax', 'Softmax', '', ['logits'], ['probs']],
    ]);
    expect(m.graph.nodes[2]!.attributes).toEqual({
      transB: { type: 'int', value: 1 },
      alpha: { type: 'float', value: 1 },
    });
    // Initializers from the typed field and from raw_data decode alike.
    const [w1, b1, w2, b2] = m.graph.initializers;
    expect(w1).toMatchObject({ name: 'W1', dataType: 'float', dims: [3, 4] });
    expect(w1!.data).toBeInstanceOf(Float32Array);
    expect(Array.from(b1!.data as Float32Array)).toEqual([0.1, -0.1, 0.05].map(Math.fround));
    expect(Array.from(w2!.data as Float32Array)).toEqual([-0.25, 0, 0.25, -0.25, 0, 0.25]);
    expect(Array.from(b2!.data as Float32Array)).toEqual([0, 0.5]);
    // Plain data: survives structured cloning unchanged.
    expect(structuredClone(m)).toEqual(m);
  });

  it('reads opset imports, metadata and the ai.onnx alias of the default domain', () => {
    const m = parseOnnxModel(
      new ModelBuilder({ opsets: { 'ai.onnx': 12, 'ai.onnx.ml': 3 }, metadata: { author: 'me', feature_names: 'a,b' } })
        .input('x', 'float', [null, 2])
        .node('Relu', ['x'], ['r'], {}, { domain: 'ai.onnx' })
        .mlNode('Normalizer', ['r'], ['y'], { norm: 'L1' })
        .output('y', 'float')
        .toBytes(),
    );
    expect(m.opsetImports).toEqual({ '': 12, 'ai.onnx.ml': 3 });
    expect(m.metadata).toEqual({ author: 'me', feature_names: 'a,b' });
    expect(m.graph.nodes.map((n) => n.domain)).toEqual(['', 'ai.onnx.ml']);
    expect(m.graph.inputs[0]).toEqual({ name: 'x', kind: 'tensor', elemType: 'float', shape: [null, 2] });
    expect(m.graph.outputs[0]).toEqual({ name: 'y', kind: 'tensor', elemType: 'float', shape: null });
  });

  it('synthesises <op_type>_<index> names for unnamed nodes, avoiding taken names', () => {
    const m = parseOnnxModel(
      new ModelBuilder()
        .input('x', 'float', [1])
        .node('Relu', ['x'], ['a'], {}, { name: 'Relu_1' })
        .node('Relu', ['a'], ['b'])
        .node('Sigmoid', ['b'], ['c'])
        .output('c', 'float', [1])
        .toBytes(),
    );
    expect(m.graph.nodes.map((n) => n.name)).toEqual(['Relu_1', 'Relu_1_1', 'Sigmoid_2']);
  });

  it('leaves graph inputs that are initializers out of the inputs', () => {
    const m = parseOnnxModel(
      new ModelBuilder({ irVersion: 3, opsets: { '': 8 } })
        .input('x', 'float', [1, 2])
        .input('W', 'float', [2, 2])
        .initializer('W', 'float', [2, 2], [1, 0, 0, 1])
        .node('MatMul', ['x', 'W'], ['y'])
        .output('y', 'float', [1, 2])
        .toBytes(),
    );
    expect(m.graph.inputs.map((i) => i.name)).toEqual(['x']);
    expect(m.graph.initializers.map((t) => t.name)).toEqual(['W']);
  });

  it('returns nodes in a topological order, keeping the file order when it is one', () => {
    const m = parseOnnxModel(
      new ModelBuilder()
        .input('x', 'float', [1])
        .node('Exp', ['b'], ['c'], {}, { name: 'third' })
        .node('Relu', ['x'], ['a'], {}, { name: 'first' })
        .node('Sigmoid', ['a'], ['b'], {}, { name: 'second' })
        .node('Tanh', ['x'], ['d'], {}, { name: 'independent' })
        .output('c', 'float', [1])
        .output('d', 'float', [1])
        .toBytes(),
    );
    expect(m.graph.nodes.map((n) => n.name)).toEqual(['first', 'second', 'third', 'independent']);
  });

  it('decodes every attribute type', () => {
    const m = parseOnnxModel(
      relu((b) =>
        b
          .input('u', 'float', [1])
          .node(
            'Custom',
            ['u'],
            ['v'],
            {
              f: attr.float(2.5),
              i: -7,
              s: 'héllo',
              t: attr.tensor({ type: 'int64', dims: [2], values: [3n, -4n] }),
              fs: [0.5, 1.5],
              is: [1, 2, 3],
              ss: ['a', 'b'],
              big: attr.int(9007199254740993n),
              g: attr.graph(new GraphBuilder('body').input('z', 'float').node('Neg', ['z'], ['w']).output('w', 'float')),
            },
            { name: 'custom', domain: 'com.example' },
          )
          .output('v', 'float'),
        { '': 13, 'com.example': 1 },
      ),
    );
    const custom = m.graph.nodes.find((n) => n.name === 'custom')!;
    expect(custom.domain).toBe('com.example');
    expect(custom.attributes).toEqual({
      f: { type: 'float', value: 2.5 },
      i: { type: 'int', value: -7 },
      s: { type: 'string', value: 'héllo' },
      t: { type: 'tensor', value: { name: '', dataType: 'int64', dims: [2], data: BigInt64Array.of(3n, -4n) } },
      fs: { type: 'floats', value: [0.5, 1.5] },
      is: { type: 'ints', value: [1, 2, 3] },
      ss: { type: 'strings', value: ['a', 'b'] },
      big: { type: 'int', value: 9007199254740992, exact: '9007199254740993' },
      g: { type: 'graph', value: { name: 'body', opTypes: ['Neg'], nodeCount: 1 } },
    });
  });

  it('infers the type of IR-1 attributes that carry none', () => {
    const m = parseOnnxModel(
      new ModelBuilder({ opsets: { '': 6 } })
        .input('x', 'float', [1])
        .node('LeakyRelu', ['x'], ['y'], { alpha: attr.raw({ f: 0.25 }) })
        .output('y', 'float', [1])
        .toBytes(),
    );
    expect(m.graph.nodes[0]!.attributes.alpha).toEqual({ type: 'float', value: 0.25 });
  });
});

describe('parseOnnxModel: output kinds', () => {
  it('reads ZipMap-style and untyped outputs', () => {
    const m = parseOnnxModel(
      new ModelBuilder({ opsets: { '': 13, 'ai.onnx.ml': 1 } })
        .input('x', 'float', ['N', 2])
        .mlNode('ZipMap', ['x'], ['probs'], { classlabels_int64s: [0, 1] })
        .mlNode('ZipMap', ['x'], ['named'], { classlabels_strings: ['a', 'b'] })
        .node('Identity', ['x'], ['copy'])
        .sequenceMapOutput('probs', 'int64')
        .sequenceMapOutput('named', 'string')
        .outputOfType('copy', { kind: 'none' })
        .toBytes(),
    );
    expect(m.graph.outputs).toEqual([
      { name: 'probs', kind: 'sequence-map', keyType: 'int64', valueType: 'float' },
      { name: 'named', kind: 'sequence-map', keyType: 'string', valueType: 'float' },
      { name: 'copy', kind: 'unknown' },
    ]);
  });
});

describe('tensor decoding', () => {
  const cases: [TensorInit, unknown][] = [
    [{ type: 'float', dims: [2], values: [1.5, -2] }, Float32Array.of(1.5, -2)],
    [{ type: 'double', dims: [2], values: [0.1, 1e300] }, Float64Array.of(0.1, 1e300)],
    [{ type: 'int64', dims: [3], values: [1n, -(2n ** 63n), 2n ** 63n - 1n] }, BigInt64Array.of(1n, -(2n ** 63n), 2n ** 63n - 1n)],
    [{ type: 'uint64', dims: [1], values: [2n ** 64n - 1n] }, BigUint64Array.of(2n ** 64n - 1n)],
    [{ type: 'uint32', dims: [2], values: [0, 4294967295] }, Uint32Array.of(0, 4294967295)],
    [{ type: 'int32', dims: [2], values: [-2147483648, 7] }, Int32Array.of(-2147483648, 7)],
    [{ type: 'int16', dims: [2], values: [-32768, 5] }, Int32Array.of(-32768, 5)],
    [{ type: 'uint16', dims: [1], values: [65535] }, Int32Array.of(65535)],
    [{ type: 'int8', dims: [2], values: [-128, 127] }, Int32Array.of(-128, 127)],
    [{ type: 'uint8', dims: [2], values: [0, 255] }, Int32Array.of(0, 255)],
    [{ type: 'bool', dims: [3], values: [true, false, true] }, Int32Array.of(1, 0, 1)],
    [{ type: 'float16', dims: [4], values: [1, -0.5, 65504, 2 ** -24] }, Float32Array.of(1, -0.5, 65504, 2 ** -24)],
  ];
  for (const [init, expected] of cases) {
    for (const raw of [false, true]) {
      it(`${init.type} from ${raw ? 'raw_data' : 'the typed field'}`, () => {
        const t = parseTensorProto(encodeTensorProto({ ...init, name: 't', raw }));
        expect(t).toEqual({ name: 't', dataType: init.type, dims: init.dims, data: expected });
      });
    }
  }

  it('string tensors decode UTF-8', () => {
    const t = parseTensorProto(encodeTensorProto({ type: 'string', dims: [2, 1], values: ['naïve', ''] }));
    expect(t).toEqual({ name: '', dataType: 'string', dims: [2, 1], data: ['naïve', ''] });
  });

  it('a scalar has dims [] and one element', () => {
    expect(parseTensorProto(encodeTensorProto({ type: 'float', dims: [], values: [3] })).data).toEqual(Float32Array.of(3));
  });

  it('bfloat16 from raw_data', () => {
    // 0x3fc0 is 1.5 and 0xc000 is -2 in bfloat16 (little-endian bytes).
    const t = parseTensorProto(encodeRawTensor({ dataType: 16, dims: [2], rawData: Uint8Array.of(0xc0, 0x3f, 0x00, 0xc0) }));
    expect(t).toEqual({ name: '', dataType: 'bfloat16', dims: [2], data: Float32Array.of(1.5, -2) });
  });

  const errors: [string, Record<string, unknown>, string][] = [
    [
      'raw_data of the wrong size',
      { name: 'w', dataType: 1, dims: [2, 2], rawData: new Uint8Array(12) },
      'tensor "w" has 4 float elements by its dims [2, 2] but 12 bytes of raw_data (expected 16)',
    ],
    [
      'too few typed elements',
      { name: 'w', dataType: 1, dims: [3], floatData: [1, 2] },
      'tensor "w" has 3 elements by its dims [3] but holds 2',
    ],
    [
      'data in the wrong field',
      { name: 'w', dataType: 1, dims: [1], doubleData: [1] },
      'tensor "w" of type float holds its data in double_data',
    ],
    [
      'external data',
      { name: 'w', dataType: 1, dims: [1], dataLocation: 1, externalData: [{ key: 'location', value: 'w.bin' }] },
      'tensor "w" keeps its data in an external file (data_location EXTERNAL), which is not supported; save the model with its weights inside the .onnx file',
    ],
    [
      'a segment',
      { name: 'w', dataType: 1, dims: [1], floatData: [1], segment: { begin: 0, end: 1 } },
      'tensor "w" is a segment of a larger tensor, which is not supported',
    ],
    ['complex64', { name: 'w', dataType: 14, dims: [1] }, 'tensor "w" has element type complex64, which is not supported'],
    ['an unknown element type', { name: 'w', dataType: 99, dims: [1] }, 'tensor "w" has element type code 99, which is not supported'],
    ['no element type', { name: 'w', dims: [1] }, 'tensor "w" has no element type'],
    ['a negative dimension', { name: 'w', dataType: 1, dims: [-1] }, 'tensor "w" has an invalid dimension -1'],
    [
      'raw_data in a string tensor',
      { name: 'w', dataType: 8, dims: [1], rawData: Uint8Array.of(65) },
      'tensor "w" is a string tensor but holds raw_data',
    ],
    [
      'invalid UTF-8',
      { name: 'w', dataType: 8, dims: [1], stringData: [Uint8Array.of(0xff, 0xfe)] },
      'tensor "w" holds a string that is not valid UTF-8',
    ],
  ];
  for (const [what, proto, expected] of errors) {
    it(`refuses ${what}`, () => {
      expect(() => parseTensorProto(encodeRawTensor(proto))).toThrow(new OnnxModelError(expected));
    });
  }

  it('refuses an empty or corrupt TensorProto file', () => {
    expect(() => parseTensorProto(new Uint8Array(0))).toThrow('not an ONNX tensor: the file is empty');
    expect(() => parseTensorProto(Uint8Array.of(0x22, 10, 0))).toThrow(
      'not an ONNX tensor: it is truncated or not protobuf data (a field runs past the end of the data)',
    );
  });

  it('initializers are checked with their name in the message', () => {
    expect(
      message(
        relu((b) => b.rawInitializer({ name: 'bad', dataType: 1, dims: [2], floatData: [1] })),
      ),
    ).toBe('initializer "bad" has 2 elements by its dims [2] but holds 1');
  });
});

describe('parseOnnxModel refusals', () => {
  const mlpBytes = mlpModel().toBytes();

  it('an empty file', () => {
    expect(message(new Uint8Array(0))).toBe('not an ONNX model: the file is empty');
  });

  it('random bytes', () => {
    expect(message(randomBytes(256, 42))).toBe(
      'not an ONNX model: it is truncated or not protobuf data (a field runs past the end of the data)',
    );
  });

  it('text', () => {
    expect(message(new TextEncoder().encode('hello world, this is not onnx'))).toBe(
      'not an ONNX model: it is not protobuf data (invalid wire type 4 at offset 3)',
    );
  });

  it('a truncated model', () => {
    expect(message(mlpBytes.subarray(0, mlpBytes.length - 7))).toBe(
      'not an ONNX model: it is truncated or not protobuf data (a field runs past the end of the data)',
    );
  });

  it('a model without an IR version', () => {
    expect(message(encodeModelProto({ producerName: 'x' }))).toBe('not an ONNX model: it has no IR version');
  });

  it('a model without a graph', () => {
    expect(message(encodeModelProto({ irVersion: 8, opsetImport: [{ domain: '', version: 13 }] }))).toBe(
      'the ONNX model has no graph',
    );
  });

  it('a model that imports no operator set', () => {
    const proto = new ModelBuilder().input('x', 'float').node('Relu', ['x'], ['y']).output('y', 'float').toModelProto();
    expect(message(encodeModelProto({ ...proto, opsetImport: [] }))).toBe('the model imports no operator set');
  });

  it('an operator set imported twice', () => {
    const proto = new ModelBuilder().input('x', 'float').node('Relu', ['x'], ['y']).output('y', 'float').toModelProto();
    const opsetImport = [
      { domain: '', version: 13 },
      { domain: 'ai.onnx', version: 12 },
    ];
    expect(message(encodeModelProto({ ...proto, opsetImport }))).toBe('the model imports operator set ai.onnx twice');
  });

  it('a node input that is never produced', () => {
    expect(
      message(
        new ModelBuilder()
          .input('x', 'float', [1])
          .node('Add', ['x', 'bias'], ['y'], {}, { name: 'add' })
          .output('y', 'float', [1])
          .toBytes(),
      ),
    ).toBe('node "add" input "bias" is never produced: it is not a graph input, an initializer or the output of a node');
  });

  it('a graph output that is never produced', () => {
    expect(message(relu((b) => b.output('z', 'float')))).toBe('graph output "z" is never produced');
  });

  it('a cycle', () => {
    expect(
      message(
        new ModelBuilder()
          .input('x', 'float', [1])
          .node('Add', ['x', 'c'], ['a'], {}, { name: 'n1' })
          .node('Relu', ['a'], ['b'], {}, { name: 'n2' })
          .node('Relu', ['b'], ['c'], {}, { name: 'n3' })
          .output('c', 'float', [1])
          .toBytes(),
      ),
    ).toBe('the graph has a cycle through node "n1"');
  });

  it('a value produced twice', () => {
    expect(
      message(
        new ModelBuilder()
          .input('x', 'float', [1])
          .node('Relu', ['x'], ['y'], {}, { name: 'r1' })
          .node('Sigmoid', ['x'], ['y'], {}, { name: 'r2' })
          .output('y', 'float', [1])
          .toBytes(),
      ),
    ).toBe('value "y" is produced twice, by node "r1" and by node "r2"');
  });

  it('a node output named like a graph input or an initializer', () => {
    expect(
      message(new ModelBuilder().input('x', 'float').node('Relu', ['x'], ['x'], {}, { name: 'r' }).output('x', 'float').toBytes()),
    ).toBe('node "r" output "x" has the name of a graph input');
    expect(
      message(
        new ModelBuilder()
          .input('x', 'float')
          .initializer('w', 'float', [1], [1])
          .node('Relu', ['x'], ['w'], {}, { name: 'r' })
          .output('w', 'float')
          .toBytes(),
      ),
    ).toBe('node "r" output "w" has the name of an initializer');
  });

  it('duplicate inputs, outputs, initializers and attributes', () => {
    expect(message(relu((b) => b.input('x', 'float')))).toBe('graph input "x" is declared twice');
    expect(message(relu((b) => b.initializer('w', 'float', [1], [1]).initializer('w', 'float', [1], [2])))).toBe(
      'initializer "w" is declared twice',
    );
    expect(
      message(
        new ModelBuilder().input('x', 'float').node('Relu', ['x'], ['y']).output('y', 'float').output('y', 'float').toBytes(),
      ),
    ).toBe('graph output "y" is declared twice');
    const proto = new ModelBuilder()
      .input('x', 'float')
      .node('LeakyRelu', ['x'], ['y'], {}, { name: 'lr' })
      .output('y', 'float')
      .toModelProto();
    const graph = proto.graph as { node: { attribute: unknown[] }[] };
    graph.node[0]!.attribute = [
      { name: 'alpha', type: 1, f: 0.1 },
      { name: 'alpha', type: 1, f: 0.2 },
    ];
    expect(message(encodeModelProto(proto))).toBe('node "lr" sets attribute "alpha" twice');
  });

  it('an unsupported element type', () => {
    expect(message(relu((b) => b.inputOfType('c', { tensorType: { elemType: 14 } })))).toBe(
      'graph input "c" has element type complex64, which is not supported',
    );
    expect(message(relu((b) => b.inputOfType('c', { tensorType: { elemType: 17 } })))).toBe(
      'graph input "c" has element type float8e4m3fn, which is not supported',
    );
  });

  it('a graph input without a type, or of a non-tensor type', () => {
    expect(message(relu((b) => b.inputOfType('c', { kind: 'none' })))).toBe('graph input "c" has no type');
    expect(
      message(relu((b) => b.inputOfType('c', { mapType: { keyType: 8, valueType: { tensorType: { elemType: 1 } } } }))),
    ).toBe('graph input "c" has type map(string, tensor(float)), which is not supported');
    expect(message(relu((b) => b.inputOfType('c', { kind: 'sequence-map', keyType: 'int64', valueType: 'float' })))).toBe(
      'graph input "c" has type seq(map(int64, tensor(float))), which is not supported',
    );
  });

  it('a node in a domain the model does not import', () => {
    expect(
      message(
        new ModelBuilder()
          .input('x', 'float')
          .mlNode('Binarizer', ['x'], ['y'], {}, 'bin')
          .output('y', 'float')
          .toBytes(),
      ),
    ).toBe('node "bin" uses the operator set "ai.onnx.ml", which the model does not import');
  });

  it('a node without an operator type or outputs', () => {
    expect(message(new ModelBuilder().input('x', 'float').node('', ['x'], ['y']).output('y', 'float').toBytes())).toBe(
      'node 0 of the graph has no operator type',
    );
    expect(
      message(new ModelBuilder().input('x', 'float').node('Relu', ['x'], [], {}, { name: 'r' }).output('x', 'float').toBytes()),
    ).toBe('node "r" has no outputs');
  });

  it('a sparse initializer', () => {
    const proto = new ModelBuilder().input('x', 'float').node('Relu', ['x'], ['y']).output('y', 'float').toModelProto();
    (proto.graph as Record<string, unknown>).sparseInitializer = [
      { values: { name: 's', dataType: 1, dims: [1], floatData: [1] }, indices: { dataType: 7, dims: [1], int64Data: [0] }, dims: [4] },
    ];
    expect(message(encodeModelProto(proto))).toBe('sparse initializer "s" is not supported');
  });

  it('a graph without outputs', () => {
    expect(message(new ModelBuilder().input('x', 'float').node('Relu', ['x'], ['y']).toBytes())).toBe(
      'the graph has no outputs',
    );
  });

  it('never lets a protobufjs error through unwrapped', () => {
    const base = treeRegressorModel().toBytes();
    let refused = 0;
    for (let cut = 1; cut < base.length; cut += 7) {
      let err: unknown;
      try {
        parseOnnxModel(base.subarray(0, cut));
      } catch (e) {
        err = e;
      }
      if (err !== undefined) {
        expect(err).toBeInstanceOf(OnnxModelError);
        refused++;
      }
    }
    // A cut can leave a shorter but valid message; most cuts must be refused all the same.
    expect(refused).toBeGreaterThan(60);
    for (let seed = 1; seed <= 200; seed++) {
      let err: unknown;
      try {
        parseOnnxModel(randomBytes(64 + seed, seed));
      } catch (e) {
        err = e;
      }
      expect(err).toBeInstanceOf(OnnxModelError);
    }
  });
});

