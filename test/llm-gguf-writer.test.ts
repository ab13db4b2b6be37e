// The test GGUF writer and its reference quantizers: the quantizers produce ggml's own blocks bit
// for bit and the dequantizers give back ggml's own floats (test/data/ggml-quants-reference.json,
// recorded from libggml by scripts/oracle), the block layouts are the documented ones, the
// quantization error is what each type promises, and tinyModel writes the tensors and keys
// llama.cpp expects (llama.cpp loads them: see scripts/oracle/record.mjs), readable by our reader.
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { GgufMetadata, parseGguf, type GgufFile } from '../src/llm/gguf/index.js';
import {
  dequantize,
  dequantizeQ4_0,
  dequantizeQ4_K,
  dequantizeQ6_K,
  dequantizeQ8_0,
  f16ToF32,
  f32ToBf16,
  f32ToF16,
  getScaleMinK4,
  quantize,
  QUANT_TYPES,
  type QuantType,
} from './helpers/ggml-quants.js';
import { encodeGguf, seededRandom, tinyModel } from './helpers/gguf-writer.js';
import { byteLevelBpeVocab, sentencePieceVocab } from './helpers/tiny-vocab.js';

const DATA = path.resolve(path.dirname(fileURLToPath(import.meta.url)), 'data');

const f32 = (b64: string) => {
  const b = Buffer.from(b64, 'base64');
  return new Float32Array(b.buffer.slice(b.byteOffset, b.byteOffset + b.length));
};
const u8 = (b64: string) => new Uint8Array(Buffer.from(b64, 'base64'));

describe('quantizers and dequantizers against ggml', () => {
  const ref = JSON.parse(fs.readFileSync(path.join(DATA, 'ggml-quants-reference.json'), 'utf8')) as {
    inputs: Record<string, string>;
    results: Record<string, Record<string, { bytes: string; dequantized: string }>>;
  };

  for (const [type, byInput] of Object.entries(ref.results)) {
    for (const [input, r] of Object.entries(byInput)) {
      it(`${type} of the "${input}" rows: the same blocks as ggml_quantize_chunk, the same floats as to_float`, () => {
        const x = f32(ref.inputs[input]!);
        const blocks = u8(r.bytes);
        expect(Buffer.from(quantize(type as QuantType, x)).equals(Buffer.from(blocks))).toBe(true);
        const ours = dequantize(type as QuantType, blocks, x.length);
        expect(Buffer.from(ours.buffer).equals(Buffer.from(f32(r.dequantized).buffer))).toBe(true);
      });
    }
  }
});

