// The LLM engine's kernels at every SIMD level against the scalar kernels, on random data of
// awkward sizes (row counts and token counts that are not multiples of the tile sizes, a single
// block, odd GQA groups, head dimensions the vector code does not cover, KV blocks of one
// position). Called through llmKernelCheck of the test-only addon (test/helpers/testing-addon.ts),
// which runs one kernel of one level on the test's data.
//
// - quantized matmuls: the tile kernels (several rows x several tokens per call) and the one-dot-
//   per-row-and-token path of every level against the scalar dot products: the integer sums are
//   exact, only the float summation order differs (1e-5 relative to the magnitude of the sum);
//   and the scalar result against an f64 product of the dequantized weights with x (loose: the
//   activations are quantized to 8 bits);
// - activation quantization: byte-identical to the scalar quantizer;
// - attention of a GQA group over blocked KV rows, SiLU gating: within float rounding.
import { describe, expect, it } from 'vitest';
import type { SimdLevel } from '../src/native/surface.js';
import { engineInfo } from '../src/native/gemm.js';
import { dequantize, f16ToF32, f32ToF16, quantize, type QuantType } from './helpers/ggml-quants.js';
import { loadTestingAddon } from './helpers/testing-addon.js';

const addon = loadTestingAddon();
const levels = engineInfo().simd.available as SimdLevel[];
const simdLevels = levels.filter((l) => l !== 'scalar');

function rng(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    return s / 4294967296;
  };
}

function randomVector(n: number, seed: number, scale = 1): Float32Array {
  const r = rng(seed);
  const out = new Float32Array(n);
  for (let i = 0; i < n; i++) out[i] = (r() * 2 - 1) * scale * (r() < 0.05 ? 8 : 1); // a few outliers
  return out;
}

/** |a - b| relative to the magnitude of each row's terms (sum |w||x|), worst over all outputs. */
function worstError(got: Float32Array, want: Float32Array | Float64Array, magnitude: Float64Array): number {
  let worst = 0;
  for (let i = 0; i < want.length; i++) worst = Math.max(worst, Math.abs(got[i]! - want[i]!) / Math.max(magnitude[i]!, 1e-30));
  return worst;
}

interface Case {
  type: QuantType;
  rows: number;
  cols: number;
  n: number;
}

function buildCase(c: Case, seed: number) {
  const w = randomVector(c.rows * c.cols, seed, 0.05);
  const weights = quantize(c.type, w);
  const deq = dequantize(c.type, weights, c.rows * c.cols);
  const x = randomVector(c.n * c.cols, seed + 1);
  const exact = new Float64Array(c.n * c.rows);
  const magnitude = new Float64Array(c.n * c.rows);
  for (let t = 0; t < c.n; t++) {
    for (let r = 0; r < c.rows; r++) {
      let s = 0;
      let m = 0;
      for (let k = 0; k < c.cols; k++) {
        const p = deq[r * c.cols + k]! * x[t * c.cols + k]!;
        s += p;
        m += Math.abs(p);
      }
      exact[t * c.rows + r] = s;
      magnitude[t * c.rows + r] = m;
    }
  }
  return { weights, x, exact, magnitude };
}

const matmul = (c: Case, weights: Uint8Array, x: Float32Array, simd: SimdLevel, extra: object = {}) =>
  addon.llmKernelCheck('matmul', { ...c, weights, x, threads: 1, ...extra }, simd);

