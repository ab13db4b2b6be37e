// ggml tensor types as GGUF stores them (ggml.h `enum ggml_type`) with their block geometry
// (ggml.c `type_traits`: elements per block, bytes per block), so a reader can size every tensor
// without knowing how to decode it. Ids that ggml retired (4, 5, 31-33, 36-38) are absent on
// purpose: a file using them is refused, as ggml refuses it.

export const GgmlType = {
  F32: 0,
  F16: 1,
  Q4_0: 2,
  Q4_1: 3,
  Q5_0: 6,
  Q5_1: 7,
  Q8_0: 8,
  Q8_1: 9,
  Q2_K: 10,
  Q3_K: 11,
  Q4_K: 12,
  Q5_K: 13,
  Q6_K: 14,
  Q8_K: 15,
  IQ2_XXS: 16,
  IQ2_XS: 17,
  IQ3_XXS: 18,
  IQ1_S: 19,
  IQ4_NL: 20,
  IQ3_S: 21,
  IQ2_S: 22,
  IQ4_XS: 23,
  I8: 24,
  I16: 25,
  I32: 26,
  I64: 27,
  F64: 28,
  IQ1_M: 29,
  BF16: 30,
  TQ1_0: 34,
  TQ2_0: 35,
  MXFP4: 39,
  NVFP4: 40,
  Q1_0: 41,
} as const;

export type GgmlTypeName = keyof typeof GgmlType;
export type GgmlTypeId = (typeof GgmlType)[GgmlTypeName];

export interface GgmlTypeTraits {
  id: GgmlTypeId;
  name: GgmlTypeName;
  /** Elements per block (1 for plain types). A row's length must be a multiple of it. */
  blockSize: number;
  /** Bytes per block. */
  typeSize: number;
}

// [name, block size, bytes per block]; sizes follow the block structs of ggml-common.h.
const TRAITS: [GgmlTypeName, number, number][] = [
  ['F32', 1, 4],
  ['F16', 1, 2],
  ['Q4_0', 32, 18],
  ['Q4_1', 32, 20],
  ['Q5_0', 32, 22],
  ['Q5_1', 32, 24],
  ['Q8_0', 32, 34],
  ['Q8_1', 32, 36],
  ['Q2_K', 256, 84],
  ['Q3_K', 256, 110],
  ['Q4_K', 256, 144],
  ['Q5_K', 256, 176],
  ['Q6_K', 256, 210],
  ['Q8_K', 256, 292],
  ['IQ2_XXS', 256, 66],
  ['IQ2_XS', 256, 74],
  ['IQ3_XXS', 256, 98],
  ['IQ1_S', 256, 50],
  ['IQ4_NL', 32, 18],
  ['IQ3_S', 256, 110],
  ['IQ2_S', 256, 82],
  ['IQ4_XS', 256, 136],
  ['I8', 1, 1],
  ['I16', 1, 2],
  ['I32', 1, 4],
  ['I64', 1, 8],
  ['F64', 1, 8],
  ['IQ1_M', 256, 56],
  ['BF16', 1, 2],
  ['TQ1_0', 256, 54],
  ['TQ2_0', 256, 66],
  ['MXFP4', 32, 17],
  ['NVFP4', 64, 36],
  ['Q1_0', 128, 18],
];

const BY_ID = new Map<number, GgmlTypeTraits>(
  TRAITS.map(([name, blockSize, typeSize]) => [GgmlType[name], { id: GgmlType[name], name, blockSize, typeSize }]),
);

/**
 * The tensor types the engine decodes (native/ggml/types.cc); test/llm-gguf-types.test.ts holds
 * this list to the engine's own table. A file with any other type cannot be loaded.
 */
export const ENGINE_TENSOR_TYPES: readonly GgmlTypeName[] = [
  'F32',
  'F16',
  'BF16',
  'Q8_0',
  'Q4_0',
  'Q4_1',
  'Q5_0',
  'Q5_1',
  'Q2_K',
  'Q3_K',
  'Q4_K',
  'Q5_K',
  'Q6_K',
  'IQ4_NL',
  'IQ4_XS',
  'MXFP4',
];

/** The traits of a type id, or undefined for an id ggml does not (or no longer) define. */
export function ggmlTypeTraits(id: number): GgmlTypeTraits | undefined {
  return BY_ID.get(id);
}

/** Traits by name or id; throws on an unknown one (a programming error, not a file error). */
export function requireGgmlType(type: GgmlTypeName | number): GgmlTypeTraits {
  const t = typeof type === 'number' ? BY_ID.get(type) : BY_ID.get(GgmlType[type]);
  if (!t) throw new Error(`unknown ggml type ${String(type)}`);
  return t;
}

/** Bytes of `nElements` elements of a type (whole blocks: rows are multiples of the block size). */
export function ggmlTensorBytes(t: GgmlTypeTraits, nElements: number): number {
  return (nElements / t.blockSize) * t.typeSize;
}

// llama.cpp's `enum llama_ftype` (general.file_type): what a converter or llama-quantize called the
// file as a whole. Q4_K_M and friends are mixtures, so this is the only place their name lives.
const FILE_TYPES: Record<number, string> = {
  0: 'F32',
  1: 'F16',
  2: 'Q4_0',
  3: 'Q4_1',
  7: 'Q8_0',
  8: 'Q5_0',
  9: 'Q5_1',
  10: 'Q2_K',
  11: 'Q3_K_S',
  12: 'Q3_K_M',
  13: 'Q3_K_L',
  14: 'Q4_K_S',
  15: 'Q4_K_M',
  16: 'Q5_K_S',
  17: 'Q5_K_M',
  18: 'Q6_K',
  19: 'IQ2_XXS',
  20: 'IQ2_XS',
  21: 'Q2_K_S',
  22: 'IQ3_XS',
  23: 'IQ3_XXS',
  24: 'IQ1_S',
  25: 'IQ4_NL',
  26: 'IQ3_S',
  27: 'IQ3_M',
  28: 'IQ2_S',
  29: 'IQ2_M',
  30: 'IQ4_XS',
  31: 'IQ1_M',
  32: 'BF16',
  36: 'TQ1_0',
  37: 'TQ2_0',
  38: 'MXFP4_MOE',
};

/** The name of a `general.file_type` value, or undefined for one llama.cpp does not define. */
export function fileTypeName(fileType: number): string | undefined {
  return FILE_TYPES[fileType];
}