describe('block layouts (ggml-common.h)', () => {
  it('F16 and BF16 round to nearest even, keep infinities and quiet NaNs', () => {
    expect(f32ToF16(1)).toBe(0x3c00);
    expect(f32ToF16(65504)).toBe(0x7bff);
    expect(f32ToF16(65520)).toBe(0x7c00); // rounds up to infinity
    expect(f32ToF16(-0)).toBe(0x8000);
    expect(f32ToF16(2 ** -24)).toBe(1); // smallest subnormal
    expect(f32ToF16(2 ** -25)).toBe(0); // a tie, to even
    expect(f32ToF16(NaN) & 0x7e00).toBe(0x7e00);
    expect(f16ToF32(0x3555)).toBeCloseTo(1 / 3, 3);
    expect(f32ToBf16(1)).toBe(0x3f80);
    expect(f32ToBf16(NaN) & 0x7fc0).toBe(0x7fc0);
  });

  it('Q8_0 is {f16 d; i8 q[32]}', () => {
    const block = new Uint8Array(34);
    new DataView(block.buffer).setUint16(0, f32ToF16(0.5), true);
    for (let j = 0; j < 32; j++) block[2 + j] = (j - 16) & 0xff;
    expect(Array.from(dequantizeQ8_0(block, 32))).toEqual(Array.from({ length: 32 }, (_, j) => (j - 16) * 0.5));
  });

  it('Q4_0 is {f16 d; u8 q[16]}: low nibbles are elements 0-15, high nibbles 16-31, offset by 8', () => {
    const block = new Uint8Array(18);
    new DataView(block.buffer).setUint16(0, f32ToF16(2), true);
    for (let j = 0; j < 16; j++) block[2 + j] = j | ((15 - j) << 4);
    const y = Array.from(dequantizeQ4_0(block, 32));
    expect(y.slice(0, 16)).toEqual(Array.from({ length: 16 }, (_, j) => (j - 8) * 2));
    expect(y.slice(16)).toEqual(Array.from({ length: 16 }, (_, j) => (15 - j - 8) * 2));
  });

  it('Q4_K packs eight 6-bit scales and mins into 12 bytes (get_scale_min_k4)', () => {
    const rnd = seededRandom(3);
    for (let trial = 0; trial < 50; trial++) {
      const sc = Array.from({ length: 8 }, () => Math.floor(rnd.uniform() * 64));
      const mn = Array.from({ length: 8 }, () => Math.floor(rnd.uniform() * 64));
      // the packing of quantize_row_q4_K_ref
      const q = new Uint8Array(12);
      for (let j = 0; j < 8; j++) {
        if (j < 4) {
          q[j] = sc[j]!;
          q[j + 4] = mn[j]!;
        } else {
          q[j + 4] = (sc[j]! & 0xf) | ((mn[j]! & 0xf) << 4);
          q[j - 4]! |= (sc[j]! >> 4) << 6;
          q[j]! |= (mn[j]! >> 4) << 6;
        }
      }
      for (let j = 0; j < 8; j++) expect(getScaleMinK4(j, q, 0)).toEqual([sc[j], mn[j]]);
    }
  });

  it('Q4_K is {f16 d; f16 dmin; u8 scales[12]; u8 qs[128]}: y = d*sc*q - dmin*m per 32-element sub-block', () => {
    const block = new Uint8Array(144);
    const v = new DataView(block.buffer);
    v.setUint16(0, f32ToF16(0.25), true);
    v.setUint16(2, f32ToF16(0.5), true);
    for (let j = 0; j < 4; j++) {
      block[4 + j] = j + 1; // scale of sub-block j
      block[8 + j] = j; // min of sub-block j
    }
    for (let j = 4; j < 8; j++) block[4 + j + 4] = (j + 1) | (j << 4);
    for (let l = 0; l < 128; l++) block[16 + l] = (l % 16) | ((15 - (l % 16)) << 4);
    const y = dequantizeQ4_K(block, 256);
    for (let sub = 0; sub < 8; sub++) {
      for (let l = 0; l < 32; l++) {
        const byte = block[16 + 32 * (sub >> 1) + l]!;
        const q = sub % 2 === 0 ? byte & 0xf : byte >> 4;
        expect(y[32 * sub + l]).toBe(Math.fround(0.25 * (sub + 1) * q) - Math.fround(0.5 * sub));
      }
    }
  });

  it('Q6_K is {u8 ql[128]; u8 qh[64]; i8 scales[16]; f16 d}: 6-bit quants offset by 32, 16-element sub-blocks', () => {
    const block = new Uint8Array(210);
    const v = new DataView(block.buffer);
    v.setUint16(208, f32ToF16(0.125), true);
    for (let s = 0; s < 16; s++) v.setInt8(192 + s, s - 8);
    // every element's 6-bit code is (index % 64): low 4 bits in ql, high 2 bits in qh
    const code = (i: number) => i % 64;
    for (let half = 0; half < 2; half++) {
      for (let l = 0; l < 32; l++) {
        const e = (k: number) => code(128 * half + l + 32 * k);
        block[64 * half + l] = (e(0) & 0xf) | ((e(2) & 0xf) << 4);
        block[64 * half + l + 32] = (e(1) & 0xf) | ((e(3) & 0xf) << 4);
        block[128 + 32 * half + l] = (e(0) >> 4) | ((e(1) >> 4) << 2) | ((e(2) >> 4) << 4) | ((e(3) >> 4) << 6);
      }
    }
    const y = dequantizeQ6_K(block, 256);
    for (let i = 0; i < 256; i++) {
      const scale = Math.floor(i / 16) - 8;
      expect(y[i]).toBe(Math.fround(Math.fround(0.125 * scale) * (code(i) - 32)));
    }
  });
});

