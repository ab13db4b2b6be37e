// The GGUF metadata layer: read a file's header, metadata and tensor infos (never its tensor data),
// then ask typed questions of it. See README.md.

export { GgufError } from './errors.js';
export { readGguf, parseGguf, type GgufReadLimits } from './reader.js';
export { GgufMetadata } from './metadata.js';
export {
  architecture,
  chatTemplate,
  contextLength,
  dominantTensorType,
  license,
  modelInfo,
  modelName,
  parameterCount,
  quantization,
  type GgufModelInfo,
} from './model-info.js';
export {
  ENGINE_TENSOR_TYPES,
  GgmlType,
  fileTypeName,
  ggmlTensorBytes,
  ggmlTypeTraits,
  requireGgmlType,
  type GgmlTypeId,
  type GgmlTypeName,
  type GgmlTypeTraits,
} from './ggml-types.js';
export {
  GgufValueType,
  type GgufArray,
  type GgufEntry,
  type GgufFile,
  type GgufScalar,
  type GgufTensorInfo,
  type GgufValue,
  type GgufValueTypeId,
  type GgufValueTypeName,
} from './types.js';
