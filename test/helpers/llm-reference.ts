// A plain f64 reference of the decoder forward pass, for checking the native engine's logits:
// embedding lookup, RMSNorm, RoPE (adjacent pairs for llama GGUF files, NeoX halves for the
// others), grouped-query attention with a causal mask, SiLU-gated FFN, output projection (tied to
// token_embd when output.weight is absent). The optional switches of ReferenceConfig are the
// other architectures' differences (qwen3, gemma2, gemma3, phi3; qwen3moe and Mixtral's experts), written from their definitions
// (HF transformers / llama.cpp's graphs), not from the engine's code. Weights are given as f32 values by GGUF tensor name
// (for quantized files: the *dequantized* values, so the comparison isolates the engine's own
// arithmetic, including its 8-bit activation quantization).
import { dequantize, quantize, type QuantType } from './ggml-quants.js';
import { tinyModel, type TinyModel, type TinyModelOptions } from './gguf-writer.js';

export interface ReferenceConfig {
  nEmbd: number;
  nLayer: number;
  nHead: number;
  nHeadKv: number;
  nFf: number;
  nVocab: number;
  ropeFreqBase: number;
  rmsEps: number;
  ropeStyle: 'adjacent' | 'neox';
  /** Head dimension when not nEmbd / nHead (qwen3, gemma: attention.key_length). */
  headDim?: number;
  /** Per-head RMSNorm of q and k (blk.N.attn_q_norm / attn_k_norm) before RoPE: qwen3, gemma3. */
  qkNorm?: boolean;
  /** x += norm(f(norm(x))) with blk.N.post_attention_norm / post_ffw_norm: gemma2, gemma3. */
  postNorms?: boolean;
  /** Token embeddings times this (gemma: sqrt(nEmbd)). */
  embedScale?: number;
  /** Multiplies q . k; default 1 / sqrt(headDim). */
  attnScale?: number;
  /** scores = cap * tanh(scores / cap) before the softmax (gemma2). */
  attnSoftcap?: number;
  /** logits = cap * tanh(logits / cap) (gemma2). */
  finalSoftcap?: number;
  /** The gated FFN's activation: SiLU, or GELU's tanh form (gemma). */
  ffnActivation?: 'silu' | 'gelu';
  /** Per layer: a window w > 0 lets position p see only p - w + 1 .. p. */
  windows?: number[];
  /** Per layer: the RoPE base (default ropeFreqBase) and linear scaling factor (default 1). */
  ropeBases?: number[];
  ropeLinear?: number[];
  /** Frequency divisors (Llama 3's rope_freqs, phi3's LongRoPE factors), [headDim / 2]. */
  ropeFactors?: ArrayLike<number>;
  /** cos and sin times this (LongRoPE's attention factor). */
  ropeAttnFactor?: number;
  /**
   * Mixture-of-experts FFN (qwen3moe, Mixtral-style llama): p = softmax(ffn_gate_inp x), the
   * nUsed largest (lower index first on a tie), weights p / (sum of those) when renormalize, and
   * y = sum w_e * down_e(silu(gate_e x) * up_e x) over them, expert e's matrices rows
   * [e * rows, (e + 1) * rows) of ffn_{gate,up,down}_exps.
   */
  moe?: { nExpert: number; nUsed: number; nFfExp: number; renormalize: boolean };
}

/** The experts each position chose in each layer: routes[layer][position] = expert ids, best first. */
export type Routes = number[][][];

type Weights = Map<string, Float32Array>;

function get(w: Weights, name: string): Float32Array {
  const t = w.get(name);
  if (!t) throw new Error(`reference: missing tensor ${name}`);
  return t;
}

/** y[r] = sum_c W[r * cols + c] x[c]: W is a GGUF [cols, rows] tensor (one row per output). */
function matvec(W: Float32Array, x: Float64Array, rows: number): Float64Array {
  const cols = x.length;
  const y = new Float64Array(rows);
  for (let r = 0; r < rows; r++) {
    let s = 0;
    const o = r * cols;
    for (let c = 0; c < cols; c++) s += W[o + c]! * x[c]!;
    y[r] = s;
  }
  return y;
}

