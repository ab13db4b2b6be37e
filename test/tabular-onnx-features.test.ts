// deriveFeatures: feature names and their mapping onto graph inputs, output names, and the exact
// message of every refusal.
import { describe, expect, it } from 'vitest';
import { deriveFeatures } from '../src/tabular/onnx/features.js';
import { OnnxModelError, parseOnnxModel } from '../src/tabular/onnx/parse.js';
import type { Dim, ElementType, OnnxModel } from '../src/tabular/onnx/types.js';
import { mlpModel, ModelBuilder } from './helpers/onnx-builder.js';

/** A model whose inputs are each passed through Identity to an output. */
function withInputs(inputs: [string, ElementType, Dim[] | undefined][], metadata?: Record<string, string>): OnnxModel {
  const b = new ModelBuilder(metadata ? { metadata } : {});
  for (const [name, type, shape] of inputs) b.input(name, type, shape);
  for (const [name, type] of inputs) b.node('Identity', [name], [`${name}_out`]).output(`${name}_out`, type);
  return parseOnnxModel(b.toBytes());
}

function refusal(fn: () => unknown): string {
  try {
    fn();
  } catch (err) {
    expect(err).toBeInstanceOf(OnnxModelError);
    return (err as Error).message;
  }
  throw new Error('expected a refusal');
}

const mlp = parseOnnxModel(mlpModel().toBytes());

