// A plain f64 reference of the llama / qwen2 forward pass, for checking the native engine's
// logits: embedding lookup, RMSNorm, RoPE (adjacent pairs for llama GGUF files, NeoX halves for
// qwen2), grouped-query attention with a causal mask, SiLU-gated FFN, output projection (tied to
// token_embd when output.weight is absent). Weights are given as f32 values by GGUF tensor name
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
}

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

/** Rotates each head of x (heads * headDim) in place for position pos. */
function rope(x: Float64Array, heads: number, headDim: number, pos: number, base: number, style: ReferenceConfig['ropeStyle']): void {
  const half = headDim / 2;
  for (let h = 0; h < heads; h++) {
    const o = h * headDim;
    for (let i = 0; i < half; i++) {
      const theta = pos * Math.pow(base, (-2 * i) / headDim);
      const c = Math.cos(theta);
      const s = Math.sin(theta);
      const a = style === 'neox' ? o + i : o + 2 * i;
      const b = style === 'neox' ? o + i + half : o + 2 * i + 1;
      const x0 = x[a]!;
      const x1 = x[b]!;
      x[a] = x0 * c - x1 * s;
      x[b] = x0 * s + x1 * c;
    }
  }
}

/** Logits for every position of `tokens` (one Float64Array of nVocab per position). */
export function referenceLogits(cfg: ReferenceConfig, w: Weights, tokens: readonly number[]): Float64Array[] {
  const out = w.get('output.weight') ?? get(w, 'token_embd.weight');
  return referenceHidden(cfg, w, tokens).map((h) => matvec(out, h, cfg.nVocab));
}

/** The hidden state after the output norm at every position of `tokens` (one Float64Array of nEmbd each). */
export function referenceHidden(cfg: ReferenceConfig, w: Weights, tokens: readonly number[]): Float64Array[] {
  const { nEmbd, nHead, nHeadKv, nFf } = cfg;
  const hd = nEmbd / nHead;
  const kvd = nHeadKv * hd;
  const group = nHead / nHeadKv;
  const embd = get(w, 'token_embd.weight');
  const keys: Float64Array[][] = Array.from({ length: cfg.nLayer }, () => []);
  const values: Float64Array[][] = Array.from({ length: cfg.nLayer }, () => []);
  const result: Float64Array[] = [];
  tokens.forEach((tok, pos) => {
    let x = Float64Array.from(embd.subarray(tok * nEmbd, (tok + 1) * nEmbd));
    for (let l = 0; l < cfg.nLayer; l++) {
      const p = `blk.${l}.`;
      const xb = rmsnorm(x, get(w, p + 'attn_norm.weight'), cfg.rmsEps);
      const q = matvec(get(w, p + 'attn_q.weight'), xb, nEmbd);
      const k = matvec(get(w, p + 'attn_k.weight'), xb, kvd);
      const v = matvec(get(w, p + 'attn_v.weight'), xb, kvd);
      addBias(q, w.get(p + 'attn_q.bias'));
      addBias(k, w.get(p + 'attn_k.bias'));
      addBias(v, w.get(p + 'attn_v.bias'));
      rope(q, nHead, hd, pos, cfg.ropeFreqBase, cfg.ropeStyle);
      rope(k, nHeadKv, hd, pos, cfg.ropeFreqBase, cfg.ropeStyle);
      keys[l]!.push(k);
      values[l]!.push(v);
      const att = new Float64Array(nEmbd);
      for (let h = 0; h < nHead; h++) {
        const g = Math.floor(h / group);
        const scores = new Float64Array(pos + 1);
        let mx = -Infinity;
        for (let t = 0; t <= pos; t++) {
          let s = 0;
          for (let i = 0; i < hd; i++) s += q[h * hd + i]! * keys[l]![t]![g * hd + i]!;
          scores[t] = s / Math.sqrt(hd);
          mx = Math.max(mx, scores[t]!);
        }
        let sum = 0;
        for (let t = 0; t <= pos; t++) sum += scores[t] = Math.exp(scores[t]! - mx);
        for (let t = 0; t <= pos; t++) {
          for (let i = 0; i < hd; i++) att[h * hd + i]! += (scores[t]! / sum) * values[l]![t]![g * hd + i]!;
        }
      }
      const o = matvec(get(w, p + 'attn_output.weight'), att, nEmbd);
      x = x.map((v2, i) => v2 + o[i]!);
      const xf = rmsnorm(x, get(w, p + 'ffn_norm.weight'), cfg.rmsEps);
      const gate = matvec(get(w, p + 'ffn_gate.weight'), xf, nFf);
      const up = matvec(get(w, p + 'ffn_up.weight'), xf, nFf);
      const hidden = gate.map((gv, i) => (gv / (1 + Math.exp(-gv))) * up[i]!);
      const down = matvec(get(w, p + 'ffn_down.weight'), hidden, nEmbd);
      x = x.map((v2, i) => v2 + down[i]!);
    }
    result.push(rmsnorm(x, get(w, 'output_norm.weight'), cfg.rmsEps));
  });
  return result;
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
