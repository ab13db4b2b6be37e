// Small random GGUF decoders of the architectures beyond llama / qwen2 (qwen3, qwen3moe, gemma2,
// gemma3, phi3, and llama as Llama 3 and Mixtral files are), written with llama.cpp's tensor names and metadata keys,
// plus the f64 reference configuration (llm-reference.ts) that says what each file means: what
// llama.cpp reads from those keys, restated here from its definitions.
import { dequantize, quantize, type QuantType } from './ggml-quants.js';
import { decoderMetadata, gv, seededRandom, vocabMetadata, type GgufWriteSpec, type GgufWriteTensor, type GgufWriteValue, type TinyVocab } from './gguf-writer.js';
import type { ReferenceConfig } from './llm-reference.js';

export type Architecture = 'llama' | 'qwen3' | 'qwen3moe' | 'gemma2' | 'gemma3' | 'phi3';

export interface ArchModelOptions {
  arch: Architecture;
  vocab: TinyVocab;
  nEmbd: number;
  nLayer: number;
  nHead: number;
  nHeadKv?: number;
  /** attention.key_length (written when given). Default nEmbd / nHead. */
  headDim?: number;
  nFf: number;
  nCtx?: number;
  seed?: number;
  /** Standard deviation of the random matrices. Default 1 / sqrt(nEmbd). */
  weightScale?: number;
  ropeFreqBase?: number;
  rmsEps?: number;
  /** Extra metadata keys (prefixed with `<arch>.` unless general.* / tokenizer.*); null removes a key. */
  metadata?: Record<string, GgufWriteValue | null>;
  /** Tensors left out, by name (to make a bad file). */
  omit?: readonly string[];
  /** llama: a rope_freqs.weight of these divisors. */
  ropeFreqs?: ArrayLike<number>;
  /** phi3: rope_factors_long / rope_factors_short tensors and rope.scaling.type 'longrope'. */
  longRope?: { long: ArrayLike<number>; short: ArrayLike<number>; originalContext: number; attnFactor: number };
  /**
   * Mixture of experts (qwen3moe always, llama as Mixtral): `count` experts, `used` per token,
   * each of `ffn` hidden units (qwen3moe: expert_feed_forward_length; llama: feed_forward_length,
   * so there ffn must equal nFf). The router ffn_gate_inp stays F32, as llama.cpp's quantizer
   * leaves it.
   */
  experts?: { count: number; used: number; ffn: number };
  /** Type of the 2-D matrices (norms and RoPE factors stay F32). Default F32. */
  weightType?: QuantType;
  name?: string;
}

export interface ArchModel {
  spec: GgufWriteSpec;
  /** The values the engine reads from every tensor, by name (quantized ones dequantized). */
  weights: Map<string, Float32Array>;
  /** The reference configuration of this file as llama.cpp reads it (phi3: the short factors). */
  config: ReferenceConfig;
}

/**
 * A complete model of `arch`: every tensor llama.cpp's loader requires for it (qwen3 and gemma3's
 * per-head Q/K norms, gemma's post-norms, phi3's fused attn_qkv and gate-and-up ffn_up), random
 * normal F32 matrices and norm weights near 1 (gemma's GGUF norms already hold the +1).
 */
