// Synthetic TinyLlama-1.1B-shaped GGUF files for bench/llm.bench.ts: the real architecture
// (dim 2048, 22 layers, 32 heads, 4 KV heads, FFN 5632, vocab 32000, context 2048) with random
// weights, written once per tensor type (Q8_0, Q4_K, F16) into bench/out/llm/ and reused afterwards.
// The F16 file (2.2 GiB) is the source llama-quantize makes the mixed recipes from
// (bench/llm-recipe-model.ts: Q4_K_M, Q5_K_M, Q3_K_M).
//
// The weights are random *quantized blocks* (random quants, scales chosen so each matrix has a
// standard deviation of about 1/sqrt(2048)), generated directly in the block layout: quantizing
// 1.1 billion floats with the reference quantizers would take far longer than the benchmark.
// F16 weights are uniform in [-a, a] (a = sqrt(3) x that standard deviation), drawn through a
// 65,536-entry table of halves indexed by random 16-bit words.
// The tokenizer metadata (`tokenizer.ggml.*`, the Llama 2 32k SentencePiece vocabulary) is copied
// from ../shared/fixtures/llama-2-tiny-random.gguf when that file exists, else synthesised.
// The output row of the EOS token (id 2) is zero, so its logit is 0 while the maximum of 32,000
// random logits is positive: greedy decoding never stops early, in either engine.
// The "markov" variant (speculative.bench.ts) has the same weights but zero attention outputs: each
// position's logits depend on its own token only, so the model is a Markov chain over the
// vocabulary that repeats any text it has seen from the point it meets one of its tokens again:
// a model that copies its input, with every matrix of the real shape still read at each step.
import { closeSync, existsSync, mkdirSync, openSync, renameSync, statSync, writeSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

import { readGguf } from '../src/llm/gguf/index.js';
import type { GgufEntry, GgufValueTypeName } from '../src/llm/gguf/types.js';
import { f32ToF16 } from '../test/helpers/ggml-quants.js';

export type BenchWeightType = 'Q8_0' | 'Q4_K' | 'F16';
export type BenchVariant = 'random' | 'markov';

export const TINYLLAMA = {
  dim: 2048,
  layers: 22,
  heads: 32,
  kvHeads: 4,
  ffn: 5632,
  vocab: 32000,
  context: 2048,
} as const;

const HERE = path.dirname(fileURLToPath(import.meta.url));
export const LLM_OUT_DIR = path.join(HERE, 'out', 'llm');
const VOCAB_FIXTURE = path.resolve(HERE, '..', '..', 'shared', 'fixtures', 'llama-2-tiny-random.gguf');
const EOS = 2;
// Bumped whenever the generated content changes, so a stale cached file is rebuilt.
const GENERATOR_VERSION = 1;

const TYPE_ID: Record<string, number> = { F32: 0, F16: 1, Q8_0: 8, Q4_K: 12 };
const VALUE_TYPE: Record<GgufValueTypeName, number> = {
  UINT8: 0, INT8: 1, UINT16: 2, INT16: 3, UINT32: 4, INT32: 5, FLOAT32: 6, BOOL: 7, STRING: 8, ARRAY: 9, UINT64: 10, INT64: 11, FLOAT64: 12,
};

/** Little-endian byte writer for the GGUF header (metadata and tensor infos). */
class Header {
  private parts: Buffer[] = [];
  length = 0;
  private push(b: Buffer): void {
    this.parts.push(b);
    this.length += b.length;
  }
  u32(v: number): void {
    const b = Buffer.alloc(4);
    b.writeUInt32LE(v);
    this.push(b);
  }
  u64(v: number | bigint): void {
    const b = Buffer.alloc(8);
    b.writeBigUInt64LE(BigInt(v));
    this.push(b);
  }
  str(s: string): void {
    const b = Buffer.from(s, 'utf8');
    this.u64(b.length);
    this.push(b);
  }
  scalar(type: GgufValueTypeName, v: unknown): void {
    const b = Buffer.alloc(8);
    switch (type) {
      case 'UINT8': b.writeUInt8(Number(v)); return this.push(b.subarray(0, 1));
      case 'INT8': b.writeInt8(Number(v)); return this.push(b.subarray(0, 1));
      case 'UINT16': b.writeUInt16LE(Number(v)); return this.push(b.subarray(0, 2));
      case 'INT16': b.writeInt16LE(Number(v)); return this.push(b.subarray(0, 2));
      case 'UINT32': b.writeUInt32LE(Number(v)); return this.push(b.subarray(0, 4));
      case 'INT32': b.writeInt32LE(Number(v)); return this.push(b.subarray(0, 4));
      case 'FLOAT32': b.writeFloatLE(Number(v)); return this.push(b.subarray(0, 4));
      case 'BOOL': b.writeUInt8(v ? 1 : 0); return this.push(b.subarray(0, 1));
      case 'UINT64': b.writeBigUInt64LE(BigInt(v as number | bigint)); return this.push(b);
      case 'INT64': b.writeBigInt64LE(BigInt(v as number | bigint)); return this.push(b);
      case 'FLOAT64': b.writeDoubleLE(Number(v)); return this.push(b);
      case 'STRING': return this.str(String(v));
      case 'ARRAY': throw new Error('nested arrays are not written');
    }
  }
  entry(e: GgufEntry): void {
    this.str(e.key);
    this.u32(VALUE_TYPE[e.type]);
    if (e.type !== 'ARRAY') return this.scalar(e.type, e.value);
    const values = e.value as ArrayLike<unknown>;
    this.u32(VALUE_TYPE[e.elementType!]);
    this.u64(values.length);
    for (let i = 0; i < values.length; i++) this.scalar(e.elementType!, values[i]);
  }
  bytes(): Buffer {
    return Buffer.concat(this.parts);
  }
}

async function vocabEntries(): Promise<{ entries: GgufEntry[]; source: string }> {
  if (existsSync(VOCAB_FIXTURE)) {
    const f = await readGguf(VOCAB_FIXTURE);
    const entries = f.entries.filter((e) => e.key.startsWith('tokenizer.ggml.'));
    if (entries.some((e) => e.key === 'tokenizer.ggml.tokens' && (e.value as string[]).length === TINYLLAMA.vocab)) {
      return { entries, source: 'llama-2-tiny-random.gguf (Llama 2 vocabulary)' };
    }
  }
  // A synthetic SentencePiece-style vocabulary: <unk>, <s>, </s>, 256 byte tokens, then pieces.
  const tokens: string[] = ['<unk>', '<s>', '</s>'];
  const types: number[] = [2, 3, 3];
  for (let b = 0; b < 256; b++) {
    tokens.push(`<0x${b.toString(16).toUpperCase().padStart(2, '0')}>`);
    types.push(6);
  }
  for (let i = tokens.length; i < TINYLLAMA.vocab; i++) {
    tokens.push(`\u2581t${i}`);
    types.push(1);
  }
  const scores = new Float32Array(TINYLLAMA.vocab).map((_, i) => -i);
  const e = (key: string, type: GgufValueTypeName, value: unknown, elementType?: GgufValueTypeName): GgufEntry =>
    ({ key, type, value, ...(elementType ? { elementType } : {}) }) as GgufEntry;
  return {
    entries: [
      e('tokenizer.ggml.model', 'STRING', 'llama'),
      e('tokenizer.ggml.tokens', 'ARRAY', tokens, 'STRING'),
      e('tokenizer.ggml.scores', 'ARRAY', scores, 'FLOAT32'),
      e('tokenizer.ggml.token_type', 'ARRAY', Int32Array.from(types), 'INT32'),
      e('tokenizer.ggml.bos_token_id', 'UINT32', 1),
      e('tokenizer.ggml.eos_token_id', 'UINT32', EOS),
      e('tokenizer.ggml.unknown_token_id', 'UINT32', 0),
    ],
    source: 'synthetic 32000-token vocabulary',
  };
}

interface TensorSpec {
  name: string;
  dims: number[]; // ggml order: dims[0] contiguous
  type: 'F32' | BenchWeightType;
  zeroRow?: number; // a row left all zero (the EOS output row)
  zero?: boolean; // all zero (the markov variant's attention outputs)
}

function tensorList(type: BenchWeightType, variant: BenchVariant = 'random'): TensorSpec[] {
  const { dim, layers, heads, kvHeads, ffn, vocab } = TINYLLAMA;
  const kvDim = (dim / heads) * kvHeads;
  const t: TensorSpec[] = [{ name: 'token_embd.weight', dims: [dim, vocab], type }];
  for (let l = 0; l < layers; l++) {
    const p = `blk.${l}.`;
    t.push(
      { name: `${p}attn_norm.weight`, dims: [dim], type: 'F32' },
      { name: `${p}attn_q.weight`, dims: [dim, dim], type },
      { name: `${p}attn_k.weight`, dims: [dim, kvDim], type },
      { name: `${p}attn_v.weight`, dims: [dim, kvDim], type },
      { name: `${p}attn_output.weight`, dims: [dim, dim], type, zero: variant === 'markov' },
      { name: `${p}ffn_norm.weight`, dims: [dim], type: 'F32' },
      { name: `${p}ffn_gate.weight`, dims: [dim, ffn], type },
      { name: `${p}ffn_up.weight`, dims: [dim, ffn], type },
      { name: `${p}ffn_down.weight`, dims: [ffn, dim], type },
    );
  }
  t.push({ name: 'output_norm.weight', dims: [dim], type: 'F32' }, { name: 'output.weight', dims: [dim, vocab], type, zeroRow: EOS });
  return t;
}

const BLOCK = { F32: { elems: 1, bytes: 4 }, F16: { elems: 1, bytes: 2 }, Q8_0: { elems: 32, bytes: 34 }, Q4_K: { elems: 256, bytes: 144 } } as const;

function tensorBytes(t: TensorSpec): number {
  const n = t.dims.reduce((a, b) => a * b, 1);
  return (n / BLOCK[t.type].elems) * BLOCK[t.type].bytes;
}

/** xorshift128+-ish fast random bytes (quality is irrelevant, speed is not). */
function randomFill(buf: Uint8Array, state: Uint32Array): void {
  const words = new Uint32Array(buf.buffer, buf.byteOffset, buf.byteLength >>> 2);
  let x = state[0]!, y = state[1]!, z = state[2]!, w = state[3]!;
  for (let i = 0; i < words.length; i++) {
    const t = x ^ (x << 11);
    x = y; y = z; z = w;
    w = (w ^ (w >>> 19) ^ (t ^ (t >>> 8))) >>> 0;
    words[i] = w;
  }
  state[0] = x; state[1] = y; state[2] = z; state[3] = w;
}

// Scales that give each random block a standard deviation of about 1/sqrt(2048):
// Q8_0: q uniform in [-127, 127] (std 73.6); Q4_K: d*sc*q - dmin*m with q in 0..15 and sc, m
// uniform 6-bit (std of sc*q - 7.5*m about 258; dmin = 7.5 d centres every sub-block at 0).
const TARGET_STD = 1 / Math.sqrt(2048);
const Q8_0_D = f32ToF16(TARGET_STD / 73.6);
const Q4_K_D = f32ToF16(TARGET_STD / 258);
const Q4_K_DMIN = f32ToF16((7.5 * TARGET_STD) / 258);
let f16Table: Uint16Array | null = null;
/** Halves uniform in [-sqrt(3) std, sqrt(3) std], indexed by a random 16-bit word. */
function uniformF16Table(): Uint16Array {
  if (!f16Table) {
    const a = Math.sqrt(3) * TARGET_STD;
    f16Table = new Uint16Array(65536).map((_, i) => f32ToF16((((i + 0.5) / 65536) * 2 - 1) * a));
  }
  return f16Table;
}

/** Writes `rows` rows of random blocks for tensor t into buf (whole rows). */
function fillRows(t: TensorSpec, buf: Uint8Array, firstRow: number, rows: number, state: Uint32Array): void {
  if (t.type === 'F32') {
    new Float32Array(buf.buffer, buf.byteOffset, buf.byteLength >>> 2).fill(1);
    return;
  }
  randomFill(buf, state);
  const view = new DataView(buf.buffer, buf.byteOffset, buf.byteLength);
  const { bytes } = BLOCK[t.type];
  const nBlocks = buf.byteLength / bytes;
  if (t.type === 'F16') {
    const halves = new Uint16Array(buf.buffer, buf.byteOffset, buf.byteLength >>> 1);
    const table = uniformF16Table();
    for (let i = 0; i < halves.length; i++) halves[i] = table[halves[i]!]!;
  } else if (t.type === 'Q8_0') {
    for (let b = 0; b < nBlocks; b++) {
      const o = b * bytes;
      view.setUint16(o, Q8_0_D, true);
      for (let i = o + 2; i < o + 34; i++) if (buf[i] === 0x80) buf[i] = 0x81; // -128 -> -127
    }
  } else {
    for (let b = 0; b < nBlocks; b++) {
      view.setUint16(b * bytes, Q4_K_D, true);
      view.setUint16(b * bytes + 2, Q4_K_DMIN, true);
    }
  }
  if (t.zero) buf.fill(0);
  if (t.zeroRow !== undefined && t.zeroRow >= firstRow && t.zeroRow < firstRow + rows) {
    const rowBytes = (t.dims[0]! / BLOCK[t.type].elems) * bytes;
    buf.fill(0, (t.zeroRow - firstRow) * rowBytes, (t.zeroRow - firstRow + 1) * rowBytes);
  }
}

export function benchModelPath(type: BenchWeightType, variant: BenchVariant = 'random'): string {
  return path.join(LLM_OUT_DIR, `tinyllama-1.1b-${variant}-${type.toLowerCase()}.v${GENERATOR_VERSION}.gguf`);
}

/** The model file for `type`, written first if it is not in bench/out/llm/ yet. */
export async function ensureBenchModel(type: BenchWeightType, log: (s: string) => void = () => {}, variant: BenchVariant = 'random'): Promise<string> {
  const file = benchModelPath(type, variant);
  const tensors = tensorList(type, variant);
  if (existsSync(file)) return file;
  mkdirSync(LLM_OUT_DIR, { recursive: true });
  const started = performance.now();
  const { entries: vocab, source } = await vocabEntries();
  const { dim, layers, heads, kvHeads, ffn, context } = TINYLLAMA;
  const u32 = (key: string, value: number): GgufEntry => ({ key, type: 'UINT32', value });
  const f32 = (key: string, value: number): GgufEntry => ({ key, type: 'FLOAT32', value });
  const metadata: GgufEntry[] = [
    { key: 'general.architecture', type: 'STRING', value: 'llama' },
    { key: 'general.name', type: 'STRING', value: `TinyLlama-1.1B-shaped ${variant} ${type}` },
    u32('general.file_type', { Q8_0: 7, Q4_K: 14, F16: 1 }[type]), // MOSTLY_Q8_0, MOSTLY_Q4_K_S, MOSTLY_F16
    u32('llama.context_length', context),
    u32('llama.embedding_length', dim),
    u32('llama.block_count', layers),
    u32('llama.feed_forward_length', ffn),
    u32('llama.rope.dimension_count', dim / heads),
    u32('llama.attention.head_count', heads),
    u32('llama.attention.head_count_kv', kvHeads),
    f32('llama.attention.layer_norm_rms_epsilon', 1e-5),
    f32('llama.rope.freq_base', 10000),
    ...vocab,
  ];

  const h = new Header();
  const magic = new Header();
  magic.u32(0x46554747); // "GGUF"
  magic.u32(3);
  magic.u64(tensors.length);
  magic.u64(metadata.length);
  for (const e of metadata) h.entry(e);
  let offset = 0;
  for (const t of tensors) {
    h.str(t.name);
    h.u32(t.dims.length);
    for (const d of t.dims) h.u64(d);
    h.u32(TYPE_ID[t.type]!);
    h.u64(offset);
    offset += Math.ceil(tensorBytes(t) / 32) * 32;
  }
  const head = Buffer.concat([magic.bytes(), h.bytes()]);
  const tmp = `${file}.tmp-${process.pid}`;
  const fd = openSync(tmp, 'w');
  try {
    let pos = 0;
    const write = (b: Uint8Array) => {
      let done = 0;
      while (done < b.length) done += writeSync(fd, b, done, b.length - done, pos + done);
      pos += b.length;
    };
    write(head);
    const pad = (Math.ceil(pos / 32) * 32) - pos;
    write(new Uint8Array(pad));
    const state = Uint32Array.from([0x9e3779b9, 0x243f6a88, 0xb7e15162, { Q8_0: 0x12345678, Q4_K: 0x87654321, F16: 0x2468ace0 }[type]]);
    const chunk = new Uint8Array(8 << 20);
    for (const t of tensors) {
      const rows = t.dims.slice(1).reduce((a, b) => a * b, 1);
      const rowBytes = tensorBytes(t) / rows;
      const rowsPerChunk = Math.max(1, Math.floor(chunk.length / rowBytes));
      for (let r = 0; r < rows; r += rowsPerChunk) {
        const n = Math.min(rowsPerChunk, rows - r);
        // rowBytes is a multiple of 4 for every tensor here (Q8_0 rows: 64 or 176 blocks of 34).
        const part = chunk.subarray(0, n * rowBytes);
        fillRows(t, part, r, n, state);
        write(part);
      }
      const total = tensorBytes(t);
      write(new Uint8Array(Math.ceil(total / 32) * 32 - total));
    }
  } finally {
    closeSync(fd);
  }
  renameSync(tmp, file);
  log(
    `wrote ${path.relative(process.cwd(), file)} (${(statSync(file).size / 2 ** 30).toFixed(2)} GiB, vocabulary: ${source}) ` +
      `in ${((performance.now() - started) / 1000).toFixed(1)} s`,
  );
  return file;
}
