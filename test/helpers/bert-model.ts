// BERT-family test models and their f64 reference forward pass.
//
// - `wordPieceVocab()`: a WordPiece vocabulary of a few hundred pieces (letters, digits,
//   punctuation, common words, `##` continuations, a few CJK characters and an emoji), stored
//   as llama.cpp's GGUF converter stores BERT vocabularies: word-initial pieces get a U+2581
//   prefix, `##` continuations lose their `##`, [bracketed] specials stay as they are.
// - `bertModel()`: a complete `bert` or `nomic-bert` GGUF (random weights from a seed, llama.cpp's
//   tensor names and metadata keys) and the weights as the engine will see them (quantized types
//   dequantized again), for the reference.
// - `referenceEmbedding()`: the encoder in float64, written from the architecture's definition
//   (llama.cpp's llm_build_bert) independently of native/llm/encoder.cc.
import { dequantize, quantize, type QuantType } from './ggml-quants.js';
import { gv, seededRandom, type GgufWriteSpec, type GgufWriteTensor, type GgufWriteValue } from './gguf-writer.js';

export const SPECIALS = ['[PAD]', '[UNK]', '[CLS]', '[SEP]', '[MASK]'] as const;
export const PAD = 0, UNK = 1, CLS = 2, SEP = 3, MASK = 4;

const WORDS = `the a an and or of to in on at is it was be for with as by this that from hello world once upon time there
little girl named lily she loved play outside park day sun happy dog cat run code def return if else true false null
model embed text sentence token vector search query document data number one two three test unit café naive over
under what why how yes no maybe new york email example com https path`.split(/\s+/).filter(Boolean);
const CONTINUATIONS = ['s', 'es', 'ed', 'ing', 'ly', 'er', 'est', 'tion', 'ness', 'ment', 'able', 'ful', 'less', "'s"];
const PUNCT = [...'.,!?;:\'"()[]{}<>-_/\\@#$%^&*+=|~`'];
const CJK = ['中', '文', '测', '试', '日', '本', '語', '人'];
const OTHER = ['🙂', '👍', 'ß', 'æ', 'ø', 'ı', 'ж', 'и', 'з', 'ь', 'п', 'р', 'в', 'е', 'т', 'α', 'β', 'γ', 'λ', 'π', 'ᄒ', 'ᄀ'];

/** The vocabulary as a list of HF-style pieces (before conversion), specials first. */
export function wordPieceHfVocab(): string[] {
  const letters = [...'abcdefghijklmnopqrstuvwxyz'];
  const digits = [...'0123456789'];
  const out: string[] = [...SPECIALS];
  const add = (p: string) => {
    if (!out.includes(p)) out.push(p);
  };
  for (const p of [...letters, ...digits, ...PUNCT, ...CJK, ...OTHER, ...WORDS]) add(p);
  for (const p of [...letters, ...digits, ...CONTINUATIONS, 'ell', 'orl', 'ppy', 'ily']) add(`##${p}`);
  // Multi-piece words: "unbelievable" -> un ##believ ##able
  for (const p of ['un', '##believ', 'emb', '##edd', 'tok', '##en', '##ize', 'wor', '##ld']) add(p);
  return out;
}

/** llama.cpp's convert_hf_to_gguf BertModel.phantom: the stored text of an HF WordPiece piece. */
export function phantom(piece: string): string {
  if (piece.startsWith('[') && piece.endsWith(']')) return piece;
  if (piece.startsWith('##')) return piece.slice(2);
  return `\u2581${piece}`;
}

export interface WordPieceVocab {
  tokens: string[];
  metadata: Record<string, GgufWriteValue>;
}

