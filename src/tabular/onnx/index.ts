// The ONNX model layer: parse (parse.ts), check and normalise for the executor (normalize.ts, by
// the operator support table in operators/), and derive a build's feature columns and output names
// (features.ts). See README.md here.

export * from './types.js';
export { OnnxModelError, UnsupportedOperatorError, type UnsupportedOperatorDetails } from './errors.js';
export { parseOnnxModel, parseTensorProto, normalizeDomain, qualifiedOpType } from './parse.js';
export { OPERATORS, findOperator, operatorSupportTable } from './operators/index.js';
export { SUPPORTED_OPSETS, type AttributeRule, type NodeContext, type OperatorSpec } from './operators/spec.js';
export { normalize, resolveVersion, validateSupported } from './normalize.js';
export {
  FEATURE_NAMES_METADATA_KEY,
  deriveFeatures,
  type DeriveFeaturesOptions,
  type FeatureColumn,
  type FeatureInput,
  type FeatureOutput,
  type FeatureSchema,
} from './features.js';
export { inputsHandlingMissingValues } from './missing-values.js';
export { DATA_TYPE_CODES } from './tensor.js';
