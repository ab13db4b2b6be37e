// The protobufjs types of our ONNX subset (schema.ts) and the shapes of the messages they decode.
// protobufjs decodes proto2 int64 fields as Long objects (the `long` package is installed with it)
// or as numbers; `int64ToBigInt` and friends accept both without importing `long` ourselves.

import protobuf from 'protobufjs';
import { ONNX_SCHEMA } from './schema.js';

const root = protobuf.Root.fromJSON(ONNX_SCHEMA as unknown as protobuf.INamespace);

export const ModelProto = root.lookupType('onnx.ModelProto');
export const TensorProto = root.lookupType('onnx.TensorProto');
export const GraphProto = root.lookupType('onnx.GraphProto');
export const NodeProto = root.lookupType('onnx.NodeProto');
export const AttributeProto = root.lookupType('onnx.AttributeProto');

/** An int64 as protobufjs hands it over: a number, or a Long-like {low, high, unsigned}. */
export type PbInt64 = number | { low: number; high: number; unsigned?: boolean };

export interface PbStringStringEntry {
  key: string;
  value: string;
}

export interface PbOperatorSetId {
  domain: string;
  version: PbInt64;
}

export interface PbTensor {
  dims: PbInt64[];
  dataType: number;
  segment: { begin: PbInt64; end: PbInt64 } | null;
  floatData: number[];
  int32Data: number[];
  stringData: Uint8Array[];
  int64Data: PbInt64[];
  name: string;
  docString: string;
  rawData: Uint8Array;
  externalData: PbStringStringEntry[];
  dataLocation: number;
  doubleData: number[];
  uint64Data: PbInt64[];
}

export interface PbSparseTensor {
  values: PbTensor | null;
  indices: PbTensor | null;
  dims: PbInt64[];
}

export interface PbDimension {
  dimValue: PbInt64;
  dimParam: string;
  /** The set member of the `value` oneof, if any. */
  value?: 'dimValue' | 'dimParam';
}

export interface PbTensorShape {
  dim: PbDimension[];
}

export interface PbType {
  tensorType: { elemType: number; shape: PbTensorShape | null } | null;
  sequenceType: { elemType: PbType | null } | null;
  mapType: { keyType: number; valueType: PbType | null } | null;
  optionalType: { elemType: PbType | null } | null;
  sparseTensorType: { elemType: number; shape: PbTensorShape | null } | null;
  opaqueType: { domain: string; name: string } | null;
  value?: string;
}

export interface PbValueInfo {
  name: string;
  type: PbType | null;
  docString: string;
}

export interface PbAttribute {
  name: string;
  refAttrName: string;
  docString: string;
  type: number;
  f: number;
  i: PbInt64;
  s: Uint8Array;
  t: PbTensor | null;
  g: PbGraph | null;
  sparseTensor: PbSparseTensor | null;
  tp: PbType | null;
  floats: number[];
  ints: PbInt64[];
  strings: Uint8Array[];
  tensors: PbTensor[];
  graphs: PbGraph[];
  sparseTensors: PbSparseTensor[];
  typeProtos: PbType[];
}

export interface PbNode {
  input: string[];
  output: string[];
  name: string;
  opType: string;
  domain: string;
  overload: string;
  attribute: PbAttribute[];
  docString: string;
}

export interface PbGraph {
  node: PbNode[];
  name: string;
  initializer: PbTensor[];
  sparseInitializer: PbSparseTensor[];
  docString: string;
  input: PbValueInfo[];
  output: PbValueInfo[];
  valueInfo: PbValueInfo[];
}

export interface PbFunction {
  name: string;
  domain: string;
  overload: string;
}

export interface PbModel {
  irVersion: PbInt64;
  opsetImport: PbOperatorSetId[];
  producerName: string;
  producerVersion: string;
  domain: string;
  modelVersion: PbInt64;
  docString: string;
  graph: PbGraph | null;
  metadataProps: PbStringStringEntry[];
  functions: PbFunction[];
}

/** Whether a decoded message carries a field (proto2 presence: protobufjs sets own properties). */
export function has(message: object, field: string): boolean {
  return Object.prototype.hasOwnProperty.call(message, field);
}

export function int64ToBigInt(v: PbInt64, unsigned = false): bigint {
  if (typeof v === 'number') return BigInt(Math.trunc(v));
  const bits = (BigInt(v.high >>> 0) << 32n) | BigInt(v.low >>> 0);
  return unsigned || v.unsigned ? BigInt.asUintN(64, bits) : BigInt.asIntN(64, bits);
}

/** The int64 as a number, or null when it is outside the safe-integer range. */
export function int64ToSafeNumber(v: PbInt64): number | null {
  if (typeof v === 'number') return Number.isSafeInteger(v) ? v : null;
  const b = int64ToBigInt(v);
  return b >= BigInt(Number.MIN_SAFE_INTEGER) && b <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(b) : null;
}
