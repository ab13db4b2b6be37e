// The operator support table: validateSupported's refusals (exact messages) and normalize's
// canonical forms, on models written by the test builder.
import { describe, expect, it } from 'vitest';
import {
  findOperator,
  normalize,
  OPERATORS,
  operatorSupportTable,
  SUPPORTED_OPSETS,
  UnsupportedOperatorError,
  validateSupported,
} from '../src/tabular/onnx/index.js';
import { OnnxModelError, parseOnnxModel } from '../src/tabular/onnx/parse.js';
import type { NormalizedModel, NormalizedNode, OnnxModel } from '../src/tabular/onnx/types.js';
import {
  attr,
  encodeModelProto,
  mlpModel,
  ModelBuilder,
  treeRegressorModel,
  type AttrValue,
} from './helpers/onnx-builder.js';

const parse = (b: ModelBuilder): OnnxModel => parseOnnxModel(b.toBytes());

function refusal(model: OnnxModel): OnnxModelError {
  try {
    validateSupported(model);
  } catch (err) {
    expect(err).toBeInstanceOf(OnnxModelError);
    return err as OnnxModelError;
  }
  throw new Error('expected validateSupported to throw');
}

/** A model with one node `opType` on input x (float [N, 3]) producing y. */
function single(
  opType: string,
  attributes: Record<string, AttrValue> = {},
  options: { opsets?: Record<string, number>; domain?: string; inputs?: string[]; extra?: (b: ModelBuilder) => void } = {},
): OnnxModel {
  const b = new ModelBuilder({ opsets: options.opsets ?? { '': 13, 'ai.onnx.ml': 3 } }).input('x', 'float', ['N', 3]);
  options.extra?.(b);
  return parse(
    b
      .node(opType, options.inputs ?? ['x'], ['y'], attributes, {
        name: 'n',
        ...(options.domain !== undefined ? { domain: options.domain } : {}),
      })
      .output('y', 'float'),
  );
}

const ml = (opType: string, attributes: Record<string, AttrValue> = {}, mlOpset = 3, inputs?: string[]) =>
  single(opType, attributes, { opsets: { '': 13, 'ai.onnx.ml': mlOpset }, domain: 'ai.onnx.ml', ...(inputs ? { inputs } : {}) });

function without<T extends object>(o: T, ...keys: string[]): T {
  return Object.fromEntries(Object.entries(o).filter(([k]) => !keys.includes(k))) as T;
}

const node = (m: NormalizedModel, name = 'n'): NormalizedNode => m.graph.nodes.find((n) => n.name === name)!;

