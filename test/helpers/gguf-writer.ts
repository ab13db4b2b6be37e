// Writes valid GGUF v3 (or v2) files for tests: arbitrary metadata and tensors, with tensor data
// quantized by the reference quantizers of ggml-quants.ts, plus `tinyModel`, a complete small
// llama or qwen2 model (random weights from a seed, the metadata keys llama.cpp reads, the tensor
// names it expects) that llama.cpp itself loads.
//
//   const bytes = encodeGguf({
//     metadata: { 'general.architecture': 'llama', 'llama.context_length': gv.u32(256) },
//     tensors: [{ name: 'w', dims: [256, 4], type: 'Q4_K', data: new Float32Array(1024) }],
//   });
//
// Metadata values: a string, boolean or string[] is written as such; a plain number as UINT32 when
// it is a non-negative integer below 2^32, INT32 when a negative integer, FLOAT32 otherwise; a
// Float32Array / Int32Array / Uint32Array as an array of that type. Use the `gv` helpers to say
// the type exactly (gv.u64, gv.f64, gv.arr('INT8', ...), ...).
//
// Tensor dims are in ggml order: dims[0] is the contiguous dimension, so a [n_embd, n_vocab]
// matrix is n_vocab rows of n_embd. Data offsets are aligned to `alignment` (default 32, written
// as general.alignment only when it differs).

import fs from 'node:fs';
import { GgmlType, requireGgmlType, type GgmlTypeName } from '../../src/llm/gguf/ggml-types.js';
import { GgufValueType, type GgufValueTypeName } from '../../src/llm/gguf/types.js';
import { quantize, type QuantType } from './ggml-quants.js';
import { rng } from './random.js';

type ScalarTypeName = Exclude<GgufValueTypeName, 'ARRAY'>;

export type GgufWriteValue =
  | string
  | boolean
  | number
  | string[]
  | Float32Array
  | Int32Array
  | Uint32Array
  | { type: ScalarTypeName; value: number | bigint | boolean | string }
  | { type: 'ARRAY'; elementType: ScalarTypeName; values: ArrayLike<number | bigint | boolean | string> };

/** Explicitly typed metadata values. */
export const gv = {
  u8: (value: number) => ({ type: 'UINT8', value }) as const,
  i8: (value: number) => ({ type: 'INT8', value }) as const,
  u16: (value: number) => ({ type: 'UINT16', value }) as const,
  i16: (value: number) => ({ type: 'INT16', value }) as const,
  u32: (value: number) => ({ type: 'UINT32', value }) as const,
  i32: (value: number) => ({ type: 'INT32', value }) as const,
  u64: (value: number | bigint) => ({ type: 'UINT64', value }) as const,
  i64: (value: number | bigint) => ({ type: 'INT64', value }) as const,
  f32: (value: number) => ({ type: 'FLOAT32', value }) as const,
  f64: (value: number) => ({ type: 'FLOAT64', value }) as const,
  bool: (value: boolean) => ({ type: 'BOOL', value }) as const,
  str: (value: string) => ({ type: 'STRING', value }) as const,
  arr: (elementType: ScalarTypeName, values: ArrayLike<number | bigint | boolean | string>) =>
    ({ type: 'ARRAY', elementType, values }) as const,
};

export interface GgufWriteTensor {
  name: string;
  /** ggml order, dims[0] contiguous. */
  dims: readonly number[];
  type: GgmlTypeName;
  /**
   * Float values to quantize as `type` (one of the QuantTypes), the encoded bytes as they are, or
   * null for zeros (writeGguf leaves them as a hole in a sparse file, so huge tensors cost nothing).
   */
  data: Float32Array | Uint8Array | null;
}

export interface GgufWriteSpec {
  version?: 2 | 3;
  alignment?: number;
  metadata: Record<string, GgufWriteValue>;
  tensors?: readonly GgufWriteTensor[];
}

const utf8 = new TextEncoder();

/** A growable little-endian byte buffer. */
class Bytes {
  private buf = new Uint8Array(1 << 16);
  private view = new DataView(this.buf.buffer);
  length = 0;

  private reserve(n: number): void {
    if (this.length + n <= this.buf.length) return;
    let size = this.buf.length * 2;
    while (size < this.length + n) size *= 2;
    const next = new Uint8Array(size);
    next.set(this.buf.subarray(0, this.length));
    this.buf = next;
    this.view = new DataView(next.buffer);
  }

