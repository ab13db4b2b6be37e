// Element types and TensorProto decoding: raw_data (little-endian) or the typed repeated fields,
// into the typed arrays documented on TensorData, with the element count checked against dims.

import { OnnxModelError } from './errors.js';
import { has, int64ToBigInt, int64ToSafeNumber, type PbInt64, type PbTensor } from './proto.js';
import type { ElementType, OnnxTensor, TensorData } from './types.js';

/** TensorProto.DataType codes, by the official onnx.proto. */
export const DATA_TYPE_CODES: Readonly<Record<ElementType, number>> = {
  float: 1,
  uint8: 2,
  int8: 3,
  uint16: 4,
  int16: 5,
  int32: 6,
  int64: 7,
  string: 8,
  bool: 9,
  float16: 10,
  double: 11,
  uint32: 12,
  uint64: 13,
  bfloat16: 16,
};

const CODE_TO_TYPE = new Map<number, ElementType>(
  Object.entries(DATA_TYPE_CODES).map(([name, code]) => [code, name as ElementType]),
);

/** Names of the codes we recognise but do not support, for messages. */
const UNSUPPORTED_TYPE_NAMES: Readonly<Record<number, string>> = {
  0: 'undefined',
  14: 'complex64',
  15: 'complex128',
  17: 'float8e4m3fn',
  18: 'float8e4m3fnuz',
  19: 'float8e5m2',
  20: 'float8e5m2fnuz',
  21: 'uint4',
  22: 'int4',
  23: 'float4e2m1',
  24: 'float8e8m0',
  25: 'uint2',
  26: 'int2',
};

export function elementTypeFromCode(code: number): ElementType | undefined {
  return CODE_TO_TYPE.get(code);
}

/** A data-type code's name for messages: 'float', 'complex64', or 'code 99'. */
export function dataTypeName(code: number): string {
  return CODE_TO_TYPE.get(code) ?? UNSUPPORTED_TYPE_NAMES[code] ?? `code ${code}`;
}

/** The element type of a code, or an OnnxModelError naming `what` (e.g. 'initializer "w"'). */
export function requireElementType(code: number, what: string): ElementType {
  const t = CODE_TO_TYPE.get(code);
  if (t !== undefined) return t;
  if (code === 0) throw new OnnxModelError(`${what} has no element type`);
  throw new OnnxModelError(`${what} has element type ${dataTypeName(code)}, which is not supported`);
}

const BYTES_PER_ELEMENT: Readonly<Record<Exclude<ElementType, 'string'>, number>> = {
  float: 4,
  double: 8,
  float16: 2,
  bfloat16: 2,
  int8: 1,
  uint8: 1,
  int16: 2,
  uint16: 2,
  int32: 4,
  uint32: 4,
  int64: 8,
  uint64: 8,
  bool: 1,
};

const LITTLE_ENDIAN_HOST = new Uint8Array(new Uint16Array([1]).buffer)[0] === 1;
const utf8 = new TextDecoder('utf-8', { fatal: true });

export function decodeUtf8(bytes: Uint8Array, what: string): string {
  try {
    return utf8.decode(bytes);
  } catch {
    throw new OnnxModelError(`${what} holds a string that is not valid UTF-8`);
  }
}

/** IEEE 754 half precision bits to a number. */
export function halfToNumber(h: number): number {
  const sign = h & 0x8000 ? -1 : 1;
  const exp = (h >> 10) & 0x1f;
  const frac = h & 0x3ff;
  if (exp === 0) return sign * frac * 2 ** -24;
  if (exp === 0x1f) return frac ? NaN : sign * Infinity;
  return sign * (1 + frac / 1024) * 2 ** (exp - 15);
}

const bf16Scratch = new DataView(new ArrayBuffer(4));
function bfloat16ToNumber(b: number): number {
  bf16Scratch.setUint32(0, (b & 0xffff) << 16);
  return bf16Scratch.getFloat32(0);
}

function dimsOf(pbDims: PbInt64[], what: string): number[] {
  return pbDims.map((d) => {
    const n = int64ToSafeNumber(d);
    if (n === null || n < 0) {
      throw new OnnxModelError(`${what} has an invalid dimension ${int64ToBigInt(d).toString()}`);
    }
    return n;
  });
}

function elementCount(dims: number[], what: string): number {
  let count = 1;
  for (const d of dims) {
    count *= d;
    if (!Number.isSafeInteger(count)) throw new OnnxModelError(`${what} has more elements than can be addressed`);
  }
  return count;
}

/** An aligned copy of raw bytes, so that typed arrays can view it. */
function alignedCopy(bytes: Uint8Array): ArrayBuffer {
  const copy = new Uint8Array(bytes.byteLength);
  copy.set(bytes);
  return copy.buffer;
}

