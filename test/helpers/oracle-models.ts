// The models whose logits llama.cpp recorded into test/data/llm-logits (scripts/oracle/
// record-logits.mjs) and test/llm-logits-oracle.test.ts compares the engine with. Each entry writes
// its GGUF deterministically from a seed, so the files themselves are never stored: the recording
// keeps each file's sha256, and the test rebuilds the file and checks the hash first.
//
// Adding a tensor type: add it to ORACLE_WEIGHT_TYPES (and its tolerance to LOGITS_TOLERANCE); every
// architecture writer takes the type as a parameter. Adding an architecture: write an
// OracleArchWriter (options -> GGUF spec) and list it in ORACLE_ARCHS. Then re-record
// (scripts/oracle/README.md).
import { createHash } from 'node:crypto';
import type { QuantType } from './ggml-quants.js';
import { archModel, type ArchModelOptions } from './arch-models.js';
import { encodeGguf, gv, tinyModel, type GgufWriteSpec } from './gguf-writer.js';
import { spmVocab } from './llm-models.js';

/** What every architecture writer is given. */
export interface OracleModelOptions {
  /** Type of every weight matrix, token_embd and output included (norms and biases stay F32). */
  weightType: QuantType;
  seed: number;
}

/** Writes one architecture's model: a GGUF spec llama.cpp and the engine both load. */
export type OracleArchWriter = (o: OracleModelOptions) => GgufWriteSpec;

export interface OracleModel {
  /** File name stem of the recording, test/data/llm-logits/<name>.json. */
  name: string;
  arch: string;
  weightType: QuantType;
  seed: number;
  /** Token ids evaluated in one batch; logits are recorded at every position. */
  tokens: number[];
  /** The GGUF file, byte for byte the one llama.cpp evaluated (check with sha256). */
  gguf: () => Uint8Array;
}

// Shapes: 256 wide so every matrix row holds whole 256-element K-quant blocks (nFf too, for
// ffn_down); 8 query heads over 2 KV heads (grouped-query attention, head dim 32); two layers; the
// 293-token SentencePiece vocabulary of llm-models.ts (llama.cpp's loader needs a real vocabulary).
const SHAPE = { nEmbd: 256, nLayer: 2, nHead: 8, nHeadKv: 2, nFf: 512, nCtx: 256 } as const;
const N_TOKENS = 16;

/** llama: adjacent-pair RoPE, no biases, a separate output matrix. */
const llamaWriter: OracleArchWriter = ({ weightType, seed }) =>
  tinyModel({ arch: 'llama', vocab: spmVocab(), ...SHAPE, weightType, seed, name: `oracle-llama-${weightType}` }).spec;

/**
 * qwen2: NeoX RoPE (rope.freq_base 1e6), Q/K/V biases, tied output. The biases are scaled up to a
 * standard deviation of 0.5 (tinyModel draws them at 0.01, too small to matter), as trained qwen2
 * models carry large ones, so that a dropped bias moves the logits well past the tolerance.
 */
const qwen2Writer: OracleArchWriter = ({ weightType, seed }) => {
  const { spec } = tinyModel({ arch: 'qwen2', vocab: spmVocab(), ...SHAPE, weightType, seed, tiedOutput: true, name: `oracle-qwen2-${weightType}` });
  for (const t of spec.tensors ?? []) {
    if (t.name.endsWith('.bias') && t.data instanceof Float32Array) t.data = t.data.map((v) => v * 50);
  }
  return spec;
};

/** An architecture of arch-models.ts with every switch that matters at 16 tokens turned on. */
const archWriter =
  (options: Omit<ArchModelOptions, 'vocab' | 'weightType' | 'seed' | 'nEmbd' | 'nLayer' | 'nHead' | 'nHeadKv' | 'nFf'> & { nLayer?: number }): OracleArchWriter =>
  ({ weightType, seed }) =>
    archModel({ vocab: spmVocab(), ...SHAPE, ...options, weightType, seed }).spec;

/** Rising divisors, so that every frequency of a 32-wide head moves differently. */
const ropeDivisors = (first: number, step: number) => Array.from({ length: 16 }, (_, i) => first + step * i);

/**
 * Architecture name -> writer. Windows are shorter than the 16 recorded tokens and soft-caps small
 * enough to bite, so each of those switches shows in the logits.
 */
export const ORACLE_ARCHS: Record<string, OracleArchWriter> = {
  llama: llamaWriter,
  qwen2: qwen2Writer,
  // Llama 3.x: rope_freqs.weight divides the RoPE frequencies.
  llama3: archWriter({ arch: 'llama', ropeFreqs: ropeDivisors(1, 0.5), name: 'oracle-llama3' }),
  // Per-head Q/K RMSNorm, NeoX RoPE, a key_length (64) that is not dim / heads (32).
  qwen3: archWriter({ arch: 'qwen3', headDim: 64, ropeFreqBase: 1000000, name: 'oracle-qwen3' }),
  gemma2: archWriter({
    arch: 'gemma2',
    name: 'oracle-gemma2',
    metadata: { 'attention.sliding_window': gv.u32(6), attn_logit_softcapping: gv.f32(4), final_logit_softcapping: gv.f32(6) },
  }),
  // Six layers: five sliding ones, then a global one.
  gemma3: archWriter({
    arch: 'gemma3',
    nLayer: 6,
    ropeFreqBase: 1000000,
    name: 'oracle-gemma3',
    metadata: { 'attention.sliding_window': gv.u32(5), 'rope.scaling.type': 'linear', 'rope.scaling.factor': gv.f32(8) },
  }),
  // Contexts (ours and llama.cpp's 64) over an original 32: LongRoPE's long factors and its attention factor.
  // (llama.cpp's vocabulary loader special-cases model names containing "phi3".)
  phi3: archWriter({
    arch: 'phi3',
    nCtx: 512,
    name: 'oracle-p-three',
    longRope: { long: ropeDivisors(1, 1), short: ropeDivisors(1, 0.1), originalContext: 32, attnFactor: 1.2 },
  }),
  // Mixture of experts: 4 experts of 256, 2 per token, routed by an F32 ffn_gate_inp (llama.cpp's
  // quantizer leaves routers F32), on NeoX RoPE with the Q/K norms (qwen3moe)...
  qwen3moe: archWriter({ arch: 'qwen3moe', ropeFreqBase: 1000000, experts: { count: 4, used: 2, ffn: 256 }, name: 'oracle-qwen3moe' }),
  // ...and as Mixtral: llama with expert_count, experts of feed_forward_length.
  mixtral: ({ weightType, seed }) =>
    archModel({ vocab: spmVocab(), ...SHAPE, nFf: 256, arch: 'llama', experts: { count: 4, used: 2, ffn: 256 }, weightType, seed, name: 'oracle-mixtral' }).spec,
};

