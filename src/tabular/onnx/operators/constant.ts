// Constant, the one operator with no native file: normalize folds every Constant node into an
// initializer named after its output, so the executor never sees one.

import { fixed, int64Tensor, operatorSpec, type OperatorSpec } from './spec.js';

export const CONSTANT_OPERATORS: readonly OperatorSpec[] = [
  operatorSpec('', 'Constant', [1, 9, 11, 12, 13, 19, 21, 23, 24, 25], {
    inputs: fixed(0, 0),
    attributes: {
      value: { type: 'tensor' },
      sparse_value: { type: 'sparse_tensor', since: 11, refused: true },
      value_float: { type: 'float', since: 12 },
      value_floats: { type: 'floats', since: 12 },
      value_int: { type: 'int', since: 12 },
      value_ints: { type: 'ints', since: 12 },
      value_string: { type: 'string', since: 12 },
      value_strings: { type: 'strings', since: 12 },
    },
    exactlyOne: [
      ['value', 'sparse_value', 'value_float', 'value_floats', 'value_int', 'value_ints', 'value_string', 'value_strings'],
    ],
    canonical: 'folded by normalize into an initializer named after its output; the executor never sees it',
    normalize(ctx) {
      const [name, a] = Object.entries(ctx.node.attributes)[0] ?? [];
      if (name === undefined || a === undefined) return ctx.invalid('has no value');
      switch (a.type) {
        case 'tensor':
          return ctx.fold(a.value);
        case 'float':
          return ctx.fold({ dataType: 'float', dims: [], data: Float32Array.of(a.value) });
        case 'floats':
          return ctx.fold({ dataType: 'float', dims: [a.value.length], data: Float32Array.from(a.value) });
        case 'int':
          return ctx.fold({ dataType: 'int64', dims: [], data: BigInt64Array.of(BigInt(a.exact ?? a.value)) });
        case 'ints':
          return ctx.fold(int64Tensor(a.value, a.exact));
        case 'string':
          return ctx.fold({ dataType: 'string', dims: [], data: [a.value] });
        case 'strings':
          return ctx.fold({ dataType: 'string', dims: [a.value.length], data: [...a.value] });
        default:
          return ctx.unsupportedAttribute(name);
      }
    },
  }),
];
