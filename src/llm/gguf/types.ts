// The shapes of a parsed GGUF file: metadata values with their GGUF types, and tensor infos.
// Numeric arrays come back as typed arrays (a 150k-entry scores array is one Float32Array, not
// 150k boxed numbers); 64-bit integers as bigint, so nothing is silently rounded.

import type { GgmlTypeName } from './ggml-types.js';

/** GGUF metadata value types (gguf.h `enum gguf_type`). */
export const GgufValueType = {
  UINT8: 0,
  INT8: 1,
  UINT16: 2,
  INT16: 3,
  UINT32: 4,
  INT32: 5,
  FLOAT32: 6,
  BOOL: 7,
  STRING: 8,
  ARRAY: 9,
  UINT64: 10,
  INT64: 11,
  FLOAT64: 12,
} as const;

export type GgufValueTypeName = keyof typeof GgufValueType;
export type GgufValueTypeId = (typeof GgufValueType)[GgufValueTypeName];

export type GgufScalar = number | bigint | boolean | string;

export type GgufArray =
  | Uint8Array
  | Int8Array
  | Uint16Array
  | Int16Array
  | Uint32Array
  | Int32Array
  | Float32Array
  | Float64Array
  | BigUint64Array
  | BigInt64Array
  | boolean[]
  | string[];

export type GgufValue = GgufScalar | GgufArray;

/** One metadata entry. `elementType` is set for arrays only. */
export interface GgufEntry {
  key: string;
  type: GgufValueTypeName;
  elementType?: Exclude<GgufValueTypeName, 'ARRAY'>;
  value: GgufValue;
}

export interface GgufTensorInfo {
  name: string;
  /** ggml order: dims[0] is the contiguous dimension, so [n_embd, n_vocab] is n_vocab rows. */
  dims: number[];
  type: GgmlTypeName;
  typeId: number;
  /** Offset from the start of the tensor data section, as stored (a multiple of the alignment). */
  offset: number;
  /** Offset from the start of the file. */
  fileOffset: number;
  nElements: number;
  byteSize: number;
}

export interface GgufFile {
  version: 2 | 3;
  fileSize: number;
  /** `general.alignment`, or 32. */
  alignment: number;
  /** File offset where the tensor data section starts (aligned). */
  dataOffset: number;
  /** Metadata in file order. */
  entries: GgufEntry[];
  tensors: GgufTensorInfo[];
}