  u8(v: number): void {
    this.reserve(1);
    this.view.setUint8(this.length, v);
    this.length += 1;
  }
  i8(v: number): void {
    this.reserve(1);
    this.view.setInt8(this.length, v);
    this.length += 1;
  }
  u16(v: number): void {
    this.reserve(2);
    this.view.setUint16(this.length, v, true);
    this.length += 2;
  }
  i16(v: number): void {
    this.reserve(2);
    this.view.setInt16(this.length, v, true);
    this.length += 2;
  }
  u32(v: number): void {
    this.reserve(4);
    this.view.setUint32(this.length, v, true);
    this.length += 4;
  }
  i32(v: number): void {
    this.reserve(4);
    this.view.setInt32(this.length, v, true);
    this.length += 4;
  }
  f32(v: number): void {
    this.reserve(4);
    this.view.setFloat32(this.length, v, true);
    this.length += 4;
  }
  f64(v: number): void {
    this.reserve(8);
    this.view.setFloat64(this.length, v, true);
    this.length += 8;
  }
  u64(v: number | bigint): void {
    this.reserve(8);
    this.view.setBigUint64(this.length, BigInt(v), true);
    this.length += 8;
  }
  i64(v: number | bigint): void {
    this.reserve(8);
    this.view.setBigInt64(this.length, BigInt(v), true);
    this.length += 8;
  }
  raw(b: Uint8Array): void {
    this.reserve(b.length);
    this.buf.set(b, this.length);
    this.length += b.length;
  }
  string(s: string): void {
    const b = utf8.encode(s);
    this.u64(b.length);
    this.raw(b);
  }
  padTo(alignment: number): void {
    const target = Math.ceil(this.length / alignment) * alignment;
    this.reserve(target - this.length);
    this.length = target; // the buffer is zero-filled
  }
  bytes(): Uint8Array {
    return this.buf.slice(0, this.length);
  }
}

function normalize(value: GgufWriteValue): Exclude<GgufWriteValue, string | boolean | number | string[] | Float32Array | Int32Array | Uint32Array> {
  if (typeof value === 'string') return gv.str(value);
  if (typeof value === 'boolean') return gv.bool(value);
  if (typeof value === 'number') {
    if (Number.isInteger(value) && value >= 0 && value < 2 ** 32) return gv.u32(value);
    if (Number.isInteger(value) && value < 0 && value >= -(2 ** 31)) return gv.i32(value);
    return gv.f32(value);
  }
  if (Array.isArray(value)) return gv.arr('STRING', value);
  if (value instanceof Float32Array) return gv.arr('FLOAT32', value);
  if (value instanceof Int32Array) return gv.arr('INT32', value);
  if (value instanceof Uint32Array) return gv.arr('UINT32', value);
  return value;
}

function writeScalar(out: Bytes, type: ScalarTypeName, v: number | bigint | boolean | string): void {
  switch (type) {
    case 'UINT8':
      return out.u8(Number(v));
    case 'INT8':
      return out.i8(Number(v));
    case 'UINT16':
      return out.u16(Number(v));
    case 'INT16':
      return out.i16(Number(v));
    case 'UINT32':
      return out.u32(Number(v));
    case 'INT32':
      return out.i32(Number(v));
    case 'FLOAT32':
      return out.f32(Number(v));
    case 'FLOAT64':
      return out.f64(Number(v));
    case 'UINT64':
      return out.u64(v as number | bigint);
    case 'INT64':
      return out.i64(v as number | bigint);
    case 'BOOL':
      return out.u8(v ? 1 : 0);
    case 'STRING':
      return out.string(String(v));
  }
}

/** Bytes of a tensor of this shape and type. */
export function tensorByteSize(t: Pick<GgufWriteTensor, 'name' | 'dims' | 'type'>): number {
  const traits = requireGgmlType(t.type);
  const n = t.dims.reduce((a, b) => a * b, 1);
  if (t.dims[0]! % traits.blockSize !== 0) {
    throw new Error(`tensor ${t.name}: rows of ${t.dims[0]} are not a multiple of the ${t.type} block size ${traits.blockSize}`);
  }
  return (n / traits.blockSize) * traits.typeSize;
}