describe('quantization error', () => {
  const rnd = seededRandom(11);
  const x = Float32Array.from({ length: 4096 }, () => rnd.normal());
  // ggml's own blocks (the quantizers match them bit for bit), so these are ggml's errors; Q2_K's
  // reference quantizer fits each 16 values by their mean absolute error, hence its 0.3.
  const bound: Record<QuantType, number> = {
    F32: 0, F16: 1e-3, BF16: 5e-3, Q8_0: 1e-2, Q6_K: 3e-2, Q5_1: 0.045, Q5_K: 0.045, Q5_0: 0.05, Q4_1: 0.09, Q4_K: 0.09, Q4_0: 0.11,
    Q3_K: 0.17, Q2_K: 0.32, IQ4_NL: 0.085, IQ4_XS: 0.085, MXFP4: 0.12,
  };

  for (const type of QUANT_TYPES) {
    it(`${type} round-trips gaussian data within ${bound[type]} relative RMS error`, () => {
      const y = dequantize(type, quantize(type, x), x.length);
      let se = 0;
      let sx = 0;
      for (let i = 0; i < x.length; i++) {
        se += (x[i]! - y[i]!) ** 2;
        sx += x[i]! ** 2;
      }
      expect(Math.sqrt(se / sx)).toBeLessThanOrEqual(bound[type]);
    });
  }

  it('Q8_0 stays within half a step of every value, Q4_0 within one (its range is -8..7 steps)', () => {
    for (const [type, steps, within] of [['Q8_0', 127, 0.5], ['Q4_0', 8, 1]] as const) {
      const y = dequantize(type, quantize(type, x), x.length);
      for (let b = 0; b < x.length; b += 32) {
        const amax = Math.max(...Array.from(x.subarray(b, b + 32), Math.abs));
        // plus the f16 rounding of the scale (2^-11 relative) over the whole range
        const tolerance = (amax / steps) * (within + 2 ** -10 * steps) + 1e-7;
        for (let i = b; i < b + 32; i++) expect(Math.abs(x[i]! - y[i]!)).toBeLessThanOrEqual(tolerance);
      }
    }
  });

  it('refuses a length that is not whole blocks', () => {
    expect(() => quantize('Q4_K', new Float32Array(255))).toThrow('Q4_K needs a multiple of 256 elements, got 255');
    expect(() => quantize('Q8_0', new Float32Array(33))).toThrow('Q8_0 needs a multiple of 32 elements, got 33');
  });
});