describe('validateSupported', () => {
  it('accepts a Gemm + Relu MLP and a tree ensemble', () => {
    expect(() => validateSupported(parse(mlpModel()))).not.toThrow();
    expect(() => validateSupported(parse(mlpModel(9)))).not.toThrow();
    expect(() => validateSupported(parse(treeRegressorModel()))).not.toThrow();
    expect(() => validateSupported(parse(treeRegressorModel(1)))).not.toThrow();
  });

  it('refuses an unsupported operator, naming it, its node and the opset', () => {
    const m = parse(
      new ModelBuilder({ opsets: { '': 13, 'ai.onnx.ml': 1 } })
        .input('x', 'float', ['N', 3])
        .mlNode('DictVectorizer', ['x'], ['label', 'scores'], { int64_vocabulary: [1, 2, 3] }, 'svc')
        .output('label', 'int64')
        .output('scores', 'float'),
    );
    const err = refusal(m);
    expect(err).toBeInstanceOf(UnsupportedOperatorError);
    expect(err.message).toBe('operator "ai.onnx.ml.DictVectorizer" (node "svc", opset ai.onnx.ml 1) is not supported');
    expect((err as UnsupportedOperatorError).details).toEqual({
      operator: 'ai.onnx.ml.DictVectorizer',
      node: 'svc',
      domain: 'ai.onnx.ml',
      opset: 1,
    });
  });

  it('refuses operators of the default and of other domains', () => {
    expect(refusal(single('Resize', { mode: 'cubic' }, { opsets: { '': 19 } })).message).toBe(
      'operator "Resize" (node "n", opset ai.onnx 19) is not supported',
    );
    expect(refusal(single('FusedGemm', {}, { opsets: { '': 13, 'com.microsoft': 1 }, domain: 'com.microsoft' })).message).toBe(
      'operator "com.microsoft.FusedGemm" (node "n", opset com.microsoft 1) is not supported',
    );
  });

  it('names synthesised node names', () => {
    const m = parse(new ModelBuilder().input('x', 'float').node('Erf', ['x'], ['y']).output('y', 'float'));
    expect(refusal(m).message).toBe('operator "Erf" (node "Erf_0", opset ai.onnx 13) is not supported');
  });

  it('refuses an attribute value it does not implement', () => {
    const err = refusal(
      ml('LinearClassifier', { coefficients: attr.floats([1, 2, 3]), classlabels_ints: [0], post_transform: 'CUBIC' }),
    );
    expect(err).toBeInstanceOf(UnsupportedOperatorError);
    expect(err.message).toBe(
      'attribute "post_transform"="CUBIC" of operator "ai.onnx.ml.LinearClassifier" (node "n", opset ai.onnx.ml 3) is not supported',
    );
    expect((err as UnsupportedOperatorError).details.attribute).toBe('post_transform');
    expect(refusal(single('Gemm', { transA: 2 }, { inputs: ['x', 'x'] })).message).toBe(
      'attribute "transA"=2 of operator "Gemm" (node "n", opset ai.onnx 13) is not supported',
    );
    expect(refusal(ml('Normalizer', { norm: 'L3' })).message).toBe(
      'attribute "norm"="L3" of operator "ai.onnx.ml.Normalizer" (node "n", opset ai.onnx.ml 3) is not supported',
    );
    expect(
      refusal(
        ml('TreeEnsembleRegressor', {
          ...TREE,
          nodes_modes: ['BRANCH_LEQ', 'LEAF', 'BRANCH_FOO', 'LEAF', 'LEAF'],
        }),
      ).message,
    ).toBe(
      'attribute "nodes_modes"="BRANCH_FOO" of operator "ai.onnx.ml.TreeEnsembleRegressor" (node "n", opset ai.onnx.ml 3) is not supported',
    );
  });

  it('refuses an attribute the operator does not have', () => {
    expect(refusal(single('Relu', { mode: 'fast' })).message).toBe(
      'attribute "mode" of operator "Relu" (node "n", opset ai.onnx 13) is not supported',
    );
    // Gemm's broadcast exists in versions 1 and 6 only.
    expect(refusal(single('Gemm', { broadcast: 1 }, { inputs: ['x', 'x'] })).message).toBe(
      'attribute "broadcast" of operator "Gemm" (node "n", opset ai.onnx 13) is not supported',
    );
  });

  it('refuses legacy broadcasting along an axis', () => {
    const m = single('Add', { broadcast: 1, axis: 1 }, { opsets: { '': 6 }, inputs: ['x', 'x'] });
    expect(refusal(m).message).toBe('attribute "axis"=1 of operator "Add" (node "n", opset ai.onnx 6) is not supported');
  });

  it('refuses integers outside the exact range', () => {
    expect(refusal(single('Flatten', { axis: attr.int(2n ** 62n) })).message).toBe(
      'attribute "axis"=4611686018427387904 of operator "Flatten" (node "n", opset ai.onnx 13) is not supported',
    );
  });

  it('refuses versions it does not implement', () => {
    const bn = (opset: number) =>
      parse(
        new ModelBuilder({ opsets: { '': opset } })
          .input('x', 'float', ['N', 2])
          .initializer('s', 'float', [2], [1, 1])
          .node('BatchNormalization', ['x', 's', 's', 's', 's'], ['y'], {}, { name: 'bn' })
          .output('y', 'float'),
      );
    expect(refusal(bn(6)).message).toBe(
      'operator "BatchNormalization" (node "bn", opset ai.onnx 6) is not supported: versions before opset 7 are not supported',
    );
    expect(() => validateSupported(bn(7))).not.toThrow();
    expect(refusal(ml('TreeEnsembleRegressor', TREE, 5)).message).toBe(
      'operator "ai.onnx.ml.TreeEnsembleRegressor" (node "n", opset ai.onnx.ml 5) is not supported: it is deprecated from ai.onnx.ml opset 5, where ai.onnx.ml.TreeEnsemble replaces it',
    );
    expect(refusal(ml('LabelEncoder', { classes_strings: ['a'] }, 1)).message).toBe(
      'operator "ai.onnx.ml.LabelEncoder" (node "n", opset ai.onnx.ml 1) is not supported: version 1 (ai.onnx.ml opset 1) is not supported; convert with ai.onnx.ml opset 2 or later',
    );
    expect(refusal(ml('TreeEnsemble', {}, 4)).message).toBe(
      'operator "ai.onnx.ml.TreeEnsemble" (node "n", opset ai.onnx.ml 4) is not supported: it does not exist before ai.onnx.ml opset 5',
    );
  });

  it('refuses opsets newer than it knows', () => {
    expect(refusal(single('Relu', {}, { opsets: { '': 26 } })).message).toBe(
      'operator "Relu" (node "n", opset ai.onnx 26) is not supported: the newest supported ai.onnx opset is 25',
    );
  });

  it('refuses a computed Squeeze axes input', () => {
    const m = parse(
      new ModelBuilder()
        .input('x', 'float', ['N', 1])
        .input('axes', 'int64', [1])
        .node('Squeeze', ['x', 'axes'], ['y'], {}, { name: 'sq' })
        .output('y', 'float'),
    );
    expect(refusal(m).message).toBe(
      'operator "Squeeze" (node "sq", opset ai.onnx 13) is not supported: its "axes" input must be a constant (an initializer or a Constant node)',
    );
  });

  it('refuses BatchNormalization with training outputs', () => {
    const m = parse(
      new ModelBuilder({ opsets: { '': 9 } })
        .input('x', 'float', ['N', 2])
        .initializer('s', 'float', [2], [1, 1])
        .node('BatchNormalization', ['x', 's', 's', 's', 's'], ['y', 'mean', 'var'], {}, { name: 'bn' })
        .output('y', 'float')
        .output('mean', 'float')
        .output('var', 'float'),
    );
    expect(refusal(m).message).toBe(
      'operator "BatchNormalization" (node "bn", opset ai.onnx 9) is not supported: its training outputs (running or saved mean and variance) are not supported',
    );
  });

  it('refuses Cast to a type it lacks', () => {
    expect(refusal(single('Cast', { to: 10 })).message).toBe(
      'attribute "to"=float16 of operator "Cast" (node "n", opset ai.onnx 13) is not supported',
    );
    expect(refusal(single('Cast', { to: 'COMPLEX64' }, { opsets: { '': 1 } })).message).toBe(
      'attribute "to"="COMPLEX64" of operator "Cast" (node "n", opset ai.onnx 1) is not supported',
    );
  });

  it('names a model-local function', () => {
    const proto = new ModelBuilder({ opsets: { '': 13, 'my.funcs': 1 } })
      .input('x', 'float')
      .node('Swish', ['x'], ['y'], {}, { name: 'act', domain: 'my.funcs' })
      .output('y', 'float')
      .toModelProto();
    proto.functions = [{ name: 'Swish', domain: 'my.funcs', input: ['x'], output: ['y'] }];
    expect(refusal(parseOnnxModel(encodeModelProto(proto))).message).toBe(
      'operator "my.funcs.Swish" (node "act", opset my.funcs 1) is not supported: it is a model-local function',
    );
  });

  describe('malformed nodes (OnnxModelError)', () => {
    const invalid = (m: OnnxModel) => {
      const err = refusal(m);
      expect(err).not.toBeInstanceOf(UnsupportedOperatorError);
      return err.message;
    };
    it('a wrong attribute type', () => {
      expect(invalid(single('LeakyRelu', { alpha: attr.string('big') }))).toBe(
        'node "n" (operator "LeakyRelu") attribute "alpha" must be a float, not a string',
      );
    });
    it('a missing required attribute', () => {
      expect(invalid(single('Cast'))).toBe('node "n" (operator "Cast") lacks the required attribute "to"');
      expect(invalid(single('Concat', {}, { inputs: ['x', 'x'] }))).toBe(
        'node "n" (operator "Concat") lacks the required attribute "axis"',
      );
      expect(invalid(ml('Scaler', { scale: attr.floats([1]) }))).toBe(
        'node "n" (operator "ai.onnx.ml.Scaler") lacks the required attribute "offset"',
      );
    });
    it('a wrong number of inputs', () => {
      expect(invalid(single('Gemm'))).toBe('node "n" (operator "Gemm") has 1 input, but version 13 takes 2 to 3');
      expect(invalid(single('Relu', {}, { inputs: ['x', 'x'] }))).toBe(
        'node "n" (operator "Relu") has 2 inputs, but version 13 takes 1',
      );
      expect(invalid(single('Gemm', {}, { inputs: ['x', '', 'x'] }))).toBe(
        'node "n" (operator "Gemm") leaves its required input 1 empty',
      );
    });
    it('none or two of exclusive attributes', () => {
      expect(invalid(ml('ZipMap'))).toBe(
        'node "n" (operator "ai.onnx.ml.ZipMap") sets none of the attributes "classlabels_int64s", "classlabels_strings"; it needs one',
      );
      expect(invalid(ml('ZipMap', { classlabels_int64s: [1], classlabels_strings: ['a'] }))).toBe(
        'node "n" (operator "ai.onnx.ml.ZipMap") sets both "classlabels_int64s" and "classlabels_strings", of which it needs exactly one',
      );
    });
    it('tree attributes of different lengths', () => {
      expect(invalid(ml('TreeEnsembleRegressor', { ...TREE, nodes_featureids: [0, 0, 1] }))).toBe(
        'node "n" (operator "ai.onnx.ml.TreeEnsembleRegressor") attributes "nodes_treeids" and "nodes_featureids" have different lengths (5 and 3)',
      );
    });
  });
});