/** Encoded tensor bytes: floats are quantized as the tensor's type, bytes pass through. */
export function tensorBytes(t: GgufWriteTensor): Uint8Array {
  const expected = tensorByteSize(t);
  const n = t.dims.reduce((a, b) => a * b, 1);
  let bytes: Uint8Array;
  if (t.data === null) {
    bytes = new Uint8Array(expected);
  } else if (t.data instanceof Float32Array) {
    if (t.data.length !== n) throw new Error(`tensor ${t.name}: ${t.data.length} values for shape [${t.dims.join(', ')}]`);
    bytes = quantize(t.type as QuantType, t.data);
  } else {
    bytes = t.data;
  }
  if (bytes.length !== expected) throw new Error(`tensor ${t.name}: ${bytes.length} bytes, expected ${expected}`);
  return bytes;
}

interface EncodedHeader {
  header: Uint8Array;
  /** File offset of each tensor's data. */
  offsets: number[];
  /** Total file size. */
  size: number;
}

/** Everything before the tensor data (padded to the alignment), and where each tensor goes. */
export function encodeGgufHeader(spec: GgufWriteSpec): EncodedHeader {
  const alignment = spec.alignment ?? 32;
  const metadata: Record<string, GgufWriteValue> = { ...spec.metadata };
  if (alignment !== 32 && !('general.alignment' in metadata)) metadata['general.alignment'] = gv.u32(alignment);
  const tensors = spec.tensors ?? [];

  const out = new Bytes();
  out.raw(utf8.encode('GGUF'));
  out.u32(spec.version ?? 3);
  out.u64(tensors.length);
  out.u64(Object.keys(metadata).length);

  for (const [key, raw] of Object.entries(metadata)) {
    const value = normalize(raw);
    out.string(key);
    out.u32(GgufValueType[value.type]);
    if (value.type === 'ARRAY') {
      out.u32(GgufValueType[value.elementType]);
      out.u64(value.values.length);
      for (let i = 0; i < value.values.length; i++) writeScalar(out, value.elementType, value.values[i]!);
    } else {
      writeScalar(out, value.type, value.value);
    }
  }

  let offset = 0;
  const relative: number[] = [];
  for (const t of tensors) {
    out.string(t.name);
    out.u32(t.dims.length);
    for (const d of t.dims) out.u64(d);
    out.u32(GgmlType[t.type]);
    out.u64(offset);
    relative.push(offset);
    offset += Math.ceil(tensorByteSize(t) / alignment) * alignment;
  }
  out.padTo(alignment);
  const header = out.bytes();
  return { header, offsets: relative.map((o) => header.length + o), size: header.length + offset };
}

/** The complete GGUF file as bytes. */
export function encodeGguf(spec: GgufWriteSpec): Uint8Array {
  const { header, offsets, size } = encodeGgufHeader(spec);
  const out = new Uint8Array(size);
  out.set(header);
  (spec.tensors ?? []).forEach((t, i) => out.set(tensorBytes(t), offsets[i]!));
  return out;
}

/** Writes the file piecewise; tensors with null data stay holes (a sparse file). */
export function writeGguf(path: string, spec: GgufWriteSpec): void {
  const { header, offsets, size } = encodeGgufHeader(spec);
  const fd = fs.openSync(path, 'w');
  try {
    fs.writeSync(fd, header, 0, header.length, 0);
    (spec.tensors ?? []).forEach((t, i) => {
      if (t.data !== null) {
        const b = tensorBytes(t);
        fs.writeSync(fd, b, 0, b.length, offsets[i]!);
      }
    });
    fs.ftruncateSync(fd, size);
  } finally {
    fs.closeSync(fd);
  }
}

// ---------------------------------------------------------------- a tiny complete model

/** The seeded PRNG (random.ts) with a Box-Muller normal, so a seed names a model. */
export function seededRandom(seed: number): { uniform: () => number; normal: () => number } {
  const uniform = rng(seed);
  const normal = () => {
    const u = Math.max(uniform(), 1e-12);
    return Math.sqrt(-2 * Math.log(u)) * Math.cos(2 * Math.PI * uniform());
  };
  return { uniform, normal };
}