describe('writer', () => {
  const meta = (f: GgufFile) => GgufMetadata.of(f);

  it('rejects tensors whose data does not match their shape', () => {
    expect(() => encodeGguf({ metadata: {}, tensors: [{ name: 'w', dims: [32, 2], type: 'F32', data: new Float32Array(63) }] })).toThrow(
      'tensor w: 63 values for shape [32, 2]',
    );
    expect(() => encodeGguf({ metadata: {}, tensors: [{ name: 'w', dims: [48], type: 'Q8_0', data: new Float32Array(48) }] })).toThrow(
      'tensor w: rows of 48 are not a multiple of the Q8_0 block size 32',
    );
  });

  it('a llama model with GQA and an untied output: llama.cpp tensor names, shapes and keys', async () => {
    const vocab = sentencePieceVocab();
    const m = tinyModel({ arch: 'llama', vocab, nEmbd: 256, nLayer: 2, nHead: 8, nHeadKv: 2, nFf: 512, nCtx: 1024, weightType: 'Q4_K', embeddingType: 'Q6_K', seed: 3 });
    const f = await parseGguf(encodeGguf(m.spec));
    const shapes = Object.fromEntries(f.tensors.map((t) => [t.name, `${t.type} ${t.dims.join('x')}`]));
    const nv = vocab.tokens.length;
    expect(shapes).toEqual({
      'token_embd.weight': `Q6_K 256x${nv}`,
      ...Object.fromEntries(
        [0, 1].flatMap((l) => [
          [`blk.${l}.attn_norm.weight`, 'F32 256'],
          [`blk.${l}.attn_q.weight`, 'Q4_K 256x256'],
          [`blk.${l}.attn_k.weight`, 'Q4_K 256x64'],
          [`blk.${l}.attn_v.weight`, 'Q4_K 256x64'],
          [`blk.${l}.attn_output.weight`, 'Q4_K 256x256'],
          [`blk.${l}.ffn_norm.weight`, 'F32 256'],
          [`blk.${l}.ffn_gate.weight`, 'Q4_K 256x512'],
          [`blk.${l}.ffn_up.weight`, 'Q4_K 256x512'],
          [`blk.${l}.ffn_down.weight`, 'Q4_K 512x256'],
        ]),
      ),
      'output_norm.weight': 'F32 256',
      'output.weight': `Q6_K 256x${nv}`,
    });
    const k = meta(f);
    expect(k.string('general.architecture')).toBe('llama');
    expect(k.integer('llama.context_length')).toBe(1024);
    expect(k.integer('llama.embedding_length')).toBe(256);
    expect(k.integer('llama.block_count')).toBe(2);
    expect(k.integer('llama.feed_forward_length')).toBe(512);
    expect(k.integer('llama.attention.head_count')).toBe(8);
    expect(k.integer('llama.attention.head_count_kv')).toBe(2);
    expect(k.number('llama.attention.layer_norm_rms_epsilon')).toBe(Math.fround(1e-5));
    expect(k.number('llama.rope.freq_base')).toBe(10000);
    expect(k.integer('llama.rope.dimension_count')).toBe(32);
    expect(k.string('tokenizer.ggml.model')).toBe('llama');
    expect(k.stringArray('tokenizer.ggml.tokens')).toEqual(vocab.tokens);
    expect(k.integer('tokenizer.ggml.bos_token_id')).toBe(1);
  });

  it('tensor data in the file is the quantized weights, which dequantize close to the floats', async () => {
    const vocab = sentencePieceVocab();
    const m = tinyModel({ arch: 'llama', vocab, nEmbd: 256, nLayer: 1, nHead: 4, nFf: 256, weightType: 'Q8_0', embeddingType: 'BF16', seed: 9 });
    const bytes = encodeGguf(m.spec);
    const f = await parseGguf(bytes);
    for (const t of f.tensors) {
      const data = bytes.subarray(t.fileOffset, t.fileOffset + t.byteSize);
      const weights = m.weights.get(t.name)!;
      expect(Buffer.from(data).equals(Buffer.from(quantize(t.type as QuantType, weights)))).toBe(true);
      const back = dequantize(t.type as QuantType, data, t.nElements);
      for (let i = 0; i < weights.length; i += 97) expect(back[i]).toBeCloseTo(weights[i]!, t.type === 'F32' ? 6 : 1);
    }
  });

  it('qwen2: Q/K/V biases, a tied output, rope base 1e6, a byte-level vocabulary', async () => {
    const vocab = byteLevelBpeVocab('qwen2', { addBos: false });
    const m = tinyModel({ arch: 'qwen2', vocab, nEmbd: 64, nLayer: 1, nHead: 4, nHeadKv: 2, nFf: 128, tiedOutput: true });
    const f = await parseGguf(encodeGguf(m.spec));
    const names = f.tensors.map((t) => t.name);
    expect(names).not.toContain('output.weight');
    expect(f.tensors.find((t) => t.name === 'blk.0.attn_q.bias')?.dims).toEqual([64]);
    expect(f.tensors.find((t) => t.name === 'blk.0.attn_k.bias')?.dims).toEqual([32]);
    expect(f.tensors.find((t) => t.name === 'blk.0.attn_v.bias')?.dims).toEqual([32]);
    const k = meta(f);
    expect(k.number('qwen2.rope.freq_base')).toBe(1000000);
    expect(k.string('tokenizer.ggml.pre')).toBe('qwen2');
    expect(k.stringArray('tokenizer.ggml.merges').length).toBeGreaterThan(300);
    expect(k.bool('tokenizer.ggml.add_bos_token')).toBe(false);
  });

  it('the same seed gives the same model', () => {
    const vocab = sentencePieceVocab();
    const a = encodeGguf(tinyModel({ arch: 'llama', vocab, nEmbd: 32, nLayer: 1, nHead: 2, nFf: 64, seed: 5 }).spec);
    const b = encodeGguf(tinyModel({ arch: 'llama', vocab, nEmbd: 32, nLayer: 1, nHead: 2, nFf: 64, seed: 5 }).spec);
    const c = encodeGguf(tinyModel({ arch: 'llama', vocab, nEmbd: 32, nLayer: 1, nHead: 2, nFf: 64, seed: 6 }).spec);
    expect(Buffer.from(a).equals(Buffer.from(b))).toBe(true);
    expect(Buffer.from(a).equals(Buffer.from(c))).toBe(false);
  });
});