const TREE: Record<string, AttrValue> = {
  nodes_treeids: [0, 0, 0, 0, 0],
  nodes_nodeids: [0, 1, 2, 3, 4],
  nodes_featureids: [0, 0, 1, 0, 0],
  nodes_modes: ['BRANCH_LEQ', 'LEAF', 'BRANCH_LT', 'LEAF', 'LEAF'],
  nodes_values: attr.floats([0.5, 0, 2, 0, 0]),
  nodes_truenodeids: [1, 0, 3, 0, 0],
  nodes_falsenodeids: [2, 0, 4, 0, 0],
  target_ids: [0, 0, 1],
  target_nodeids: [1, 3, 4],
  target_treeids: [0, 0, 0],
  target_weights: attr.floats([1.5, -1, 3]),
};

describe('normalize', () => {
  it('fills defaults and drops legacy attributes (Gemm-6 broadcast)', () => {
    const m = normalize(single('Gemm', { broadcast: 1, transB: 1 }, { opsets: { '': 6 }, inputs: ['x', 'x', 'x'] }));
    expect(node(m)).toEqual({
      name: 'n',
      opType: 'Gemm',
      domain: '',
      version: 6,
      inputs: ['x', 'x', 'x'],
      outputs: ['y'],
      attributes: {
        transB: { type: 'int', value: 1 },
        alpha: { type: 'float', value: 1 },
        beta: { type: 'float', value: 1 },
        transA: { type: 'int', value: 0 },
      },
    });
  });

  it('Softmax: the axis default and the 2-D coercion of opsets before 13', () => {
    expect(node(normalize(single('Softmax', {}, { opsets: { '': 11 } }))).attributes).toEqual({
      axis: { type: 'int', value: 1 },
      coerce_2d: { type: 'int', value: 1 },
    });
    expect(node(normalize(single('Softmax'))).attributes).toEqual({
      axis: { type: 'int', value: -1 },
      coerce_2d: { type: 'int', value: 0 },
    });
  });

  it('Clip: bounds always as inputs', () => {
    const six = normalize(single('Clip', { min: attr.float(-1), max: attr.float(6) }, { opsets: { '': 6 } }));
    expect(node(six).inputs).toEqual(['x', 'n_min', 'n_max']);
    expect(node(six).attributes).toEqual({});
    expect(six.graph.initializers).toEqual([
      { name: 'n_min', dataType: 'float', dims: [], data: Float32Array.of(-1) },
      { name: 'n_max', dataType: 'float', dims: [], data: Float32Array.of(6) },
    ]);
    const upperOnly = normalize(single('Clip', { max: attr.float(6) }, { opsets: { '': 6 } }));
    expect(node(upperOnly).inputs).toEqual(['x', '', 'n_max']);
    const none = normalize(single('Clip', {}, { opsets: { '': 6 } }));
    expect(node(none).inputs).toEqual(['x']);
    const thirteen = normalize(
      single('Clip', {}, { inputs: ['x', '', 'hi', ''], extra: (b) => b.initializer('hi', 'float', [], [6]) }),
    );
    expect(node(thirteen).inputs).toEqual(['x', '', 'hi']);
  });

  it('Squeeze / Unsqueeze: axes always as an attribute', () => {
    const fromInit = normalize(
      single('Squeeze', {}, { inputs: ['x', 'axes'], extra: (b) => b.initializer('axes', 'int64', [1], [1]) }),
    );
    expect(node(fromInit).inputs).toEqual(['x']);
    expect(node(fromInit).attributes).toEqual({ axes: { type: 'ints', value: [1] } });
    expect(fromInit.graph.initializers).toEqual([]); // the axes initializer is no longer used
    const fromConstant = normalize(
      single('Unsqueeze', {}, {
        inputs: ['x', 'c'],
        extra: (b) => b.node('Constant', [], ['c'], { value_ints: [0, -1] }, { name: 'const' }),
      }),
    );
    expect(fromConstant.graph.nodes.map((n) => n.opType)).toEqual(['Unsqueeze']);
    expect(node(fromConstant).attributes).toEqual({ axes: { type: 'ints', value: [0, -1] } });
    const eleven = normalize(single('Unsqueeze', { axes: [0] }, { opsets: { '': 11 } }));
    expect(node(eleven).attributes).toEqual({ axes: { type: 'ints', value: [0] } });
    const squeezeAll = normalize(single('Squeeze'));
    expect(node(squeezeAll).attributes).toEqual({});
  });

  it('Reshape: shape always as an input, allowzero always present', () => {
    const one = normalize(single('Reshape', { shape: [-1, 3] }, { opsets: { '': 1 } }));
    expect(node(one).inputs).toEqual(['x', 'n_shape']);
    expect(node(one).attributes).toEqual({ allowzero: { type: 'int', value: 0 } });
    expect(one.graph.initializers).toEqual([
      { name: 'n_shape', dataType: 'int64', dims: [2], data: BigInt64Array.of(-1n, 3n) },
    ]);
    const fourteen = normalize(
      single('Reshape', { allowzero: 1 }, { opsets: { '': 14 }, inputs: ['x', 's'], extra: (b) => b.initializer('s', 'int64', [1], [-1]) }),
    );
    expect(node(fourteen).attributes).toEqual({ allowzero: { type: 'int', value: 1 } });
    expect(node(fourteen).inputs).toEqual(['x', 's']);
  });

  it('Cast: the target as an element type name', () => {
    expect(node(normalize(single('Cast', { to: 'FLOAT' }, { opsets: { '': 1 } }))).attributes).toEqual({
      to: { type: 'string', value: 'float' },
    });
    expect(node(normalize(single('Cast', { to: 7, saturate: 1 }, { opsets: { '': 19 } }))).attributes).toEqual({
      to: { type: 'string', value: 'int64' },
    });
  });

  it('Concat: axis 1 by default in version 1', () => {
    expect(node(normalize(single('Concat', {}, { opsets: { '': 1 }, inputs: ['x', 'x'] }))).attributes).toEqual({
      axis: { type: 'int', value: 1 },
    });
  });

  it('folds Constant nodes of every form into initializers', () => {
    const forms: [Record<string, AttrValue>, unknown][] = [
      [{ value: attr.tensor({ type: 'double', dims: [2], values: [1, 2] }) }, { dataType: 'double', dims: [2], data: Float64Array.of(1, 2) }],
      [{ value_float: attr.float(0.5) }, { dataType: 'float', dims: [], data: Float32Array.of(0.5) }],
      [{ value_floats: attr.floats([1, 2]) }, { dataType: 'float', dims: [2], data: Float32Array.of(1, 2) }],
      [{ value_int: 4 }, { dataType: 'int64', dims: [], data: BigInt64Array.of(4n) }],
      [{ value_ints: [4, 5] }, { dataType: 'int64', dims: [2], data: BigInt64Array.of(4n, 5n) }],
      [{ value_string: 'a' }, { dataType: 'string', dims: [], data: ['a'] }],
      [{ value_strings: ['a', 'b'] }, { dataType: 'string', dims: [2], data: ['a', 'b'] }],
    ];
    for (const [attributes, tensor] of forms) {
      const m = normalize(
        parse(
          new ModelBuilder()
            .input('x', 'float')
            .node('Constant', [], ['c'], attributes, { name: 'k' })
            .node('Identity', ['c'], ['y'], {}, { name: 'n' })
            .output('y', 'float'),
        ),
      );
      expect(m.graph.nodes.map((n) => n.opType)).toEqual(['Identity']);
      expect(m.graph.initializers).toEqual([{ name: 'c', ...(tensor as object) }]);
    }
    // A Constant that is a graph output directly.
    const direct = normalize(
      parse(new ModelBuilder().input('x', 'float').node('Constant', [], ['y'], { value_float: attr.float(1) }).output('y', 'float')),
    );
    expect(direct.graph.nodes).toEqual([]);
    expect(direct.graph.initializers.map((t) => t.name)).toEqual(['y']);
  });

  it('trims trailing omitted inputs', () => {
    expect(node(normalize(single('Gemm', {}, { inputs: ['x', 'x', ''] }))).inputs).toEqual(['x', 'x']);
  });

  it('tree ensembles: *_as_tensor to floats, defaults filled', () => {
    const m = normalize(
      ml('TreeEnsembleRegressor', {
        ...without(TREE, 'nodes_values', 'target_weights'),
        nodes_values_as_tensor: attr.tensor({ type: 'double', dims: [5], values: [0.1, 0, 2, 0, 0] }),
        target_weights_as_tensor: attr.tensor({ type: 'double', dims: [3], values: [1.5, -1, 3] }),
        nodes_hitrates: attr.floats([1, 1, 1, 1, 1]),
      }),
    );
    const a = node(m).attributes;
    expect(a.nodes_values).toEqual({ type: 'floats', value: [0.1, 0, 2, 0, 0] });
    expect(a.target_weights).toEqual({ type: 'floats', value: [1.5, -1, 3] });
    expect(a.nodes_values_as_tensor).toBeUndefined();
    expect(a.nodes_hitrates).toBeUndefined();
    expect(a.nodes_missing_value_tracks_true).toEqual({ type: 'ints', value: [0, 0, 0, 0, 0] });
    expect(a.base_values).toEqual({ type: 'floats', value: [] });
    expect(a.n_targets).toEqual({ type: 'int', value: 2 });
    expect(a.aggregate_function).toEqual({ type: 'string', value: 'SUM' });
    expect(a.post_transform).toEqual({ type: 'string', value: 'NONE' });
  });

  it('TreeEnsemble-5: codes to the names of the older tree operators', () => {
    const m = normalize(
      parse(
        new ModelBuilder({ opsets: { '': 21, 'ai.onnx.ml': 5 } })
          .input('x', 'double', ['N', 2])
          .mlNode(
            'TreeEnsemble',
            ['x'],
            ['y'],
            {
              tree_roots: [0],
              nodes_featureids: [0, 1],
              nodes_modes: attr.tensor({ type: 'uint8', dims: [2], values: [0, 6] }),
              nodes_splits: attr.tensor({ type: 'double', dims: [2], values: [0.5, NaN] }),
              membership_values: attr.tensor({ type: 'double', dims: [3], values: [1, 2, NaN] }),
              nodes_truenodeids: [1, 0],
              nodes_falsenodeids: [2, 1],
              nodes_trueleafs: [0, 1],
              nodes_falseleafs: [1, 1],
              leaf_targetids: [0, 0, 1],
              leaf_weights: attr.tensor({ type: 'double', dims: [3], values: [1, 2, 3] }),
              post_transform: 2,
              aggregate_function: 0,
            },
            'n',
          )
          .output('y', 'double'),
      ),
    );
    const a = node(m).attributes;
    expect(a.nodes_modes).toEqual({ type: 'strings', value: ['BRANCH_LEQ', 'BRANCH_MEMBER'] });
    expect(a.post_transform).toEqual({ type: 'string', value: 'LOGISTIC' });
    expect(a.aggregate_function).toEqual({ type: 'string', value: 'AVERAGE' });
    expect(a.nodes_splits).toEqual({ type: 'floats', value: [0.5, NaN] });
    expect(a.leaf_weights).toEqual({ type: 'floats', value: [1, 2, 3] });
    expect(a.membership_values).toEqual({ type: 'floats', value: [1, 2, NaN] });
    expect(a.nodes_missing_value_tracks_true).toEqual({ type: 'ints', value: [0, 0] });
    expect(a.n_targets).toEqual({ type: 'int', value: 2 });
  });

  it('TreeEnsemble-5: an unknown node mode code', () => {
    const m = parse(
      new ModelBuilder({ opsets: { '': 21, 'ai.onnx.ml': 5 } })
        .input('x', 'float', ['N', 1])
        .mlNode(
          'TreeEnsemble',
          ['x'],
          ['y'],
          {
            tree_roots: [0],
            nodes_featureids: [0],
            nodes_modes: attr.tensor({ type: 'uint8', dims: [1], values: [9] }),
            nodes_splits: attr.tensor({ type: 'float', dims: [1], values: [0.5] }),
            nodes_truenodeids: [0],
            nodes_falsenodeids: [1],
            nodes_trueleafs: [1],
            nodes_falseleafs: [1],
            leaf_targetids: [0, 0],
            leaf_weights: attr.tensor({ type: 'float', dims: [2], values: [1, 2] }),
          },
          'te',
        )
        .output('y', 'float'),
    );
    expect(refusal(m).message).toBe(
      'attribute "nodes_modes"=9 of operator "ai.onnx.ml.TreeEnsemble" (node "te", opset ai.onnx.ml 5) is not supported',
    );
  });

  it('LabelEncoder: keys, values and default always as tensors', () => {
    const v2 = normalize(ml('LabelEncoder', { keys_strings: ['a', 'b'], values_int64s: [5, 6] }, 2));
    expect(node(v2).attributes).toEqual({
      keys_tensor: { type: 'tensor', value: { name: 'keys_tensor', dataType: 'string', dims: [2], data: ['a', 'b'] } },
      values_tensor: { type: 'tensor', value: { name: 'values_tensor', dataType: 'int64', dims: [2], data: BigInt64Array.of(5n, 6n) } },
      default_tensor: { type: 'tensor', value: { name: 'default_tensor', dataType: 'int64', dims: [1], data: BigInt64Array.of(-1n) } },
    });
    const floats = normalize(ml('LabelEncoder', { keys_int64s: [1], values_floats: attr.floats([0.5]), default_float: attr.float(9) }, 2));
    expect(node(floats).attributes.default_tensor).toEqual({
      type: 'tensor',
      value: { name: 'default_tensor', dataType: 'float', dims: [1], data: Float32Array.of(9) },
    });
    const strings = normalize(ml('LabelEncoder', { keys_int64s: [1], values_strings: ['x'] }, 2));
    expect(node(strings).attributes.default_tensor).toEqual({
      type: 'tensor',
      value: { name: 'default_tensor', dataType: 'string', dims: [1], data: ['_Unused'] },
    });
    const v4 = normalize(
      ml(
        'LabelEncoder',
        {
          keys_strings: ['a'],
          values_tensor: attr.tensor({ type: 'int16', dims: [1], values: [3] }),
          default_tensor: attr.tensor({ type: 'int16', dims: [1], values: [42] }),
        },
        4,
      ),
    );
    expect(node(v4).attributes.values_tensor).toEqual({
      type: 'tensor',
      value: { name: 'values_tensor', dataType: 'int16', dims: [1], data: Int32Array.of(3) },
    });
    expect(node(v4).attributes.default_tensor).toEqual({
      type: 'tensor',
      value: { name: 'default_tensor', dataType: 'int16', dims: [1], data: Int32Array.of(42) },
    });
    expect(refusal(ml('LabelEncoder', { keys_strings: ['a', 'b'], values_int64s: [5] }, 2)).message).toBe(
      'node "n" (operator "ai.onnx.ml.LabelEncoder") has 2 keys but 1 values in "keys_strings" and "values_int64s"',
    );
  });

  it('the ML operators get their defaults', () => {
    expect(node(normalize(ml('Normalizer'))).attributes).toEqual({ norm: { type: 'string', value: 'MAX' } });
    expect(node(normalize(ml('Binarizer'))).attributes).toEqual({ threshold: { type: 'float', value: 0 } });
    expect(node(normalize(ml('OneHotEncoder', { cats_strings: ['a'] }))).attributes).toEqual({
      cats_strings: { type: 'strings', value: ['a'] },
      zeros: { type: 'int', value: 1 },
    });
    expect(node(normalize(ml('Imputer', { imputed_value_floats: attr.floats([0]) }))).attributes).toEqual({
      imputed_value_floats: { type: 'floats', value: [0] },
      replaced_value_float: { type: 'float', value: 0 },
      replaced_value_int64: { type: 'int', value: 0 },
    });
    expect(node(normalize(ml('LinearRegressor', { coefficients: attr.floats([1, 2, 3]) }))).attributes).toEqual({
      coefficients: { type: 'floats', value: [1, 2, 3] },
      intercepts: { type: 'floats', value: [] },
      post_transform: { type: 'string', value: 'NONE' },
      targets: { type: 'int', value: 1 },
    });
    expect(node(normalize(ml('ArrayFeatureExtractor', {}, 3, ['x', 'x']))).attributes).toEqual({});
  });

  it('does not modify the parsed model', () => {
    const m = single('Clip', { min: attr.float(0) }, { opsets: { '': 6 } });
    const before = structuredClone(m);
    normalize(m);
    expect(m).toEqual(before);
  });
});