/** The tokenizer part of a model: the `tokenizer.ggml.*` keys (and a chat template). */
export interface TinyVocab {
  model: 'llama' | 'gpt2';
  tokens: string[];
  /** SentencePiece scores (llama); omitted for gpt2. */
  scores?: Float32Array;
  /** llama.cpp token types: 1 normal, 2 unknown, 3 control, 4 user-defined, 5 unused, 6 byte. */
  tokenTypes?: Int32Array;
  /** BPE merges "left right", highest priority first (gpt2). */
  merges?: string[];
  /** `tokenizer.ggml.pre` (gpt2): llama-bpe, qwen2, ... */
  pre?: string;
  bosId?: number;
  eosId?: number;
  unknownId?: number;
  paddingId?: number;
  addBos?: boolean;
  addEos?: boolean;
  addSpacePrefix?: boolean;
  chatTemplate?: string;
}

export function vocabMetadata(v: TinyVocab): Record<string, GgufWriteValue> {
  const m: Record<string, GgufWriteValue> = {
    'tokenizer.ggml.model': v.model,
    'tokenizer.ggml.tokens': v.tokens,
  };
  if (v.pre !== undefined) m['tokenizer.ggml.pre'] = v.pre;
  if (v.scores) m['tokenizer.ggml.scores'] = v.scores;
  if (v.tokenTypes) m['tokenizer.ggml.token_type'] = v.tokenTypes;
  if (v.merges) m['tokenizer.ggml.merges'] = v.merges;
  if (v.bosId !== undefined) m['tokenizer.ggml.bos_token_id'] = gv.u32(v.bosId);
  if (v.eosId !== undefined) m['tokenizer.ggml.eos_token_id'] = gv.u32(v.eosId);
  if (v.unknownId !== undefined) m['tokenizer.ggml.unknown_token_id'] = gv.u32(v.unknownId);
  if (v.paddingId !== undefined) m['tokenizer.ggml.padding_token_id'] = gv.u32(v.paddingId);
  if (v.addBos !== undefined) m['tokenizer.ggml.add_bos_token'] = v.addBos;
  if (v.addEos !== undefined) m['tokenizer.ggml.add_eos_token'] = v.addEos;
  if (v.addSpacePrefix !== undefined) m['tokenizer.ggml.add_space_prefix'] = v.addSpacePrefix;
  if (v.chatTemplate !== undefined) m['tokenizer.chat_template'] = v.chatTemplate;
  return m;
}

/**
 * The keys every decoder file starts with, in this order (the writers' files are hashed, so the
 * order is part of them): its architecture and name, then `<arch>.` context, widths, heads, norm
 * epsilon and RoPE base and dimensions.
 */
export function decoderMetadata(
  arch: string,
  h: { name?: string; nCtx?: number; nEmbd: number; nLayer: number; nFf: number; nHead: number; nHeadKv: number; headDim: number; rmsEps: number; ropeFreqBase: number },
): Record<string, GgufWriteValue> {
  return {
    'general.architecture': arch,
    'general.name': h.name ?? `tiny-${arch}`,
    [`${arch}.context_length`]: gv.u32(h.nCtx ?? 256),
    [`${arch}.embedding_length`]: gv.u32(h.nEmbd),
    [`${arch}.block_count`]: gv.u32(h.nLayer),
    [`${arch}.feed_forward_length`]: gv.u32(h.nFf),
    [`${arch}.attention.head_count`]: gv.u32(h.nHead),
    [`${arch}.attention.head_count_kv`]: gv.u32(h.nHeadKv),
    [`${arch}.attention.layer_norm_rms_epsilon`]: gv.f32(h.rmsEps),
    [`${arch}.rope.freq_base`]: gv.f32(h.ropeFreqBase),
    [`${arch}.rope.dimension_count`]: gv.u32(h.headDim),
  };
}

export interface TinyModelOptions {
  arch: 'llama' | 'qwen2';
  vocab: TinyVocab;
  nEmbd: number;
  nLayer: number;
  nHead: number;
  /** Fewer KV heads than heads is grouped-query attention. Default nHead. */
  nHeadKv?: number;
  nFf: number;
  nCtx?: number;
  /** Leave output.weight out (the output matrix is token_embd). Default false. */
  tiedOutput?: boolean;
  seed?: number;
  /** Type of the matrices (norms and biases stay F32). Default F32. */
  weightType?: QuantType;
  /** Type of token_embd.weight (and output.weight). Default weightType. */
  embeddingType?: QuantType;
  ropeFreqBase?: number;
  rmsEps?: number;
  /** Standard deviation of the random matrices. Default 1 / sqrt(nEmbd). */
  weightScale?: number;
  name?: string;
  fileType?: number;
}