describe('deriveFeatures', () => {
  it('maps the names given to the columns of a single [N, F] input', () => {
    const schema = deriveFeatures(mlp, { featureNames: ['a', 'b', 'c', 'd'] });
    expect(schema.features).toEqual(
      ['a', 'b', 'c', 'd'].map((name, column) => ({ name, elemType: 'float', input: 'x', inputIndex: 0, column })),
    );
    expect(schema.inputs).toEqual([
      { name: 'x', elemType: 'float', shape: ['N', 4], rank: 2, width: 4, batchSize: null, firstFeature: 0 },
    ]);
    expect(schema.featureNamesFrom).toBe('option');
    expect(schema.outputs).toEqual([
      { name: 'probs', graphOutput: 'probs', info: { name: 'probs', kind: 'tensor', elemType: 'float', shape: ['N', 2] } },
    ]);
    expect(schema.outputNamesFrom).toBe('graph');
  });

  it('refuses a single [N, F] input without names, asking for --feature-names', () => {
    expect(refusal(() => deriveFeatures(mlp))).toBe(
      'the model\'s input "x" of shape [N, 4] does not name its 4 features; pass --feature-names with 4 comma-separated names',
    );
  });

  it('refuses a wrong number of names', () => {
    expect(refusal(() => deriveFeatures(mlp, { featureNames: ['a', 'b', 'c'] }))).toBe(
      '--feature-names gives 3 names but the model takes 4 features (input "x" of shape [N, 4])',
    );
  });

  it('refuses empty and duplicate names', () => {
    expect(refusal(() => deriveFeatures(mlp, { featureNames: ['a', 'b', 'a', 'd'] }))).toBe(
      'feature name "a" is given twice',
    );
    expect(refusal(() => deriveFeatures(mlp, { featureNames: ['a', '', 'c', 'd'] }))).toBe('feature name 2 is empty');
  });

  it('names features after the inputs when each input is one feature', () => {
    const m = withInputs([
      ['pclass', 'string', [null, 1]],
      ['age', 'float', ['N', 1]],
      ['fare', 'double', ['N']],
      ['count', 'int64', [1, 1]],
    ]);
    const schema = deriveFeatures(m);
    expect(schema.featureNamesFrom).toBe('inputs');
    expect(schema.features).toEqual([
      { name: 'pclass', elemType: 'string', input: 'pclass', inputIndex: 0, column: 0 },
      { name: 'age', elemType: 'float', input: 'age', inputIndex: 1, column: 0 },
      { name: 'fare', elemType: 'double', input: 'fare', inputIndex: 2, column: 0 },
      { name: 'count', elemType: 'int64', input: 'count', inputIndex: 3, column: 0 },
    ]);
    expect(schema.inputs.map((i) => [i.rank, i.width, i.batchSize])).toEqual([
      [2, 1, null],
      [2, 1, null],
      [1, 1, null],
      [2, 1, 1],
    ]);
    // Names given on the command line win over the input names.
    expect(deriveFeatures(m, { featureNames: ['a', 'b', 'c', 'd'] }).features.map((f) => [f.name, f.input])).toEqual([
      ['a', 'pclass'],
      ['b', 'age'],
      ['c', 'fare'],
      ['d', 'count'],
    ]);
  });

  it('lays several multi-column inputs side by side', () => {
    const m = withInputs([
      ['num', 'float', ['N', 3]],
      ['cat', 'string', ['N', 1]],
    ]);
    expect(refusal(() => deriveFeatures(m))).toBe(
      'the model\'s inputs "num" [N, 3], "cat" [N, 1] do not name its 4 features; pass --feature-names with 4 comma-separated names',
    );
    const schema = deriveFeatures(m, { featureNames: ['a', 'b', 'c', 'color'] });
    expect(schema.features.map((f) => [f.name, f.input, f.column, f.elemType])).toEqual([
      ['a', 'num', 0, 'float'],
      ['b', 'num', 1, 'float'],
      ['c', 'num', 2, 'float'],
      ['color', 'cat', 0, 'string'],
    ]);
    expect(schema.inputs.map((i) => i.firstFeature)).toEqual([0, 3]);
  });

  it('reads names from the model metadata: a JSON array or a comma-separated list', () => {
    const json = withInputs([['x', 'float', [null, 3]]], { feature_names: '["a", "b", "c"]' });
    expect(deriveFeatures(json).features.map((f) => f.name)).toEqual(['a', 'b', 'c']);
    expect(deriveFeatures(json).featureNamesFrom).toBe('metadata');
    const csv = withInputs([['x', 'float', [null, 3]]], { feature_names: 'a, b ,c' });
    expect(deriveFeatures(csv).features.map((f) => f.name)).toEqual(['a', 'b', 'c']);
    const wrong = withInputs([['x', 'float', [null, 3]]], { feature_names: 'a,b' });
    expect(refusal(() => deriveFeatures(wrong))).toBe(
      'the model\'s metadata "feature_names" gives 2 names but the model takes 3 features (input "x" of shape [?, 3])',
    );
    const bad = withInputs([['x', 'float', [null, 3]]], { feature_names: '["a", 1]' });
    expect(refusal(() => deriveFeatures(bad))).toBe('the model\'s metadata "feature_names" is not an array of strings');
    const twice = withInputs([['x', 'float', [null, 2]]], { feature_names: 'a,a' });
    expect(refusal(() => deriveFeatures(twice))).toBe('feature name "a" is given twice in the model\'s metadata "feature_names"');
  });

  it('takes the width of an input whose last dimension is open from the names', () => {
    const m = withInputs([['input', 'float', [null, null]]]);
    expect(refusal(() => deriveFeatures(m))).toBe(
      'the model\'s input "input" of shape [?, ?] does not say how many features it takes; pass --feature-names with one name per feature',
    );
    const schema = deriveFeatures(m, { featureNames: ['p', 'q', 'r'] });
    expect(schema.inputs[0]).toMatchObject({ shape: [null, 3], width: 3 });
    expect(schema.features.map((f) => f.column)).toEqual([0, 1, 2]);
    const unshaped = withInputs([['input', 'float', undefined]]);
    expect(deriveFeatures(unshaped, { featureNames: ['p', 'q'] }).inputs[0]).toMatchObject({ shape: [null, 2], width: 2 });
    const two = withInputs([
      ['a', 'float', ['N', 'F']],
      ['b', 'float', ['N', 'G']],
    ]);
    expect(refusal(() => deriveFeatures(two, { featureNames: ['p', 'q'] }))).toBe(
      'the model\'s inputs "a" [N, F], "b" [N, G] leave the number of features of more than one input open, so --feature-names cannot be matched to them',
    );
  });

  it('accepts [N, 1, ..., 1, F] inputs and records a fixed batch size', () => {
    const m = withInputs([['input', 'float', [1, 1, 1, 5]]]);
    const schema = deriveFeatures(m, { featureNames: ['a', 'b', 'c', 'd', 'e'] });
    expect(schema.inputs[0]).toMatchObject({ rank: 4, width: 5, batchSize: 1, shape: [1, 1, 1, 5] });
  });

  it('refuses inputs that are not tabular', () => {
    expect(refusal(() => deriveFeatures(withInputs([['img', 'float', ['N', 3, 4]]])))).toBe(
      'input "img" has shape [N, 3, 4]; tabular inputs are [N] or [N, F] (dimensions between N and F must be 1)',
    );
    expect(refusal(() => deriveFeatures(withInputs([['s', 'float', []]])))).toBe(
      'input "s" is a scalar; tabular inputs are [N] or [N, F]',
    );
  });

  it('renames outputs with outputNames, one per graph output', () => {
    const m = withInputs([
      ['a', 'float', ['N', 1]],
      ['b', 'float', ['N', 1]],
    ]);
    const schema = deriveFeatures(m, { outputNames: ['score', 'other'] });
    expect(schema.outputs.map((o) => [o.name, o.graphOutput])).toEqual([
      ['score', 'a_out'],
      ['other', 'b_out'],
    ]);
    expect(schema.outputNamesFrom).toBe('option');
    expect(refusal(() => deriveFeatures(m, { outputNames: ['score'] }))).toBe(
      '--output-names gives 1 name but the model has 2 outputs (a_out, b_out)',
    );
    expect(refusal(() => deriveFeatures(m, { outputNames: ['s', 's'] }))).toBe('output name "s" is given twice');
  });

  it('refuses a model without inputs', () => {
    const m = parseOnnxModel(
      new ModelBuilder().node('Constant', [], ['y'], { value_ints: [1] }).output('y', 'int64').toBytes(),
    );
    expect(refusal(() => deriveFeatures(m))).toBe('the model has no inputs to feed features into');
  });
});