export function archModel(o: ArchModelOptions): ArchModel {
  const a = o.arch;
  const nHeadKv = o.nHeadKv ?? o.nHead;
  const hd = o.headDim ?? o.nEmbd / o.nHead;
  const qd = o.nHead * hd;
  const kvd = nHeadKv * hd;
  const nVocab = o.vocab.tokens.length;
  const rnd = seededRandom(o.seed ?? 1);
  const scale = o.weightScale ?? 1 / Math.sqrt(o.nEmbd);
  const weights = new Map<string, Float32Array>();
  const tensors: GgufWriteTensor[] = [];
  const omit = new Set(o.omit ?? []);
  const add = (name: string, dims: number[], gen: () => number | Float32Array, type: QuantType = 'F32') => {
    const n = dims.reduce((x, y) => x * y, 1);
    let data: Float32Array;
    const first = gen();
    if (first instanceof Float32Array) data = first;
    else {
      data = new Float32Array(n);
      data[0] = first;
      for (let i = 1; i < n; i++) data[i] = gen() as number;
    }
    weights.set(name, type === 'F32' ? data : dequantize(type, quantize(type, data), data.length));
    if (!omit.has(name)) tensors.push({ name, dims, type, data });
  };
  const wt = o.weightType ?? 'F32';
  const random = () => rnd.normal() * scale;
  const norm = () => 1 + rnd.normal() * 0.1;
  const fused = a === 'phi3';
  const gemma = a === 'gemma2' || a === 'gemma3';
  const qkNorm = a === 'qwen3' || a === 'qwen3moe' || a === 'gemma3';
  const experts = o.experts;
  if (a === 'qwen3moe' && !experts) throw new Error('arch-models: qwen3moe needs experts');
  if (experts && a === 'llama' && experts.ffn !== o.nFf) throw new Error("arch-models: llama's experts are feed_forward_length wide");

  add('token_embd.weight', [o.nEmbd, nVocab], random, wt);
  if (o.ropeFreqs) add('rope_freqs.weight', [hd / 2], () => Float32Array.from(o.ropeFreqs!));
  if (o.longRope) {
    add('rope_factors_long.weight', [hd / 2], () => Float32Array.from(o.longRope!.long));
    add('rope_factors_short.weight', [hd / 2], () => Float32Array.from(o.longRope!.short));
  }
  for (let l = 0; l < o.nLayer; l++) {
    const p = `blk.${l}.`;
    add(p + 'attn_norm.weight', [o.nEmbd], norm);
    if (fused) add(p + 'attn_qkv.weight', [o.nEmbd, qd + 2 * kvd], random, wt);
    else {
      add(p + 'attn_q.weight', [o.nEmbd, qd], random, wt);
      add(p + 'attn_k.weight', [o.nEmbd, kvd], random, wt);
      add(p + 'attn_v.weight', [o.nEmbd, kvd], random, wt);
    }
    if (qkNorm) {
      add(p + 'attn_q_norm.weight', [hd], norm);
      add(p + 'attn_k_norm.weight', [hd], norm);
    }
    add(p + 'attn_output.weight', [qd, o.nEmbd], random, wt);
    if (gemma) add(p + 'post_attention_norm.weight', [o.nEmbd], norm);
    add(p + 'ffn_norm.weight', [o.nEmbd], norm);
    if (experts) {
      // 3-D tensors [cols, rows, expert]: one expert's matrix after another.
      add(p + 'ffn_gate_inp.weight', [o.nEmbd, experts.count], random);
      add(p + 'ffn_gate_exps.weight', [o.nEmbd, experts.ffn, experts.count], random, wt);
      add(p + 'ffn_up_exps.weight', [o.nEmbd, experts.ffn, experts.count], random, wt);
      add(p + 'ffn_down_exps.weight', [experts.ffn, o.nEmbd, experts.count], random, wt);
      continue;
    }
    if (fused) add(p + 'ffn_up.weight', [o.nEmbd, 2 * o.nFf], random, wt);
    else {
      add(p + 'ffn_gate.weight', [o.nEmbd, o.nFf], random, wt);
      add(p + 'ffn_up.weight', [o.nEmbd, o.nFf], random, wt);
    }
    add(p + 'ffn_down.weight', [o.nFf, o.nEmbd], random, wt);
    if (gemma) add(p + 'post_ffw_norm.weight', [o.nEmbd], norm);
  }
  add('output_norm.weight', [o.nEmbd], norm);
  // gemma2's output is token_embd; the others get their own output matrix.
  if (a !== 'gemma2') add('output.weight', [o.nEmbd, nVocab], random, wt);

  const ropeFreqBase = o.ropeFreqBase ?? 10000;
  const rmsEps = o.rmsEps ?? 1e-6;
  const metadata: Record<string, GgufWriteValue> = {
    ...decoderMetadata(a, { ...o, nHeadKv, headDim: hd, rmsEps, ropeFreqBase }),
    ...(o.headDim !== undefined ? { [`${a}.attention.key_length`]: gv.u32(hd), [`${a}.attention.value_length`]: gv.u32(hd) } : {}),
    ...(o.longRope
      ? {
          [`${a}.rope.scaling.type`]: 'longrope',
          [`${a}.rope.scaling.attn_factor`]: gv.f32(o.longRope.attnFactor),
          [`${a}.rope.scaling.original_context_length`]: gv.u32(o.longRope.originalContext),
        }
      : {}),
    ...(experts
      ? {
          [`${a}.expert_count`]: gv.u32(experts.count),
          [`${a}.expert_used_count`]: gv.u32(experts.used),
          ...(a === 'qwen3moe' ? { [`${a}.expert_feed_forward_length`]: gv.u32(experts.ffn) } : {}),
        }
      : {}),
    ...vocabMetadata(o.vocab),
  };
  for (const [key, value] of Object.entries(o.metadata ?? {})) {
    const full = /^(general|tokenizer)\./.test(key) ? key : `${a}.${key}`;
    if (value === null) delete metadata[full];
    else metadata[full] = value;
  }

  return { spec: { metadata, tensors }, weights, config: referenceConfig(o, metadata, rmsEps) };
}

