// The operator support table: every operator the native executor runs, one array per operator
// family (the same families as native/tabular/ops_*.cc), looked up by domain and op type.

import { qualifiedOpType } from '../parse.js';
import { CONSTANT_OPERATORS } from './constant.js';
import { ELEMENTWISE_OPERATORS } from './elementwise.js';
import { LINALG_OPERATORS } from './linalg.js';
import { ML_ENCODE_OPERATORS } from './ml-encode.js';
import { ML_LINEAR_OPERATORS } from './ml-linear.js';
import { ML_SVM_OPERATORS } from './ml-svm.js';
import { ML_TREE_OPERATORS } from './ml-tree.js';
import { NN_OPERATORS } from './nn.js';
import { SHAPE_OPERATORS } from './shape.js';
import type { AttributeRule, OperatorSpec } from './spec.js';

export const OPERATORS: readonly OperatorSpec[] = [
  ...ELEMENTWISE_OPERATORS,
  ...LINALG_OPERATORS,
  ...SHAPE_OPERATORS,
  ...NN_OPERATORS,
  ...CONSTANT_OPERATORS,
  ...ML_LINEAR_OPERATORS,
  ...ML_ENCODE_OPERATORS,
  ...ML_TREE_OPERATORS,
  ...ML_SVM_OPERATORS,
];

const BY_NAME = new Map(OPERATORS.map((op) => [qualifiedOpType(op.domain, op.opType), op]));

/** The table entry of an operator, by normalised domain and op type. */
export function findOperator(domain: string, opType: string): OperatorSpec | undefined {
  return BY_NAME.get(qualifiedOpType(domain, opType));
}

/** The table as plain data (no functions), e.g. for documentation or an API response. */
export function operatorSupportTable(): {
  operator: string;
  domain: string;
  versions: number[];
  attributes: Record<string, Omit<AttributeRule, 'default'> & { default?: unknown }>;
  canonical: string;
}[] {
  return OPERATORS.map((op) => ({
    operator: qualifiedOpType(op.domain, op.opType),
    domain: op.domain === '' ? 'ai.onnx' : op.domain,
    versions: [...op.supported],
    attributes: Object.fromEntries(
      Object.entries(op.attributes).map(([name, rule]) => {
        const { default: def, ...rest } = rule;
        return [
          name,
          def === undefined ? rest : { ...rest, default: typeof def === 'function' ? 'depends on the version' : def.value },
        ];
      }),
    ),
    canonical: op.canonical,
  }));
}
