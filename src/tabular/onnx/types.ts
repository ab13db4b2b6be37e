// The normalised, plain-data description of an ONNX model that the parser returns. It holds no
// protobuf objects: strings, numbers, arrays, typed arrays and plain objects only, so it can be
// copied, structured-cloned, or handed to the native executor as is.

/** Element types the parser can represent (ONNX TensorProto.DataType names, lower case). */
export type ElementType =
  | 'float'
  | 'double'
  | 'float16'
  | 'bfloat16'
  | 'int8'
  | 'uint8'
  | 'int16'
  | 'uint16'
  | 'int32'
  | 'uint32'
  | 'int64'
  | 'uint64'
  | 'bool'
  | 'string';

/**
 * Tensor contents, by element type:
 * - float -> Float32Array; double -> Float64Array;
 * - float16, bfloat16 -> Float32Array (decoded to float32 values; `dataType` keeps the stored type);
 * - int8, uint8, int16, uint16, int32, bool -> Int32Array (bool as 0/1);
 * - uint32 -> Uint32Array;
 * - int64 -> BigInt64Array; uint64 -> BigUint64Array (exact; no precision is lost);
 * - string -> string[] (decoded from UTF-8).
 * Elements are in row-major order; a scalar (dims []) has one element.
 */
export type TensorData =
  | Float32Array
  | Float64Array
  | Int32Array
  | Uint32Array
  | BigInt64Array
  | BigUint64Array
  | string[];

export interface OnnxTensor {
  /** The tensor's name ('' for unnamed tensors such as some attribute values). */
  name: string;
  dataType: ElementType;
  dims: number[];
  data: TensorData;
}

/** A dimension: a fixed size, a symbolic name (dim_param), or null when the file leaves it unknown. */
export type Dim = number | string | null;

export interface OnnxTensorValueInfo {
  name: string;
  kind: 'tensor';
  elemType: ElementType;
  /** null when the file gives no shape at all (rank unknown). */
  shape: Dim[] | null;
}

/** seq(map(K, tensor(V))): what ZipMap produces, e.g. seq(map(int64, float)). */
export interface OnnxSequenceMapValueInfo {
  name: string;
  kind: 'sequence-map';
  keyType: 'int64' | 'string';
  valueType: ElementType;
}

/** A graph output that the file declares without a type (some sklearn-onnx pipelines do). */
export interface OnnxUnknownValueInfo {
  name: string;
  kind: 'unknown';
}

export type OnnxValueInfo = OnnxTensorValueInfo | OnnxSequenceMapValueInfo | OnnxUnknownValueInfo;

/** What the parser keeps of a graph-valued attribute (If/Loop/Scan bodies): enough to report it. */
export interface OnnxSubgraphSummary {
  name: string;
  /** Qualified operator types used directly in the subgraph, in first-use order. */
  opTypes: string[];
  nodeCount: number;
}

export type OnnxAttribute =
  | { type: 'float'; value: number }
  /** `exact` holds the decimal int64 when the value is outside ±(2^53 - 1) and `value` is rounded. */
  | { type: 'int'; value: number; exact?: string }
  | { type: 'string'; value: string }
  | { type: 'tensor'; value: OnnxTensor }
  | { type: 'graph'; value: OnnxSubgraphSummary }
  | { type: 'floats'; value: number[] }
  | { type: 'ints'; value: number[]; exact?: string[] }
  | { type: 'strings'; value: string[] }
  | { type: 'tensors'; value: OnnxTensor[] }
  | { type: 'graphs'; value: OnnxSubgraphSummary[] }
  | { type: 'sparse_tensor' | 'sparse_tensors' | 'type_proto' | 'type_protos'; value: null };

export type OnnxAttributeType = OnnxAttribute['type'];

export interface OnnxNode {
  /** The node's name; `<op_type>_<index in the file>` when the file leaves it empty. */
  name: string;
  opType: string;
  /** '' for the default domain (ai.onnx), otherwise the domain as written, e.g. 'ai.onnx.ml'. */
  domain: string;
  /** Value names; '' marks an omitted optional input. */
  inputs: string[];
  /** Value names; '' marks an omitted optional output. */
  outputs: string[];
  attributes: Record<string, OnnxAttribute>;
}

export interface OnnxGraph<N extends OnnxNode = OnnxNode> {
  name: string;
  /** The real inputs: graph inputs that are also initializers are left out (they are constants). */
  inputs: OnnxValueInfo[];
  outputs: OnnxValueInfo[];
  initializers: OnnxTensor[];
  /** In a topological order (the file's order whenever the file's order is one). */
  nodes: N[];
  /** Declared types of intermediate values (graph.value_info), where representable. */
  valueInfo: OnnxValueInfo[];
}

export interface OnnxModel<N extends OnnxNode = OnnxNode> {
  irVersion: number;
  /** Imported operator sets by normalised domain: '' is ai.onnx, 'ai.onnx.ml' the ML domain. */
  opsetImports: Record<string, number>;
  producerName: string;
  producerVersion: string;
  /** ModelProto.metadata_props. */
  metadata: Record<string, string>;
  /** Qualified names (`domain.name`, or `name` for the default domain) of model-local functions. */
  functions: string[];
  graph: OnnxGraph<N>;
}

/** A node after `normalize`: its attributes are in the canonical form of its row in operators/. */
export interface NormalizedNode extends OnnxNode {
  /** The operator version that applies (the highest since-version <= the imported opset). */
  version: number;
}

export type NormalizedModel = OnnxModel<NormalizedNode>;
