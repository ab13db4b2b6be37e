// The models whose greedy decoding llama.cpp recorded into test/data/architectures-llama-cpp.json
// (scripts/oracle/record-architectures.mts), rebuilt by the test from the same options: one small random
// model per architecture with each switch on (windows shorter than the decoding, soft-caps that
// bite, LongRoPE's long factors, Llama 3's rope_freqs), a SentencePiece vocabulary llama.cpp loads.
import { archModel, type ArchModel, type ArchModelOptions } from './arch-models.js';
import { gv } from './gguf-writer.js';
import { spmVocab } from './llm-models.js';

const shape = { nEmbd: 64, nLayer: 3, nHead: 4, nHeadKv: 2, nFf: 96, weightScale: 0.3, seed: 5 } as const;

export const ARCH_ORACLE_CASES: Record<string, { options: Omit<ArchModelOptions, 'vocab'>; contextLength: number }> = {
  qwen3: { options: { ...shape, arch: 'qwen3', headDim: 32, ropeFreqBase: 1000000 }, contextLength: 256 },
  // Smaller weights: with sqrt(dim)-scaled embeddings and a tied output, larger ones (0.2) only echo the last token.
  gemma2: {
    options: { ...shape, weightScale: 0.06, arch: 'gemma2', headDim: 32, metadata: { 'attention.sliding_window': gv.u32(6), attn_logit_softcapping: gv.f32(4), final_logit_softcapping: gv.f32(6) } },
    contextLength: 256,
  },
  gemma3: {
    options: { ...shape, nLayer: 7, arch: 'gemma3', headDim: 16, ropeFreqBase: 1000000, metadata: { 'attention.sliding_window': gv.u32(5), 'rope.scaling.type': 'linear', 'rope.scaling.factor': gv.f32(8) } },
    contextLength: 256,
  },
  // llama.cpp's vocabulary loader special-cases model names containing "phi3".
  phi3: {
    options: {
      ...shape,
      arch: 'phi3',
      name: 'tiny-p-three',
      nCtx: 512,
      longRope: { long: Array.from({ length: 8 }, (_, i) => 1 + i), short: Array.from({ length: 8 }, (_, i) => 1 + 0.1 * i), originalContext: 64, attnFactor: 1.2 },
    },
    contextLength: 512, // > 64: the long factors
  },
  llama3: { options: { ...shape, arch: 'llama', ropeFreqs: Array.from({ length: 8 }, (_, i) => 1 + i) }, contextLength: 256 },
};

/** The prompt every case decodes from: BOS and 11 tokens (word pieces and bytes). */
export const ARCH_ORACLE_PROMPT = [1, 262, 270, 280, 290, 265, 271, 282, 100, 120, 140, 288];
export const ARCH_ORACLE_TOKENS = 24;

export function archOracleModel(name: string): ArchModel {
  return archModel({ vocab: spmVocab(), ...ARCH_ORACLE_CASES[name]!.options });
}