export interface TinyModel {
  spec: GgufWriteSpec;
  /** The float values each tensor was made from (before quantization), by tensor name. */
  weights: Map<string, Float32Array>;
}

/**
 * A complete llama / qwen2 model: every tensor llama.cpp's loader requires, random normal weights
 * (norm weights are 1 + small noise so activations stay sane), qwen2's Q/K/V biases. The weights
 * are only random: a correct engine and llama.cpp agree on the logits, not on anything sensible.
 * Being random, attn_q / attn_k need no permutation: they are read in the GGUF layout of their
 * architecture (RoPE on adjacent pairs for llama, NeoX halves for qwen2). `weights` keeps the
 * floats behind every tensor for reference computations; write the file with writeGguf(path, spec).
 */
export function tinyModel(o: TinyModelOptions): TinyModel {
  const nHeadKv = o.nHeadKv ?? o.nHead;
  if (o.nEmbd % o.nHead !== 0) throw new Error('nEmbd must be a multiple of nHead');
  if (o.nHead % nHeadKv !== 0) throw new Error('nHead must be a multiple of nHeadKv');
  const headDim = o.nEmbd / o.nHead;
  const nVocab = o.vocab.tokens.length;
  const weightType = o.weightType ?? 'F32';
  const embeddingType = o.embeddingType ?? weightType;
  const rnd = seededRandom(o.seed ?? 1);
  const scale = o.weightScale ?? 1 / Math.sqrt(o.nEmbd);
  const weights = new Map<string, Float32Array>();
  const tensors: GgufWriteTensor[] = [];

  const add = (name: string, dims: number[], type: QuantType, gen: () => number) => {
    const n = dims.reduce((a, b) => a * b, 1);
    const data = new Float32Array(n);
    for (let i = 0; i < n; i++) data[i] = gen();
    weights.set(name, data);
    tensors.push({ name, dims, type, data });
  };
  const matrix = () => rnd.normal() * scale;
  const norm = () => 1 + rnd.normal() * 0.01;
  const bias = () => rnd.normal() * 0.01;

  add('token_embd.weight', [o.nEmbd, nVocab], embeddingType, matrix);
  for (let l = 0; l < o.nLayer; l++) {
    const p = `blk.${l}`;
    add(`${p}.attn_norm.weight`, [o.nEmbd], 'F32', norm);
    add(`${p}.attn_q.weight`, [o.nEmbd, o.nEmbd], weightType, matrix);
    add(`${p}.attn_k.weight`, [o.nEmbd, nHeadKv * headDim], weightType, matrix);
    add(`${p}.attn_v.weight`, [o.nEmbd, nHeadKv * headDim], weightType, matrix);
    if (o.arch === 'qwen2') {
      add(`${p}.attn_q.bias`, [o.nEmbd], 'F32', bias);
      add(`${p}.attn_k.bias`, [nHeadKv * headDim], 'F32', bias);
      add(`${p}.attn_v.bias`, [nHeadKv * headDim], 'F32', bias);
    }
    add(`${p}.attn_output.weight`, [o.nEmbd, o.nEmbd], weightType, matrix);
    add(`${p}.ffn_norm.weight`, [o.nEmbd], 'F32', norm);
    add(`${p}.ffn_gate.weight`, [o.nEmbd, o.nFf], weightType, matrix);
    add(`${p}.ffn_up.weight`, [o.nEmbd, o.nFf], weightType, matrix);
    add(`${p}.ffn_down.weight`, [o.nFf, o.nEmbd], weightType, matrix);
  }
  add('output_norm.weight', [o.nEmbd], 'F32', norm);
  if (!o.tiedOutput) add('output.weight', [o.nEmbd, nVocab], embeddingType, matrix);

  const a = o.arch;
  const metadata: Record<string, GgufWriteValue> = {
    ...decoderMetadata(a, { ...o, nHeadKv, headDim, rmsEps: o.rmsEps ?? 1e-5, ropeFreqBase: o.ropeFreqBase ?? (a === 'qwen2' ? 1000000 : 10000) }),
    ...(o.fileType !== undefined ? { 'general.file_type': gv.u32(o.fileType) } : {}),
    ...vocabMetadata(o.vocab),
  };
  return { spec: { metadata, tensors }, weights };
}