describe('quantized matmul kernels match the scalar kernels', () => {
  const shapes: Array<[number, number]> = [
    // [rows, n]. AVX-512: 1 or 4 rows x up to 4 tokens (Q8_0) and 1 row x up to 8 tokens (Q4_K,
    // Q5_K, Q6_K) below 8 tokens; from 8 tokens on, panels of 16 rows x 8 tokens (row counts 9, 6,
    // 37, 33: partial panels).
    [1, 1], [3, 1], [4, 4], [5, 2], [7, 3], [13, 5], [9, 9], [6, 17], [37, 8], [16, 20], [33, 12],
  ];
  const colsOf: Record<string, number[]> = {
    Q8_0: [32, 96, 288],
    Q4_0: [32, 160],
    Q4_1: [32, 160],
    Q5_0: [32, 160],
    Q5_1: [32, 160],
    Q2_K: [256, 768],
    Q3_K: [256, 768],
    Q4_K: [256, 768],
    Q5_K: [256, 768],
    Q6_K: [256, 512],
    IQ4_NL: [32, 160],
    IQ4_XS: [256, 768],
    MXFP4: [32, 160],
  };
  for (const type of ['Q8_0', 'Q4_K', 'Q4_0', 'Q6_K', 'Q4_1', 'Q5_0', 'Q5_1', 'Q2_K', 'Q3_K', 'Q5_K', 'IQ4_NL', 'IQ4_XS', 'MXFP4'] as QuantType[]) {
    it(`${type}: tiles and dots at every level, rows x tokens not multiples of the tiles`, () => {
      let seed = 1;
      for (const cols of colsOf[type]!) {
        for (const [rows, n] of shapes) {
          const c: Case = { type, rows, cols, n };
          const { weights, x, exact, magnitude } = buildCase(c, seed++);
          const scalar = matmul(c, weights, x, 'scalar');
          expect(worstError(scalar, exact, magnitude), `scalar vs f64 ${JSON.stringify(c)}`).toBeLessThan(0.05);
          for (const level of simdLevels) {
            const tiled = matmul(c, weights, x, level);
            const dots = matmul(c, weights, x, level, { tiles: false });
            expect(worstError(tiled, scalar, magnitude), `${level} tiles ${JSON.stringify(c)}`).toBeLessThan(1e-5);
            expect(worstError(dots, scalar, magnitude), `${level} dots ${JSON.stringify(c)}`).toBeLessThan(1e-5);
          }
        }
      }
    });
  }

  it('extreme blocks: Q8_0 quants of -128 and +127, Q4_K with all scales and mins at 63', () => {
    const r = rng(77);
    // Q8_0: random bytes for the quants (including -128, which ggml never writes), sane scales.
    const rows = 6, cols = 64, n = 5;
    const q8 = new Uint8Array(rows * (cols / 32) * 34);
    for (let b = 0; b < q8.length / 34; b++) {
      const v = new DataView(q8.buffer, b * 34, 34);
      v.setUint16(0, f32ToF16(0.001 + r() * 0.01), true);
      for (let i = 2; i < 34; i++) q8[b * 34 + i] = b % 3 === 0 ? (i % 2 ? 0x80 : 0x7f) : Math.floor(r() * 256);
    }
    // Q4_K: all nibbles 15 or random, every 6-bit scale and min at its maximum.
    const q4 = new Uint8Array(rows * 144);
    for (let b = 0; b < rows; b++) {
      const v = new DataView(q4.buffer, b * 144, 144);
      v.setUint16(0, f32ToF16(0.002), true);
      v.setUint16(2, f32ToF16(0.001), true);
      for (let i = 4; i < 16; i++) q4[b * 144 + i] = 0xff;
      for (let i = 16; i < 144; i++) q4[b * 144 + i] = b % 2 ? 0xff : Math.floor(r() * 256);
    }
    const x = new Float32Array(n * 256);
    for (let i = 0; i < x.length; i++) x[i] = i % 7 === 0 ? -1 : r() * 2 - 1; // activations at -127
    for (const [type, weights, c] of [['Q8_0', q8, cols], ['Q4_K', q4, 256]] as const) {
      const cs: Case = { type, rows, cols: c, n };
      const xs = new Float32Array(n * c);
      for (let t = 0; t < n; t++) xs.set(x.subarray(t * 256, t * 256 + c), t * c);
      const scalar = matmul(cs, weights, xs, 'scalar');
      const deq = dequantize(type, weights, rows * c);
      const magnitude = new Float64Array(n * rows);
      for (let t = 0; t < n; t++)
        for (let rr = 0; rr < rows; rr++)
          for (let k = 0; k < c; k++) magnitude[t * rows + rr]! += Math.abs(deq[rr * c + k]! * xs[t * c + k]!);
      for (const level of simdLevels) {
        expect(worstError(matmul(cs, weights, xs, level), scalar, magnitude), `${type} ${level}`).toBeLessThan(1e-5);
      }
    }
  });

  // Every bit pattern, not only the ones ggml's quantizer writes: random bytes with sane f16
  // super-block scales (Q3_K scales of -32, all hmask combinations, Q5_K / Q2_K mins at their
  // maximum, Q6_K scales of -128...), against the scalar kernels and, through the dequantized rows,
  // an f64 product; 5 rows x 3 tokens (AVX-512 row tiles) and 21 rows x 11 tokens (panels).
  it('random-byte blocks of the newer types: every level against the scalar kernels and f64', () => {
    const r = rng(78);
    const layouts: Array<[QuantType, number, number, number[]]> = [
      // type, block elements, block bytes, offsets of the f16 scales
      ['Q4_1', 32, 20, [0, 2]],
      ['Q5_0', 32, 22, [0]],
      ['Q5_1', 32, 24, [0, 2]],
      ['Q2_K', 256, 84, [80, 82]],
      ['Q3_K', 256, 110, [108]],
      ['Q5_K', 256, 176, [0, 2]],
      ['Q6_K', 256, 210, [208]],
      ['IQ4_NL', 32, 18, [0]],
      ['IQ4_XS', 256, 136, [0]],
      ['MXFP4', 32, 17, []], // its E8M0 exponent byte is set below
    ];
    for (const [type, blockElems, blockBytes, scaleAt] of layouts) for (const [rows, n] of [[5, 3], [21, 11]] as const) {
      const cols = 512;
      const weights = new Uint8Array((rows * cols * blockBytes) / blockElems);
      for (let i = 0; i < weights.length; i++) weights[i] = Math.floor(r() * 256);
      for (let b = 0; b < weights.length / blockBytes; b++) {
        const v = new DataView(weights.buffer, b * blockBytes, blockBytes);
        for (const at of scaleAt) v.setUint16(at, f32ToF16(0.001 + r() * 0.004), true);
        if (type === 'MXFP4') weights[b * blockBytes] = 118 + Math.floor(r() * 8); // scales 2^-10 .. 2^-3
      }
      const x = randomVector(n * cols, 79);
      const c: Case = { type, rows, cols, n };
      const deq = dequantize(type, weights, rows * cols);
      const exact = new Float64Array(n * rows);
      const magnitude = new Float64Array(n * rows);
      for (let t = 0; t < n; t++)
        for (let rr = 0; rr < rows; rr++)
          for (let k = 0; k < cols; k++) {
            exact[t * rows + rr]! += deq[rr * cols + k]! * x[t * cols + k]!;
            magnitude[t * rows + rr]! += Math.abs(deq[rr * cols + k]! * x[t * cols + k]!);
          }
      const scalar = matmul(c, weights, x, 'scalar');
      expect(worstError(scalar, exact, magnitude), `${type} scalar vs f64`).toBeLessThan(0.05);
      for (const level of simdLevels) {
        expect(worstError(matmul(c, weights, x, level), scalar, magnitude), `${type} ${level} ${rows}x${n}`).toBeLessThan(1e-5);
      }
    }
  });

  it('the result does not depend on the thread count', () => {
    const c: Case = { type: 'Q8_0', rows: 301, cols: 256, n: 7 };
    const { weights, x } = buildCase(c, 99);
    for (const level of levels) {
      expect(matmul(c, weights, x, level, { threads: 2 })).toEqual(matmul(c, weights, x, level, { threads: 1 }));
    }
  });
});