function num(v: GgufWriteValue | undefined): number | undefined {
  if (v === undefined) return undefined;
  if (typeof v === 'number') return v;
  if (typeof v === 'object' && 'value' in v) return Number(v.value);
  if (typeof v === 'object' && 'values' in v) return undefined; // an array: the engine refuses it
  throw new Error('not a number');
}

/** What llama.cpp makes of the file's metadata (src/models/<arch>.cpp, llama-hparams.cpp). */
function referenceConfig(o: ArchModelOptions, md: Record<string, GgufWriteValue>, rmsEps: number): ReferenceConfig {
  const a = o.arch;
  const key = (k: string) => num(md[`${a}.${k}`]);
  const hd = o.headDim ?? o.nEmbd / o.nHead;
  const base = key('rope.freq_base') ?? 10000;
  // llama.cpp: no type means linear; every type but none applies rope.scaling.factor.
  const linear = md[`${a}.rope.scaling.type`] === 'none' ? 1 : (key('rope.scaling.factor') ?? 1);
  const cfg: ReferenceConfig = {
    nEmbd: o.nEmbd,
    nLayer: o.nLayer,
    nHead: o.nHead,
    nHeadKv: o.nHeadKv ?? o.nHead,
    nFf: o.nFf,
    nVocab: o.vocab.tokens.length,
    ropeFreqBase: base,
    rmsEps,
    ropeStyle: a === 'llama' ? 'adjacent' : 'neox',
    headDim: hd,
    ropeLinear: Array.from({ length: o.nLayer }, () => linear),
  };
  if (o.ropeFreqs) cfg.ropeFactors = o.ropeFreqs;
  if (o.longRope) {
    cfg.ropeFactors = o.longRope.short;
    cfg.ropeAttnFactor = o.longRope.attnFactor;
  }
  if (a === 'qwen3' || a === 'qwen3moe' || a === 'gemma3') cfg.qkNorm = true;
  // Both route as llama.cpp's build_moe_ffn with softmax gating and norm_w: top k, renormalized.
  if (o.experts) cfg.moe = { nExpert: o.experts.count, nUsed: o.experts.used, nFfExp: o.experts.ffn, renormalize: true };
  if (a === 'gemma2' || a === 'gemma3') {
    cfg.postNorms = true;
    cfg.embedScale = Math.sqrt(o.nEmbd);
    cfg.ffnActivation = 'gelu';
    // Sliding layers: l % pattern < pattern - 1 (gemma2: pattern 2, window default 4096;
    // gemma3: pattern 6, only when the file sets a window, its local layers at base 10000).
    const window = key('attention.sliding_window') ?? (a === 'gemma2' ? 4096 : 0);
    const pattern = key('attention.sliding_window_pattern') ?? (a === 'gemma2' ? 2 : 6);
    const local = (l: number) => window > 0 && l % pattern < pattern - 1;
    cfg.windows = Array.from({ length: o.nLayer }, (_, l) => (local(l) ? window : 0));
    if (a === 'gemma3') {
      cfg.ropeBases = Array.from({ length: o.nLayer }, (_, l) => (local(l) ? (key('rope.freq_base_swa') ?? 10000) : base));
      cfg.ropeLinear = Array.from({ length: o.nLayer }, (_, l) => (local(l) ? 1 : linear));
      const cap = key('final_logit_softcapping');
      if (cap) cfg.finalSoftcap = cap; // 0: none
    } else {
      cfg.attnSoftcap = key('attn_logit_softcapping') ?? 50;
      cfg.finalSoftcap = key('final_logit_softcapping') ?? 30;
      // Local layers: rope.freq_base_swa when set (default the global base), scaled alike.
      const swaBase = key('rope.freq_base_swa');
      if (swaBase !== undefined) cfg.ropeBases = Array.from({ length: o.nLayer }, (_, l) => (local(l) ? swaBase : base));
    }
  }
  return cfg;
}