export function wordPieceVocab(size?: number): WordPieceVocab {
  const tokens = wordPieceHfVocab().map(phantom);
  for (let i = 0; size !== undefined && tokens.length < size; i++) tokens.push(`\u2581filler${i}`);
  const types = Int32Array.from(tokens, (_, i) => (i < SPECIALS.length ? 3 : 1));
  return {
    tokens,
    metadata: {
      'tokenizer.ggml.model': 'bert',
      'tokenizer.ggml.tokens': tokens,
      'tokenizer.ggml.token_type': types,
      'tokenizer.ggml.token_type_count': gv.u32(2),
      'tokenizer.ggml.bos_token_id': gv.u32(CLS),
      'tokenizer.ggml.seperator_token_id': gv.u32(SEP),
      'tokenizer.ggml.unknown_token_id': gv.u32(UNK),
      'tokenizer.ggml.padding_token_id': gv.u32(PAD),
      'tokenizer.ggml.mask_token_id': gv.u32(MASK),
    },
  };
}

export type BertArch = 'bert' | 'nomic-bert';
export type PoolingName = 'mean' | 'cls' | 'last';
export const POOLING_TYPE: Record<PoolingName, number> = { mean: 1, cls: 2, last: 3 };

export interface BertModelOptions {
  arch: BertArch;
  nEmbd: number;
  nLayer: number;
  nHead: number;
  nFf: number;
  nCtx?: number;
  pooling?: PoolingName;
  /** Type of the 2-D matrices (token_embd included). Default F32. */
  weightType?: QuantType;
  seed?: number;
  normEps?: number;
  ropeFreqBase?: number;
  name?: string;
  /** Pads the WordPiece test vocabulary with filler pieces to this size (BERT-base: 30522; bench models). */
  vocabSize?: number;
}

export interface BertConfig {
  arch: BertArch;
  nEmbd: number;
  nLayer: number;
  nHead: number;
  nFf: number;
  nCtx: number;
  pooling: PoolingName;
  normEps: number;
  ropeFreqBase: number;
}

export interface BertModel {
  spec: GgufWriteSpec;
  config: BertConfig;
  /** Every tensor's values as stored (quantized ones dequantized), by GGUF name. */
  weights: Map<string, Float32Array>;
}

export function bertModel(o: BertModelOptions): BertModel {
  const a = o.arch;
  const vocab = wordPieceVocab(o.vocabSize);
  const nVocab = vocab.tokens.length;
  const config: BertConfig = {
    arch: a,
    nEmbd: o.nEmbd,
    nLayer: o.nLayer,
    nHead: o.nHead,
    nFf: o.nFf,
    nCtx: o.nCtx ?? 128,
    pooling: o.pooling ?? 'mean',
    normEps: o.normEps ?? 1e-12,
    ropeFreqBase: o.ropeFreqBase ?? 1000,
  };
  const wt = o.weightType ?? 'F32';
  const rnd = seededRandom(o.seed ?? 1);
  const scale = 1 / Math.sqrt(o.nEmbd);
  const tensors: GgufWriteTensor[] = [];
  const weights = new Map<string, Float32Array>();
  const add = (name: string, dims: number[], type: QuantType, gen: () => number) => {
    const n = dims.reduce((x, y) => x * y, 1);
    const data = new Float32Array(n);
    for (let i = 0; i < n; i++) data[i] = gen();
    tensors.push({ name, dims, type, data });
    weights.set(name, type === 'F32' ? data : dequantize(type, quantize(type, data), n));
  };
  const matrix = () => rnd.normal() * scale;
  const norm = () => 1 + rnd.normal() * 0.1;
  const bias = () => rnd.normal() * 0.05;
  const d = o.nEmbd;

  add('token_embd.weight', [d, nVocab], wt, () => rnd.normal() * 0.5);
  add('token_types.weight', [d, 2], 'F32', () => rnd.normal() * 0.1);
  if (a === 'bert') add('position_embd.weight', [d, config.nCtx], wt, () => rnd.normal() * 0.1);
  add('token_embd_norm.weight', [d], 'F32', norm);
  add('token_embd_norm.bias', [d], 'F32', bias);
  for (let l = 0; l < o.nLayer; l++) {
    const p = `blk.${l}.`;
    if (a === 'bert') {
      for (const x of ['q', 'k', 'v']) {
        add(`${p}attn_${x}.weight`, [d, d], wt, matrix);
        add(`${p}attn_${x}.bias`, [d], 'F32', bias);
      }
    } else {
      add(`${p}attn_qkv.weight`, [d, 3 * d], wt, matrix);
    }
    add(`${p}attn_output.weight`, [d, d], wt, matrix);
    if (a === 'bert') add(`${p}attn_output.bias`, [d], 'F32', bias);
    add(`${p}attn_output_norm.weight`, [d], 'F32', norm);
    add(`${p}attn_output_norm.bias`, [d], 'F32', bias);
    add(`${p}ffn_up.weight`, [d, o.nFf], wt, matrix);
    if (a === 'bert') add(`${p}ffn_up.bias`, [o.nFf], 'F32', bias);
    if (a === 'nomic-bert') add(`${p}ffn_gate.weight`, [d, o.nFf], wt, matrix);
    add(`${p}ffn_down.weight`, [o.nFf, d], wt, () => rnd.normal() / Math.sqrt(o.nFf));
    if (a === 'bert') add(`${p}ffn_down.bias`, [d], 'F32', bias);
    add(`${p}layer_output_norm.weight`, [d], 'F32', norm);
    add(`${p}layer_output_norm.bias`, [d], 'F32', bias);
  }

  const metadata: Record<string, GgufWriteValue> = {
    'general.architecture': a,
    'general.name': o.name ?? `tiny-${a}`,
    [`${a}.context_length`]: gv.u32(config.nCtx),
    [`${a}.embedding_length`]: gv.u32(d),
    [`${a}.block_count`]: gv.u32(o.nLayer),
    [`${a}.feed_forward_length`]: gv.u32(o.nFf),
    [`${a}.attention.head_count`]: gv.u32(o.nHead),
    [`${a}.attention.layer_norm_epsilon`]: gv.f32(config.normEps),
    [`${a}.attention.causal`]: false,
    [`${a}.pooling_type`]: gv.u32(POOLING_TYPE[config.pooling]),
    ...(a === 'nomic-bert' ? { [`${a}.rope.freq_base`]: gv.f32(config.ropeFreqBase) } : {}),
    ...vocab.metadata,
  };
  return { spec: { metadata, tensors }, config, weights };
}