describe('activation quantization is byte-identical to the scalar quantizer', () => {
  for (const format of ['q8a', 'q8k'] as const) {
    it(format, () => {
      const block = format === 'q8a' ? 32 : 256;
      const x = randomVector(block * 9, 5, 3);
      x.fill(0, 0, block); // an all-zero block: scale 0
      // values landing exactly on .5 after scaling (round half to even) and the block maximum
      for (let i = block; i < 2 * block; i++) x[i] = ((i % 5) - 2) * 0.5 + (i === block ? 127 : 0);
      const scalar = addon.llmKernelCheck('quantize', { format, x }, 'scalar');
      for (const level of simdLevels) expect(addon.llmKernelCheck('quantize', { format, x }, level), level).toEqual(scalar);
    });
  }
});

describe("Q8A's scale is ggml's block_q8_0 scale: amax / 127 rounded to f16", () => {
  it('on every level, for random blocks of many magnitudes (subnormal f16 scales and the overflow edge included)', () => {
    const blocks = 64;
    const x = randomVector(32 * blocks, 17, 1);
    // magnitudes from 1e-9 (an f16-subnormal or zero scale) to 8e6 (amax / 127 near f16's 65504 limit)
    for (let b = 0; b < blocks; b++) for (let i = 0; i < 32; i++) x[b * 32 + i] = x[b * 32 + i]! * 10 ** (-9 + (16 * b) / blocks);
    for (const level of ['scalar' as const, ...simdLevels]) {
      const bytes = addon.llmKernelCheck('quantize', { format: 'q8a', x }, level);
      const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
      for (let b = 0; b < blocks; b++) {
        let amax = 0;
        for (let i = 0; i < 32; i++) amax = Math.max(amax, Math.abs(x[b * 32 + i]!));
        const expected = f16ToF32(f32ToF16(Math.fround(amax / 127)));
        expect(view.getFloat32(b * 36, true), `${level} block ${b}`).toBe(expected);
      }
    }
  });
});