describe('the table', () => {
  it('covers the operators DESIGN.md section 5 requires, plus Constant and Transpose', () => {
    const required = [
      'Gemm', 'MatMul', 'Add', 'Sub', 'Mul', 'Div', 'Relu', 'LeakyRelu', 'Sigmoid', 'Tanh', 'Softmax', 'Exp', 'Log',
      'Identity', 'Flatten', 'Reshape', 'Concat', 'Cast', 'Squeeze', 'Unsqueeze', 'Clip', 'BatchNormalization',
      'Constant', 'Transpose',
    ];
    const requiredMl = [
      'LinearRegressor', 'LinearClassifier', 'TreeEnsembleRegressor', 'TreeEnsembleClassifier', 'TreeEnsemble',
      'Scaler', 'Normalizer', 'Binarizer', 'LabelEncoder', 'OneHotEncoder', 'Imputer', 'ArrayFeatureExtractor', 'ZipMap',
    ];
    // Beyond DESIGN.md: scikit-learn's SVC / SVR family.
    const extraMl = ['SVMClassifier', 'SVMRegressor'];
    for (const op of required) expect(findOperator('', op), op).toBeDefined();
    for (const op of [...requiredMl, ...extraMl]) expect(findOperator('ai.onnx.ml', op), op).toBeDefined();
    expect(OPERATORS).toHaveLength(required.length + requiredMl.length + extraMl.length);
  });

  it('is consistent', () => {
    for (const op of OPERATORS) {
      const range = SUPPORTED_OPSETS[op.domain]!;
      expect(op.history, op.opType).toEqual([...op.history].sort((a, b) => a - b));
      for (const v of op.supported) expect(op.history, op.opType).toContain(v);
      expect(Math.max(...op.history), op.opType).toBeLessThanOrEqual(range.max);
      expect(op.canonical.length, op.opType).toBeGreaterThan(10);
    }
  });

  it('is available as plain data', () => {
    const table = operatorSupportTable();
    expect(structuredClone(table)).toEqual(table);
    expect(table.find((t) => t.operator === 'Gemm')).toMatchObject({
      domain: 'ai.onnx',
      versions: [1, 6, 7, 9, 11, 13],
      attributes: { alpha: { type: 'float', default: 1 }, transA: { type: 'int', default: 0, allowed: [0, 1] } },
    });
    expect(table.find((t) => t.operator === 'Softmax')!.attributes.axis).toMatchObject({ default: 'depends on the version' });
  });
});