// ---------------------------------------------------------------- the f64 reference

function layerNorm(x: readonly Float64Array[], w: Float32Array, b: Float32Array, eps: number): Float64Array[] {
  return x.map((row) => {
    const n = row.length;
    let mean = 0;
    for (const v of row) mean += v;
    mean /= n;
    let v2 = 0;
    for (const v of row) v2 += (v - mean) * (v - mean);
    const s = 1 / Math.sqrt(v2 / n + eps);
    return Float64Array.from(row, (v, i) => (v - mean) * s * w[i]! + b[i]!);
  });
}

/** y[t] = W x[t] (+ b): W is [rows][cols] stored row after row (GGUF dims [cols, rows]). */
function linear(x: Float64Array[], w: Float32Array, rows: number, b?: Float32Array, rowOffset = 0): Float64Array[] {
  const cols = x[0]!.length;
  return x.map((row) => {
    const y = new Float64Array(rows);
    for (let r = 0; r < rows; r++) {
      let s = b ? b[r]! : 0;
      const base = (rowOffset + r) * cols;
      for (let c = 0; c < cols; c++) s += w[base + c]! * row[c]!;
      y[r] = s;
    }
    return y;
  });
}

const gelu = (x: number) => 0.5 * x * (1 + Math.tanh(Math.sqrt(2 / Math.PI) * x * (1 + 0.044715 * x * x)));
const silu = (x: number) => x / (1 + Math.exp(-x));

function ropeNeox(m: Float64Array[], nHead: number, base: number): void {
  const hd = m[0]!.length / nHead;
  const half = hd / 2;
  m.forEach((row, pos) => {
    for (let h = 0; h < nHead; h++) {
      for (let i = 0; i < half; i++) {
        const a = pos * Math.pow(base, (-2 * i) / hd);
        const x0 = row[h * hd + i]!, x1 = row[h * hd + i + half]!;
        row[h * hd + i] = x0 * Math.cos(a) - x1 * Math.sin(a);
        row[h * hd + i + half] = x0 * Math.sin(a) + x1 * Math.cos(a);
      }
    }
  });
}