describe('attention, SiLU and GELU kernels match the scalar ones', () => {
  it('attention of a GQA group over blocked KV rows', () => {
    let seed = 200;
    const cases = [
      // nq heads, head dim, positions, block size, row stride (KV heads * hd), head offset
      { nq: 1, hd: 8, len: 1, bs: 1, stride: 8, offset: 0 },
      { nq: 8, hd: 64, len: 37, bs: 16, stride: 256, offset: 128 },
      { nq: 3, hd: 16, len: 5, bs: 4, stride: 48, offset: 16 },
      { nq: 12, hd: 72, len: 40, bs: 3, stride: 144, offset: 72 },
      { nq: 7, hd: 128, len: 17, bs: 16, stride: 128, offset: 0 },
      { nq: 2, hd: 6, len: 9, bs: 2, stride: 12, offset: 6 }, // not a multiple of 8: scalar fallback
    ];
    // Each case also with gemma2's soft-capping of the scores (0.7: most scores here are larger).
    for (const c of cases.flatMap((c) => [c, { ...c, softcap: 0.7 }])) {
      const blocks = Math.ceil(c.len / c.bs);
      const args = {
        ...c,
        q: randomVector(c.nq * c.hd, seed++, 2),
        k: randomVector(blocks * c.bs * c.stride, seed++, 2),
        v: randomVector(blocks * c.bs * c.stride, seed++),
      };
      const scalar = addon.llmKernelCheck('attend', args, 'scalar');
      if ('softcap' in c && c.len > 1) {
        // The cap changes the weights (one position always has weight 1).
        const uncapped = addon.llmKernelCheck('attend', { ...args, softcap: 0 }, 'scalar');
        expect(Math.max(...scalar.map((x, i) => Math.abs(x - uncapped[i]!)))).toBeGreaterThan(1e-3);
      }
      for (const level of simdLevels) {
        const got = addon.llmKernelCheck('attend', args, level);
        let worst = 0;
        for (let i = 0; i < got.length; i++) worst = Math.max(worst, Math.abs(got[i]! - scalar[i]!));
        expect(worst, `${level} ${JSON.stringify(c)}`).toBeLessThan(2e-5);
      }
    }
  });

  it('SiLU gating, including large magnitudes', () => {
    const g = randomVector(1003, 300, 20);
    g.set([0, -0, 88, -88, 100, -100, 1e-8], 0);
    const u = randomVector(1003, 301);
    for (const level of levels) {
      const got = addon.llmKernelCheck('silu', { g, u }, level);
      for (let i = 0; i < g.length; i++) {
        const want = (g[i]! / (1 + Math.exp(-g[i]!))) * u[i]!;
        expect(Math.abs(got[i]! - want), `${level} g=${g[i]}`).toBeLessThanOrEqual(2e-6 * Math.max(1, Math.abs(want)));
      }
    }
  });

  it('GELU gating (tanh form), including large magnitudes, against the f64 formula', () => {
    const g = randomVector(1003, 302, 8);
    g.set([0, -0, 88, -88, 100, -100, 1e-8, -3, 3], 0);
    const u = randomVector(1003, 303);
    for (const level of levels) {
      const got = addon.llmKernelCheck('gelu', { g, u }, level);
      for (let i = 0; i < g.length; i++) {
        const x = g[i]!;
        const want = 0.5 * x * (1 + Math.tanh(Math.sqrt(2 / Math.PI) * (x + 0.044715 * x * x * x))) * u[i]!;
        expect(Math.abs(got[i]! - want), `${level} g=${x}`).toBeLessThanOrEqual(2e-6 * Math.max(1, Math.abs(want)));
      }
    }
  });
});