/** The weight types every architecture is recorded with. */
export const ORACLE_WEIGHT_TYPES: readonly QuantType[] = [
  'F32', 'F16', 'BF16', 'Q8_0', 'Q4_0', 'Q4_1', 'Q5_0', 'Q5_1', 'Q2_K', 'Q3_K', 'Q4_K', 'Q5_K', 'Q6_K', 'IQ4_NL', 'IQ4_XS', 'MXFP4',
];

/**
 * Largest accepted max |engine - llama.cpp| over all positions' logits, divided by the largest
 * |llama.cpp logit| of the model, per weight type. Measured errors and the reasoning are in
 * test/llm-logits-oracle.test.ts.
 */
export const LOGITS_TOLERANCE: Record<QuantType, number> = {
  F32: 1e-5,
  F16: 3e-3,
  BF16: 2e-2,
  Q8_0: 5e-2,
  Q4_0: 5e-2,
  Q4_K: 5e-2,
  Q6_K: 5e-2,
  Q4_1: 5e-2,
  Q5_0: 5e-2,
  Q5_1: 5e-2,
  Q2_K: 5e-2,
  Q3_K: 5e-2,
  Q5_K: 5e-2,
  IQ4_NL: 5e-2,
  IQ4_XS: 5e-2,
  MXFP4: 5e-2,
};

/**
 * A floor under LOGITS_TOLERANCE for an architecture whose llama.cpp computation rounds more than
 * the weight type says: ggml's CPU GELU (gemma's GeGLU) looks its result up in a table indexed by
 * the input rounded to f16 and holding f16 outputs (GGML_GELU_FP16 in ggml-cpu/vec.h), about 1e-3
 * relative per activation, where the engine computes the tanh form in f32. Measured on F32
 * weights: gemma2 1.8e-4, gemma3 4.2e-4 of the logits' range; 2e-3 is about 5x that.
 */
export const ARCH_TOLERANCE_FLOOR: Record<string, number> = { gemma2: 2e-3, gemma3: 2e-3 };

/** The tolerance of one table entry. */
export function logitsTolerance(m: Pick<OracleModel, 'arch' | 'weightType'>): number {
  return Math.max(LOGITS_TOLERANCE[m.weightType], ARCH_TOLERANCE_FLOOR[m.arch] ?? 0);
}

/** n token ids in [0, nVocab) from a seed (a 32-bit LCG's high bits: exact in any JS engine). */
export function oracleTokens(n: number, nVocab: number, seed: number): number[] {
  let s = seed >>> 0;
  return Array.from({ length: n }, () => {
    s = (Math.imul(s, 1103515245) + 12345) >>> 0;
    return (s >>> 16) % nVocab;
  });
}

/** One table entry: `arch` written with `weightType` from `seed`. */
export function oracleModel(arch: string, weightType: QuantType, seed: number): OracleModel {
  const writer = ORACLE_ARCHS[arch];
  if (!writer) throw new Error(`oracle models: no writer for architecture ${arch}`);
  return {
    name: `${arch}-${weightType.toLowerCase()}`,
    arch,
    weightType,
    seed,
    tokens: oracleTokens(N_TOKENS, spmVocab().tokens.length, seed),
    gguf: () => encodeGguf(writer({ weightType, seed })),
  };
}

/** A seed from the entry's name (FNV-1a): adding entries never changes the others' files. */
function seedOf(name: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < name.length; i++) h = Math.imul(h ^ name.charCodeAt(i), 0x01000193) >>> 0;
  return h;
}

/**
 * The weight types of the architectures after llama and qwen2 (which take every type): exact
 * weights, a 32-element block type and a K-quant, enough to show each architecture's own switches
 * under quantization without one file per type and architecture.
 */
export const ARCH_WEIGHT_TYPES: readonly QuantType[] = ['F32', 'Q8_0', 'Q4_K'];

/** Every architecture with its weight types, each from its own seed. */
export const ORACLE_MODELS: readonly OracleModel[] = Object.keys(ORACLE_ARCHS).flatMap((arch) =>
  (arch === 'llama' || arch === 'qwen2' ? ORACLE_WEIGHT_TYPES : ARCH_WEIGHT_TYPES).map((type) => oracleModel(arch, type, seedOf(`${arch}-${type}`))),
);

export function sha256(bytes: Uint8Array): string {
  return createHash('sha256').update(bytes).digest('hex');
}