/** The pooled, L2-normalized embedding of one input, in float64. */
export function referenceEmbedding(cfg: BertConfig, w: Map<string, Float32Array>, tokens: readonly number[]): Float64Array {
  const W = (name: string) => {
    const t = w.get(name);
    if (!t) throw new Error(`reference: no tensor ${name}`);
    return t;
  };
  const d = cfg.nEmbd, n = tokens.length, hd = d / cfg.nHead;
  const tok = W('token_embd.weight'), types = W('token_types.weight');
  let x: Float64Array[] = tokens.map((id, pos) => {
    const row = new Float64Array(d);
    for (let i = 0; i < d; i++) {
      row[i] = tok[id * d + i]! + types[i]! + (cfg.arch === 'bert' ? W('position_embd.weight')[pos * d + i]! : 0);
    }
    return row;
  });
  x = layerNorm(x, W('token_embd_norm.weight'), W('token_embd_norm.bias'), cfg.normEps);
  for (let l = 0; l < cfg.nLayer; l++) {
    const p = `blk.${l}.`;
    let q: Float64Array[], k: Float64Array[], v: Float64Array[];
    if (cfg.arch === 'bert') {
      q = linear(x, W(`${p}attn_q.weight`), d, W(`${p}attn_q.bias`));
      k = linear(x, W(`${p}attn_k.weight`), d, W(`${p}attn_k.bias`));
      v = linear(x, W(`${p}attn_v.weight`), d, W(`${p}attn_v.bias`));
    } else {
      const qkv = W(`${p}attn_qkv.weight`);
      q = linear(x, qkv, d, undefined, 0);
      k = linear(x, qkv, d, undefined, d);
      v = linear(x, qkv, d, undefined, 2 * d);
      ropeNeox(q, cfg.nHead, cfg.ropeFreqBase);
      ropeNeox(k, cfg.nHead, cfg.ropeFreqBase);
    }
    // Bidirectional attention over the whole input.
    const att = x.map(() => new Float64Array(d));
    for (let h = 0; h < cfg.nHead; h++) {
      for (let i = 0; i < n; i++) {
        const s = new Float64Array(n);
        let mx = -Infinity;
        for (let j = 0; j < n; j++) {
          let dot = 0;
          for (let e = 0; e < hd; e++) dot += q[i]![h * hd + e]! * k[j]![h * hd + e]!;
          s[j] = dot / Math.sqrt(hd);
          mx = Math.max(mx, s[j]!);
        }
        let sum = 0;
        for (let j = 0; j < n; j++) sum += s[j] = Math.exp(s[j]! - mx);
        for (let j = 0; j < n; j++) {
          const out = att[i]!;
          for (let e = 0; e < hd; e++) out[h * hd + e] = out[h * hd + e]! + (s[j]! / sum) * v[j]![h * hd + e]!;
        }
      }
    }
    const o = linear(att, W(`${p}attn_output.weight`), d, w.get(`${p}attn_output.bias`));
    x = layerNorm(o.map((r, t) => r.map((val, i) => val + x[t]![i]!)), W(`${p}attn_output_norm.weight`), W(`${p}attn_output_norm.bias`), cfg.normEps);
    let hb: Float64Array[];
    if (cfg.arch === 'bert') {
      hb = linear(x, W(`${p}ffn_up.weight`), cfg.nFf, W(`${p}ffn_up.bias`)).map((r) => r.map(gelu));
    } else {
      const up = linear(x, W(`${p}ffn_up.weight`), cfg.nFf);
      const gate = linear(x, W(`${p}ffn_gate.weight`), cfg.nFf);
      hb = up.map((r, t) => r.map((u, i) => u * silu(gate[t]![i]!)));
    }
    const down = linear(hb, W(`${p}ffn_down.weight`), d, w.get(`${p}ffn_down.bias`));
    x = layerNorm(down.map((r, t) => r.map((val, i) => val + x[t]![i]!)), W(`${p}layer_output_norm.weight`), W(`${p}layer_output_norm.bias`), cfg.normEps);
  }
  const rows = cfg.pooling === 'mean' ? x : cfg.pooling === 'cls' ? [x[0]!] : [x[n - 1]!];
  const pooled = new Float64Array(d);
  for (const r of rows) for (let i = 0; i < d; i++) pooled[i] = pooled[i]! + r[i]! / rows.length;
  let norm = 0;
  for (const val of pooled) norm += val * val;
  norm = Math.sqrt(norm);
  return pooled.map((val) => (norm > 0 ? val / norm : 0));
}

