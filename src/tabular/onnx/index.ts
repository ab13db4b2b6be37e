// The ONNX model layer: parse (parse.ts), check and normalise for the executor (operators.ts),
// and derive a build's feature columns and output names (features.ts). See README.md here.

export * from './types.js';
export { OnnxModelError, UnsupportedOperatorError, type UnsupportedOperatorDetails } from './errors.js';
export { parseOnnxModel, parseTensorProto, normalizeDomain, qualifiedOpType } from './parse.js';
export {
  OPERATORS,
  SUPPORTED_OPSETS,
  findOperator,
  normalize,
  operatorSupportTable,
  resolveVersion,
  validateSupported,
  type AttributeRule,
  type NodeContext,
  type OperatorSpec,
} from './operators.js';
export {
  FEATURE_NAMES_METADATA_KEY,
  deriveFeatures,
  type DeriveFeaturesOptions,
  type FeatureColumn,
  type FeatureInput,
  type FeatureOutput,
  type FeatureSchema,
} from './features.js';
export { DATA_TYPE_CODES } from './tensor.js';
