// What one row of the operator support table says (OperatorSpec, AttributeRule), the context a
// row's own normalizer works in (NodeContext), and the building blocks the families' rows share.
// The rows themselves live in one file per operator family, as native/tabular/ops_*.cc does;
// ../normalize.ts reads them.

import type { NormalizedNode, OnnxAttribute, OnnxAttributeType, OnnxTensor } from '../types.js';

/** Operator set versions we accept, by normalised domain ('' is ai.onnx). */
export const SUPPORTED_OPSETS: Readonly<Record<string, { readonly min: number; readonly max: number }>> = {
  '': { min: 1, max: 25 },
  'ai.onnx.ml': { min: 1, max: 5 },
};

export interface AttributeRule {
  type: OnnxAttributeType;
  /** The attribute's type in the operator's versions up to `until` when it differed then. */
  legacy?: { until: number; type: OnnxAttributeType };
  /** First operator version (since-version) that has the attribute; default: all. */
  since?: number;
  /** Last operator version (since-version) that has it; default: all later ones. */
  until?: number;
  required?: boolean;
  /** Filled in by normalize when the node leaves the attribute out. */
  default?: OnnxAttribute | ((version: number) => OnnxAttribute);
  /** The values we implement (of the scalar, or of each element of a list). */
  allowed?: readonly (string | number)[];
  /** Accepted and checked, but left out of the canonical form: the executor ignores it. */
  drop?: boolean;
  /** Valid ONNX, but any use of it is refused (e.g. the legacy broadcasting `axis`). */
  refused?: boolean;
  doc?: string;
}

export interface NodeContext {
  /** The node being normalised: attributes already checked, defaults filled, dropped ones gone. */
  node: NormalizedNode;
  version: number;
  opset: number;
  /** The value of an initializer or of an already folded Constant, if `name` is one. */
  constant(name: string): OnnxTensor | undefined;
  /** Adds an initializer with a fresh name derived from `base`; returns the name. */
  addInitializer(base: string, tensor: Omit<OnnxTensor, 'name'>): string;
  /** Folds the node away, its single output becoming this initializer (Constant). */
  fold(tensor: Omit<OnnxTensor, 'name'>): void;
  /** Throws UnsupportedOperatorError: `operator ... is not supported: <reason>`. */
  unsupported(reason: string): never;
  /** Throws UnsupportedOperatorError: `attribute "<name>"=<value> of operator ... is not supported`. */
  unsupportedAttribute(name: string, value?: string): never;
  /** Throws OnnxModelError: `node "<name>" (operator "<op>") <what>`. */
  invalid(what: string): never;
}

export interface OperatorSpec {
  /** '' for ai.onnx. */
  domain: '' | 'ai.onnx.ml';
  opType: string;
  /** Every since-version of the operator in ONNX up to the newest opset we know. */
  history: readonly number[];
  /** The since-versions we support. */
  supported: readonly number[];
  /** Why a known version outside `supported` is refused (ends the error message). */
  unsupportedVersion?: (version: number) => string;
  /** [min, max] number of inputs, by operator version. */
  inputs: (version: number) => readonly [number, number];
  outputs: readonly [number, number];
  attributes: Readonly<Record<string, AttributeRule>>;
  /** Groups of attributes of which exactly one must be set. */
  exactlyOne?: readonly (readonly string[])[];
  /** The canonical form normalize produces, for the executor's authors. */
  canonical: string;
  normalize?: (ctx: NodeContext) => void;
}

export const ML = 'ai.onnx.ml' as const;

// ---- attribute values ----

export const f = (value: number): OnnxAttribute => ({ type: 'float', value });
export const i = (value: number): OnnxAttribute => ({ type: 'int', value });
export const s = (value: string): OnnxAttribute => ({ type: 'string', value });
export const floats = (value: number[]): OnnxAttribute => ({ type: 'floats', value });
export const ints = (value: number[]): OnnxAttribute => ({ type: 'ints', value });

// ---- input counts ----

export const fixed =
  (min: number, max: number) =>
  (): readonly [number, number] => [min, max];
const ONE = fixed(1, 1);
export const TWO = fixed(2, 2);

// ---- rows ----

/** What a row spells out; the fields left out take operatorSpec's defaults. */
type RowFields = Omit<OperatorSpec, 'domain' | 'opType' | 'history' | 'supported' | 'inputs' | 'outputs' | 'attributes'> &
  Partial<Pick<OperatorSpec, 'supported' | 'inputs' | 'outputs' | 'attributes'>>;

/**
 * One row of the table. Unless the row says otherwise, every version in `history` is supported,
 * the operator takes one input and has one output, and it has no attributes.
 */
export function operatorSpec(
  domain: OperatorSpec['domain'],
  opType: string,
  history: readonly number[],
  fields: RowFields,
): OperatorSpec {
  return { domain, opType, history, supported: history, inputs: ONE, outputs: [1, 1], attributes: {}, ...fields };
}

/** Version 1's memory-reuse hint, accepted and ignored by the operators that had it. */
export const CONSUMED_INPUTS: AttributeRule = {
  type: 'ints',
  until: 1,
  drop: true,
  doc: 'legacy memory-reuse hint of version 1, ignored',
};

/** The post_transform values of the linear and tree ML operators (TreeEnsemble-5's codes, in order). */
export const POST_TRANSFORMS = ['NONE', 'SOFTMAX', 'LOGISTIC', 'SOFTMAX_ZERO', 'PROBIT'] as const;

/** A 1-D int64 tensor of `values` (`exact` holds the decimals of values outside ±(2^53 - 1)). */
export function int64Tensor(values: readonly number[], exact?: readonly string[]): Omit<OnnxTensor, 'name'> {
  return {
    dataType: 'int64',
    dims: [values.length],
    data: BigInt64Array.from(values, (v, k) => BigInt(exact?.[k] ?? v)),
  };
}