/** max_i |a_i - b_i|: both are unit vectors, so this is also the error relative to their scale. */
export function maxAbsDiff(a: ArrayLike<number>, b: ArrayLike<number>): number {
  let m = 0;
  for (let i = 0; i < b.length; i++) m = Math.max(m, Math.abs(a[i]! - b[i]!));
  return m;
}

// ---------------------------------------------------------------- what the llama.cpp oracle records

/** Strings for the WordPiece tokenizer, beside the shared TEXTS of scripts/oracle/record.mjs. */
export const WORDPIECE_TEXTS = [
  'Hello, World! Unbelievable tokenize embedding',
  'The dogs were running happily; the cat slept.',
  '[CLS] hello [SEP] world [UNK] [MASK] [PAD]',
  '[cls] lowercase look-alikes [sep]',
  '##ing ##s ▁hello ▁',
  'CAFÉ Café café cafe\u0301 naïve NAÏVE',
  'Ångström Øre ß straße İstanbul ı',
  'e\u0301\u0301\u0301 a\u0308 o\u0323\u0302 n\u0303',
  '中文测试 日本語 人人 中a文b',
  '한국어 ᄒ ᄀ',
  'Жизнь и прочее; αβγ λ π',
  '🙂🙂 👍🏽 🙂x x🙂',
  '   leading and trailing   ',
  'tabs\tand\nnewlines\r\n\u00a0nbsp\u2003em\u3000ideographic',
  'zero\u200bwidth\u200cnon\u200djoiner\ufeffbom',
  'control\u0001\u0007\u001bchars\u007f\u0085',
  '$5 + 3 = 8 < 9 > 7 ^ ~ ` | and ¥€£ © ® ™ ° ± ×',
  '1234567890 3.14159 -42 1e-5 0x1F',
  'a.b,c;d:e!f?g(h)i[j]k{l}m<n>o',
  'def f(x):\n    return x * 2  # code',
  'https://example.com/path?q=1&r=2 email@example.com',
  'supercalifragilisticexpialidocious',
  'x'.repeat(150),
  'the the the the the the the the the the',
  '',
];

/** Token inputs (with [CLS] ... [SEP]) whose llama.cpp embeddings are recorded. */
export const EMBEDDING_ORACLE_INPUTS: number[][] = [
  [CLS, 40, 41, 42, SEP],
  [CLS, 100, SEP],
  [CLS, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, SEP],
  [CLS, SEP],
];

/** The models whose llama.cpp embeddings are recorded (F32: ggml's f16 GELU table is the main difference). */
export const EMBEDDING_ORACLE_MODELS: Record<string, BertModelOptions> = {
  'bert-mean': { arch: 'bert', nEmbd: 64, nLayer: 2, nHead: 4, nFf: 128, nCtx: 64, pooling: 'mean', seed: 21 },
  'bert-cls': { arch: 'bert', nEmbd: 64, nLayer: 2, nHead: 4, nFf: 128, nCtx: 64, pooling: 'cls', seed: 22 },
  'bert-last': { arch: 'bert', nEmbd: 64, nLayer: 2, nHead: 4, nFf: 128, nCtx: 64, pooling: 'last', seed: 23 },
  'nomic-bert-mean': { arch: 'nomic-bert', nEmbd: 64, nLayer: 2, nHead: 4, nFf: 128, nCtx: 64, pooling: 'mean', seed: 24 },
};

/** A short hash of the test vocabulary, so recorded ids are known to belong to it. */
export function wordPieceFingerprint(): string {
  let h = 2166136261;
  for (const ch of wordPieceVocab().tokens.join('\u0000')) {
    h ^= ch.codePointAt(0)!;
    h = Math.imul(h, 16777619) >>> 0;
  }
  return h.toString(16).padStart(8, '0');
}
