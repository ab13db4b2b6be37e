// Inputs, outputs and descriptions of the native tabular executor.
import type { ElementType } from '../onnx/types.js';

/**
 * Input data by the input's declared element type:
 * float -> Float32Array; double -> Float64Array; int64 -> BigInt64Array; uint64 -> BigUint64Array;
 * uint32 -> Uint32Array; int8, uint8, int16, uint16, int32, bool -> Int32Array (range-checked);
 * string -> string[]. Row-major; the data is copied before the call returns.
 */
export type TabularInputData =
  | Float32Array
  | Float64Array
  | BigInt64Array
  | BigUint64Array
  | Int32Array
  | Uint32Array
  | string[];

export interface TabularInput {
  /** A graph input name. */
  name: string;
  /** The shape; its product must equal data.length. The first dimension is the batch (any size). */
  dims: number[];
  data: TabularInputData;
}

/** Element types the executor produces (float16 / bfloat16 values are computed as float). */
export type TabularElementType = Exclude<ElementType, 'float16' | 'bfloat16'>;

/** Output data, with the same conventions as TabularInputData (and as src/tabular/onnx tensors). */
export type TabularOutputData = TabularInputData;

export interface TabularOutput {
  /** The graph output's name; outputs come in graph-output order. */
  name: string;
  dataType: TabularElementType;
  dims: number[];
  data: TabularOutputData;
  /**
   * Only on a ZipMap output (seq(map(int64|string, float))): the class labels, one per column of
   * `data`, which is then the [N, C] float probability tensor. The host builds the N maps.
   */
  mapKeys?: BigInt64Array | string[];
}

export type TabularValueInfo =
  | { name: string; kind: 'tensor'; dataType: TabularElementType; shape: (number | null)[] | null }
  | { name: string; kind: 'sequence-map'; keyType: 'int64' | 'string'; valueType: TabularElementType }
  | { name: string; kind: 'unknown' };

export interface TabularModelInfo {
  disposed: boolean;
  /** Absent once disposed. */
  inputs?: TabularValueInfo[];
  outputs?: TabularValueInfo[];
  /** Number of nodes. */
  nodes?: number;
  /** Qualified operators in first-use order, e.g. "Gemm", "ai.onnx.ml.TreeEnsembleClassifier". */
  operators?: string[];
  /** Bytes of initializer data held by the compiled model. */
  initializerBytes?: number;
  /** Threads each run may use. */
  threads?: number;
  /** Where float Gemm / MatMul products run ('cuda': from cudaMinRows rows on). */
  device?: 'cpu' | 'cuda';
  /** CUDA only: the device's name. */
  deviceName?: string;
  /** CUDA only: the crossover batch size. */
  cudaMinRows?: number;
  /** CUDA only: Gemm / MatMul layers that run as device chains (weights resident on the device). */
  deviceLayers?: number;
  /** CUDA only: bytes of weights and biases kept on the device. */
  deviceBytes?: number;
}