function fromRaw(type: Exclude<ElementType, 'string'>, raw: Uint8Array, count: number): TensorData {
  const buf = alignedCopy(raw);
  const view = new DataView(buf);
  switch (type) {
    case 'float':
      if (LITTLE_ENDIAN_HOST) return new Float32Array(buf);
      return Float32Array.from({ length: count }, (_, i) => view.getFloat32(i * 4, true));
    case 'double':
      if (LITTLE_ENDIAN_HOST) return new Float64Array(buf);
      return Float64Array.from({ length: count }, (_, i) => view.getFloat64(i * 8, true));
    case 'int64':
      if (LITTLE_ENDIAN_HOST) return new BigInt64Array(buf);
      return BigInt64Array.from({ length: count }, (_, i) => view.getBigInt64(i * 8, true));
    case 'uint64':
      if (LITTLE_ENDIAN_HOST) return new BigUint64Array(buf);
      return BigUint64Array.from({ length: count }, (_, i) => view.getBigUint64(i * 8, true));
    case 'uint32':
      return Uint32Array.from({ length: count }, (_, i) => view.getUint32(i * 4, true));
    case 'int32':
      return Int32Array.from({ length: count }, (_, i) => view.getInt32(i * 4, true));
    case 'int16':
      return Int32Array.from({ length: count }, (_, i) => view.getInt16(i * 2, true));
    case 'uint16':
      return Int32Array.from({ length: count }, (_, i) => view.getUint16(i * 2, true));
    case 'int8':
      return Int32Array.from({ length: count }, (_, i) => view.getInt8(i));
    case 'uint8':
      return Int32Array.from({ length: count }, (_, i) => view.getUint8(i));
    case 'bool':
      return Int32Array.from({ length: count }, (_, i) => (view.getUint8(i) ? 1 : 0));
    case 'float16':
      return Float32Array.from({ length: count }, (_, i) => halfToNumber(view.getUint16(i * 2, true)));
    case 'bfloat16':
      return Float32Array.from({ length: count }, (_, i) => bfloat16ToNumber(view.getUint16(i * 2, true)));
  }
}

/** Which typed repeated field holds a type's elements. */
function fieldFor(type: ElementType): keyof PbTensor {
  switch (type) {
    case 'float':
      return 'floatData';
    case 'double':
      return 'doubleData';
    case 'int64':
      return 'int64Data';
    case 'uint32':
    case 'uint64':
      return 'uint64Data';
    case 'string':
      return 'stringData';
    default:
      return 'int32Data';
  }
}

const FIELD_NAMES: Readonly<Record<string, string>> = {
  floatData: 'float_data',
  doubleData: 'double_data',
  int64Data: 'int64_data',
  uint64Data: 'uint64_data',
  stringData: 'string_data',
  int32Data: 'int32_data',
};

function fromField(type: ElementType, pb: PbTensor, what: string): TensorData {
  switch (type) {
    case 'float':
      return Float32Array.from(pb.floatData);
    case 'double':
      return Float64Array.from(pb.doubleData);
    case 'int64':
      return BigInt64Array.from(pb.int64Data, (v) => int64ToBigInt(v));
    case 'uint64':
      return BigUint64Array.from(pb.uint64Data, (v) => int64ToBigInt(v, true));
    case 'uint32':
      return Uint32Array.from(pb.uint64Data, (v) => Number(int64ToBigInt(v, true) & 0xffffffffn));
    case 'string':
      return pb.stringData.map((s) => decodeUtf8(s, what));
    case 'float16':
      return Float32Array.from(pb.int32Data, (v) => halfToNumber(v & 0xffff));
    case 'bfloat16':
      return Float32Array.from(pb.int32Data, (v) => bfloat16ToNumber(v & 0xffff));
    case 'bool':
      return Int32Array.from(pb.int32Data, (v) => (v ? 1 : 0));
    default:
      return Int32Array.from(pb.int32Data);
  }
}

/**
 * Decodes a TensorProto. `what` names it in messages, e.g. 'initializer "w"' or
 * 'attribute "value" of node "c"'.
 */
export function decodeTensor(pb: PbTensor, what: string): OnnxTensor {
  if (pb.dataLocation === 1 || pb.externalData.length > 0) {
    throw new OnnxModelError(
      `${what} keeps its data in an external file (data_location EXTERNAL), which is not supported; save the model with its weights inside the .onnx file`,
    );
  }
  if (pb.segment) {
    throw new OnnxModelError(`${what} is a segment of a larger tensor, which is not supported`);
  }
  const dataType = requireElementType(pb.dataType, what);
  const dims = dimsOf(pb.dims, what);
  const count = elementCount(dims, what);

  const own = fieldFor(dataType);
  for (const field of Object.keys(FIELD_NAMES) as (keyof PbTensor)[]) {
    const values = pb[field] as unknown[];
    if (field !== own && values.length > 0) {
      throw new OnnxModelError(`${what} of type ${dataType} holds its data in ${FIELD_NAMES[field]}`);
    }
  }

  const raw = has(pb, 'rawData') ? pb.rawData : null;
  if (dataType === 'string' && raw !== null && raw.byteLength > 0) {
    throw new OnnxModelError(`${what} is a string tensor but holds raw_data`);
  }
  let data: TensorData;
  if (dataType !== 'string' && raw !== null && (raw.byteLength > 0 || (pb[own] as unknown[]).length === 0)) {
    if ((pb[own] as unknown[]).length > 0) {
      throw new OnnxModelError(`${what} holds its data both in raw_data and in ${FIELD_NAMES[own]}`);
    }
    const expected = count * BYTES_PER_ELEMENT[dataType];
    if (raw.byteLength !== expected) {
      throw new OnnxModelError(
        `${what} has ${count} ${dataType} elements by its dims [${dims.join(', ')}] but ${raw.byteLength} bytes of raw_data (expected ${expected})`,
      );
    }
    data = fromRaw(dataType, raw, count);
  } else {
    data = fromField(dataType, pb, what);
    if (data.length !== count) {
      throw new OnnxModelError(
        `${what} has ${count} elements by its dims [${dims.join(', ')}] but holds ${data.length}`,
      );
    }
  }
  return { name: pb.name, dataType, dims, data };
}