function rmsnorm(x: Float64Array, w: Float32Array, eps: number): Float64Array {
  let ss = 0;
  for (const v of x) ss += v * v;
  const scale = 1 / Math.sqrt(ss / x.length + eps);
  return x.map((v, i) => v * scale * w[i]!);
}

function addBias(x: Float64Array, b: Float32Array | undefined): void {
  if (b) for (let i = 0; i < x.length; i++) x[i]! += b[i]!;
}

interface RopeParams {
  base: number;
  linear: number;
  factors?: ArrayLike<number>;
  attnFactor: number;
}

/** Rotates each head of x (heads * headDim) in place for position pos. */
function rope(x: Float64Array, heads: number, headDim: number, pos: number, r: RopeParams, style: ReferenceConfig['ropeStyle']): void {
  const half = headDim / 2;
  for (let h = 0; h < heads; h++) {
    const o = h * headDim;
    for (let i = 0; i < half; i++) {
      const theta = (pos * Math.pow(r.base, (-2 * i) / headDim)) / r.linear / (r.factors ? r.factors[i]! : 1);
      const c = Math.cos(theta) * r.attnFactor;
      const s = Math.sin(theta) * r.attnFactor;
      const a = style === 'neox' ? o + i : o + 2 * i;
      const b = style === 'neox' ? o + i + half : o + 2 * i + 1;
      const x0 = x[a]!;
      const x1 = x[b]!;
      x[a] = x0 * c - x1 * s;
      x[b] = x0 * s + x1 * c;
    }
  }
}

/** Rows [first, first + count) of a GGUF matrix of `cols` columns (a fused tensor's part). */
function rows(W: Float32Array, cols: number, first: number, count: number): Float32Array {
  return W.subarray(first * cols, (first + count) * cols);
}

/** x / rms(x) * w over each of the consecutive rows of w.length values in x. */
function rmsnormRows(x: Float64Array, w: Float32Array, eps: number): Float64Array {
  const out = new Float64Array(x.length);
  for (let o = 0; o < x.length; o += w.length) out.set(rmsnorm(x.subarray(o, o + w.length), w, eps), o);
  return out;
}

const gelu = (x: number) => 0.5 * x * (1 + Math.tanh(Math.sqrt(2 / Math.PI) * (x + 0.044715 * x * x * x)));
const softcap = (x: number, cap: number | undefined) => (cap ? cap * Math.tanh(x / cap) : x);

/** Logits for every position of `tokens` (one Float64Array of nVocab per position). */
export function referenceLogits(cfg: ReferenceConfig, w: Weights, tokens: readonly number[], routes?: Routes): Float64Array[] {
  const out = w.get('output.weight') ?? get(w, 'token_embd.weight');
  return referenceHidden(cfg, w, tokens, routes).map((h) => matvec(out, h, cfg.nVocab).map((v) => softcap(v, cfg.finalSoftcap)));
}

/** The hidden state after the output norm at every position of `tokens` (one Float64Array of nEmbd each). */
export function referenceHidden(cfg: ReferenceConfig, w: Weights, tokens: readonly number[], routes?: Routes): Float64Array[] {
  const { nEmbd, nHead, nHeadKv, nFf } = cfg;
  const hd = cfg.headDim ?? nEmbd / nHead;
  const qd = nHead * hd;
  const kvd = nHeadKv * hd;
  const attnScale = cfg.attnScale ?? 1 / Math.sqrt(hd);
  const group = nHead / nHeadKv;
  const embd = get(w, 'token_embd.weight');
  const keys: Float64Array[][] = Array.from({ length: cfg.nLayer }, () => []);
  const values: Float64Array[][] = Array.from({ length: cfg.nLayer }, () => []);
  const result: Float64Array[] = [];
  tokens.forEach((tok, pos) => {
    let x = Float64Array.from(embd.subarray(tok * nEmbd, (tok + 1) * nEmbd)).map((v) => v * (cfg.embedScale ?? 1));
    for (let l = 0; l < cfg.nLayer; l++) {
      const p = `blk.${l}.`;
      const xb = rmsnorm(x, get(w, p + 'attn_norm.weight'), cfg.rmsEps);
      const qkv = w.get(p + 'attn_qkv.weight'); // phi3: Q, K, V rows in one matrix
      const q = matvec(qkv ? rows(qkv, nEmbd, 0, qd) : get(w, p + 'attn_q.weight'), xb, qd);
      let k = matvec(qkv ? rows(qkv, nEmbd, qd, kvd) : get(w, p + 'attn_k.weight'), xb, kvd);
      const v = matvec(qkv ? rows(qkv, nEmbd, qd + kvd, kvd) : get(w, p + 'attn_v.weight'), xb, kvd);
      addBias(q, w.get(p + 'attn_q.bias'));
      addBias(k, w.get(p + 'attn_k.bias'));
      addBias(v, w.get(p + 'attn_v.bias'));
      let qn = q;
      if (cfg.qkNorm) {
        qn = rmsnormRows(q, get(w, p + 'attn_q_norm.weight'), cfg.rmsEps);
        k = rmsnormRows(k, get(w, p + 'attn_k_norm.weight'), cfg.rmsEps);
      }
      const r: RopeParams = {
        base: cfg.ropeBases?.[l] ?? cfg.ropeFreqBase,
        linear: cfg.ropeLinear?.[l] ?? 1,
        ...(cfg.ropeFactors ? { factors: cfg.ropeFactors } : {}),
        attnFactor: cfg.ropeAttnFactor ?? 1,
      };
      rope(qn, nHead, hd, pos, r, cfg.ropeStyle);
      rope(k, nHeadKv, hd, pos, r, cfg.ropeStyle);
      keys[l]!.push(k);
      values[l]!.push(v);
      const window = cfg.windows?.[l] ?? 0;
      const first = window > 0 ? Math.max(0, pos - window + 1) : 0;
      const att = new Float64Array(qd);
      for (let h = 0; h < nHead; h++) {
        const g = Math.floor(h / group);
        const scores = new Float64Array(pos + 1);
        let mx = -Infinity;
        for (let t = first; t <= pos; t++) {
          let s = 0;
          for (let i = 0; i < hd; i++) s += qn[h * hd + i]! * keys[l]![t]![g * hd + i]!;
          scores[t] = softcap(s * attnScale, cfg.attnSoftcap);
          mx = Math.max(mx, scores[t]!);
        }
        let sum = 0;
        for (let t = first; t <= pos; t++) sum += scores[t] = Math.exp(scores[t]! - mx);
        for (let t = first; t <= pos; t++) {
          for (let i = 0; i < hd; i++) att[h * hd + i]! += (scores[t]! / sum) * values[l]![t]![g * hd + i]!;
        }
      }
      let o = matvec(get(w, p + 'attn_output.weight'), att, nEmbd);
      if (cfg.postNorms) o = rmsnorm(o, get(w, p + 'post_attention_norm.weight'), cfg.rmsEps);
      x = x.map((v2, i) => v2 + o[i]!);
      const xf = rmsnorm(x, get(w, p + 'ffn_norm.weight'), cfg.rmsEps);
      if (cfg.moe) {
        const moe = moeFfn(cfg.moe, w, p, xf, nEmbd);
        ((routes ??= [])[l] ??= [])[pos] = moe.experts;
        x = x.map((v2, i) => v2 + moe.y[i]!);
        continue;
      }
      const gateW = w.get(p + 'ffn_gate.weight');
      const upW = get(w, p + 'ffn_up.weight'); // phi3: gate rows then up rows, no ffn_gate
      const gate = matvec(gateW ?? rows(upW, nEmbd, 0, nFf), xf, nFf);
      const up = matvec(gateW ? upW : rows(upW, nEmbd, nFf, nFf), xf, nFf);
      const act = cfg.ffnActivation === 'gelu' ? gelu : (g: number) => g / (1 + Math.exp(-g));
      const hidden = gate.map((gv, i) => act(gv) * up[i]!);
      let down = matvec(get(w, p + 'ffn_down.weight'), hidden, nEmbd);
      if (cfg.postNorms) down = rmsnorm(down, get(w, p + 'post_ffw_norm.weight'), cfg.rmsEps);
      x = x.map((v2, i) => v2 + down[i]!);
    }
    result.push(rmsnorm(x, get(w, 'output_norm.weight'), cfg.rmsEps));
  });
  return result;
}

const silu = (g: number) => g / (1 + Math.exp(-g));

/** One token's mixture-of-experts FFN (ReferenceConfig.moe) of the normed input xf. */
function moeFfn(moe: NonNullable<ReferenceConfig['moe']>, w: Weights, p: string, xf: Float64Array, nEmbd: number) {
  const { nExpert, nUsed, nFfExp } = moe;
  const logits = matvec(get(w, p + 'ffn_gate_inp.weight'), xf, nExpert);
  const mx = Math.max(...logits);
  const e = logits.map((v) => Math.exp(v - mx));
  const total = e.reduce((a, b) => a + b, 0);
  const probs = e.map((v) => v / total);
  const experts = Array.from({ length: nExpert }, (_, i) => i)
    .sort((a, b) => probs[b]! - probs[a]! || a - b)
    .slice(0, nUsed);
  const sum = moe.renormalize ? experts.reduce((s, i) => s + probs[i]!, 0) : 1;
  const y = new Float64Array(nEmbd);
  for (const ex of experts) {
    const gate = matvec(rows(get(w, p + 'ffn_gate_exps.weight'), nEmbd, ex * nFfExp, nFfExp), xf, nFfExp);
    const up = matvec(rows(get(w, p + 'ffn_up_exps.weight'), nEmbd, ex * nFfExp, nFfExp), xf, nFfExp);
    const hidden = gate.map((g, i) => silu(g) * up[i]!);
    const down = matvec(rows(get(w, p + 'ffn_down_exps.weight'), nFfExp, ex * nEmbd, nEmbd), hidden, nEmbd);
    const weight = probs[ex]! / sum;
    for (let i = 0; i < nEmbd; i++) y[i]! += weight * down[i]!;
  }
  return { experts, y };
}

/** A vocabulary of n plain tokens ("t0", "t1", ...), BOS 1, EOS 2. */
export function plainVocab(n: number): TinyModelOptions['vocab'] {
  return { model: 'llama', tokens: Array.from({ length: n }, (_, i) => `t${i}`), bosId: 1, eosId: 2 };
}

export interface ReferenceModel {
  model: TinyModel;
  config: ReferenceConfig;
  /** The values the engine sees: each tensor's data after quantize + dequantize. */
  weights: Weights;
}

/** A random tinyModel plus its reference config and dequantized weights. */
export function referenceModel(o: TinyModelOptions): ReferenceModel {
  const model = tinyModel(o);
  const weights: Weights = new Map();
  for (const t of model.spec.tensors ?? []) {
    const data = t.data as Float32Array;
    const type = t.type as QuantType;
    weights.set(t.name, type === 'F32' ? data : dequantize(type, quantize(type, data), data.length));
  }
  const config: ReferenceConfig = {
    nEmbd: o.nEmbd,
    nLayer: o.nLayer,
    nHead: o.nHead,
    nHeadKv: o.nHeadKv ?? o.nHead,
    nFf: o.nFf,
    nVocab: o.vocab.tokens.length,
    ropeFreqBase: o.ropeFreqBase ?? (o.arch === 'qwen2' ? 1000000 : 10000),
    rmsEps: o.rmsEps ?? 1e-5,
    ropeStyle: o.arch === 'qwen2' ? 'neox' : 'adjacent',
  };
  return { model, config, weights };
}

/** max |a - b| / max |b| over all elements. */
export function relativeError(actual: ArrayLike<number>, expected: ArrayLike<number>): number {
  let diff = 0;
  let scale = 0;
  for (let i = 0; i < expected.length; i++) {
    diff = Math.max(diff, Math.abs(actual[i]! - expected[i]!));
    scale = Math.max(scale, Math.abs(expected[i]!));
  }
  return diff / scale;
}
