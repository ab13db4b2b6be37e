// Correctness of the native f32 GEMM / GEMV against a float64 reference, for every SIMD level
// this machine supports (chosen per call with options.simd) and for 1 and 4 threads.
//
// Tolerance. Inputs are exact float32 values and the reference is computed in float64 from
// them, so the reference error is negligible. Each output element is a dot product of length K
// followed by the alpha/beta update. Whatever the summation order, blocking or use of FMA, every
// product a_ik*b_kj reaches the result through at most K additions, one multiplication, up to
// ceil(K/KC) <= K extra block accumulations into C, the alpha and beta products and the final
// rounding, i.e. at most n = 2K + 4 roundings with unit roundoff u = 2^-24. The classic bound
// (Higham, Accuracy and Stability of Numerical Algorithms, 3.1) then gives, per element,
//
//   |c_ij - ref_ij| <= gamma_n * (|alpha| * sum_k |a_ik||b_kj| + |beta| * |c0_ij|),
//   gamma_n = n u / (1 - n u),  n = 2K + 4.
//
// The bound is relative to the magnitudes involved (not to the possibly cancelled result), holds
// for every element, and is checked element by element: NaN or an out-of-place write fails it.
import { beforeAll, describe, expect, it } from 'vitest';

import { loadAddon } from '../src/native/addon.js';
import type { NativeAddon, SimdLevel } from '../src/native/surface.js';
import { engineInfo, gemm, gemmAsync, gemv, gemvAsync } from '../src/native/gemm.js';

const U = 2 ** -24;
function gamma(k: number): number {
  const n = 2 * k + 4;
  return (n * U) / (1 - n * U);
}

// mulberry32: small seeded PRNG so every run sees the same matrices.
function rng(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (s + 0x6d2b79f5) >>> 0;
    let t = s;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

function randomArray(length: number, seed: number): Float32Array {
  const next = rng(seed);
  const out = new Float32Array(length);
  for (let i = 0; i < length; i++) out[i] = next() * 2 - 1;
  return out;
}

interface GemmCase {
  m: number;
  n: number;
  k: number;
  transA: boolean;
  transB: boolean;
  alpha: number;
  beta: number;
  pad: number; // extra elements per row: lda, ldb, ldc exceed the minimum by this much
  nanC: boolean; // C starts filled with NaN (only meaningful with beta = 0)
}

interface PreparedGemm extends GemmCase {
  a: Float32Array;
  b: Float32Array;
  c0: Float32Array;
  lda: number;
  ldb: number;
  ldc: number;
  ref: Float64Array; // [m][n]
  bound: Float64Array; // [m][n]
}

function prepareGemm(tc: GemmCase, seed: number): PreparedGemm {
  const { m, n, k, transA, transB, alpha, beta, pad } = tc;
  const lda = Math.max(1, transA ? m : k) + pad;
  const ldb = Math.max(1, transB ? k : n) + pad;
  const ldc = Math.max(1, n) + pad;
  const a = randomArray((transA ? k : m) * lda, seed);
  const b = randomArray((transB ? n : k) * ldb, seed + 1);
  const c0 = tc.nanC ? new Float32Array(m * ldc).fill(Number.NaN) : randomArray(m * ldc, seed + 2);
  const ref = new Float64Array(m * n);
  const bound = new Float64Array(m * n);
  const g = gamma(k);
  for (let i = 0; i < m; i++) {
    for (let j = 0; j < n; j++) {
      let s = 0;
      let sa = 0;
      for (let p = 0; p < k; p++) {
        const av = a[transA ? p * lda + i : i * lda + p] as number;
        const bv = b[transB ? j * ldb + p : p * ldb + j] as number;
        s += av * bv;
        sa += Math.abs(av * bv);
      }
      const c = beta === 0 ? 0 : (c0[i * ldc + j] as number);
      ref[i * n + j] = alpha * s + beta * c;
      bound[i * n + j] = g * (Math.abs(alpha) * sa + Math.abs(beta) * Math.abs(c));
    }
  }
  return { ...tc, a, b, c0, lda, ldb, ldc, ref, bound };
}

// Returns a description of the first bad element, or null.
function checkGemm(p: PreparedGemm, c: Float32Array): string | null {
  for (let i = 0; i < p.m; i++) {
    for (let j = 0; j < p.ldc; j++) {
      const got = c[i * p.ldc + j] as number;
      if (j >= p.n) {
        // Padding between rows must be left alone.
        const before = p.c0[i * p.ldc + j] as number;
        if (!Object.is(got, before)) return `padding C[${i}][${j}] changed from ${before} to ${got}`;
        continue;
      }
      const want = p.ref[i * p.n + j] as number;
      const err = Math.abs(got - want);
      const bound = p.bound[i * p.n + j] as number;
      if (!(err <= bound)) return `C[${i}][${j}] = ${got}, reference ${want}, error ${err} > bound ${bound}`;
    }
  }
  return null;
}

const SHAPES: ReadonlyArray<[number, number, number]> = [
  [1, 1, 1],
  [7, 13, 5],
  [257, 129, 65],
  [1, 300, 77], // GEMV-shaped: one row of A
  [130, 1, 40], // GEMV-shaped: one column of B
  [6, 9, 0], // K = 0: C = beta * C
  [0, 5, 3],
  [33, 70, 600], // several K blocks
];

// Each shape with every transpose combination and three scalings:
// plain (alpha 1, beta 0), scaled accumulate with padded leading dimensions, and beta 0 over NaNs.
function gemmCases(): GemmCase[] {
  const out: GemmCase[] = [];
  for (const [m, n, k] of SHAPES) {
    for (const transA of [false, true]) {
      for (const transB of [false, true]) {
        out.push({ m, n, k, transA, transB, alpha: 1, beta: 0, pad: 0, nanC: false });
        out.push({ m, n, k, transA, transB, alpha: -0.75, beta: 1.5, pad: 3, nanC: false });
        out.push({ m, n, k, transA, transB, alpha: 2.5, beta: 0, pad: 1, nanC: true });
      }
    }
  }
  return out;
}

function caseName(tc: GemmCase): string {
  return `${tc.m}x${tc.n}x${tc.k} transA=${tc.transA} transB=${tc.transB} alpha=${tc.alpha} beta=${tc.beta} pad=${tc.pad}${tc.nanC ? ' NaN-C' : ''}`;
}

let addon: NativeAddon;
let levels: SimdLevel[] = [];
let prepared: PreparedGemm[] = [];

beforeAll(() => {
  addon = loadAddon();
  levels = addon.engineInfo().simd.available;
  prepared = gemmCases().map((tc, i) => prepareGemm(tc, 1000 + i * 17));
});

describe('engineInfo', () => {
  it('describes the SIMD levels, threads and CUDA build', () => {
    const info = engineInfo();
    expect(info.version).toMatch(/^\d+\.\d+\.\d+/);
    expect(info.simd.available[0]).toBe('scalar');
    expect(info.simd.available).toContain(info.simd.detected);
    expect(info.simd.available).toContain(info.simd.active);
    expect(info.simd.available.at(-1)).toBe(info.simd.detected);
    expect(Number.isInteger(info.threads) && info.threads >= 1).toBe(true);
    expect(typeof info.cuda.built).toBe('boolean');
    expect(Array.isArray(info.cuda.devices)).toBe(true);
    if (!info.cuda.built) {
      expect(info.cuda.devices).toEqual([]);
      expect(info.cuda.error).toBeNull();
    }
    if (process.arch === 'arm64') expect(info.simd.available).toContain('neon');
  });
});

describe.each([1, 4])('gemm with %i thread(s)', (threads) => {
  it('matches the float64 reference at every available SIMD level', () => {
    expect(levels.length).toBeGreaterThan(0);
    for (const simd of levels) {
      for (const p of prepared) {
        const c = p.c0.slice();
        const out = addon.gemmF32(p.transA, p.transB, p.m, p.n, p.k, p.alpha, p.a, p.lda, p.b, p.ldb, p.beta, c, p.ldc, {
          simd,
          threads,
        });
        expect(out).toBe(c);
        const problem = checkGemm(p, c);
        if (problem !== null) expect.fail(`${simd}, ${threads} thread(s), ${caseName(p)}: ${problem}`);
      }
    }
  });
});

describe('gemm wrapper', () => {
  it('fills in leading dimensions and allocates C', () => {
    const p = prepared.find((q) => q.m === 257 && q.transB && !q.transA && q.pad === 0 && q.beta === 0);
    if (!p) throw new Error('case not found');
    const c = gemm(p.m, p.n, p.k, p.a, p.b, { transB: true });
    expect(c.length).toBe(p.m * p.n);
    expect(checkGemm(p, c)).toBeNull();
  });

  it('accepts every SIMD level name, falling back to a supported one', () => {
    const p = prepared.find((q) => q.m === 7 && q.pad === 3 && q.transA && q.transB);
    if (!p) throw new Error('case not found');
    for (const simd of ['scalar', 'neon', 'avx2', 'avx512'] as const) {
      const c = p.c0.slice();
      gemm(p.m, p.n, p.k, p.a, p.b, { ...p, c, simd });
      expect(checkGemm(p, c)).toBeNull();
    }
  });

  it('gives the same bits for every thread count at one SIMD level', () => {
    const a = randomArray(300 * 200, 7);
    const b = randomArray(200 * 250, 8);
    const bytes = (x: Float32Array): Buffer => Buffer.from(x.buffer, x.byteOffset, x.byteLength);
    const one = bytes(gemm(300, 250, 200, a, b, { threads: 1 }));
    for (const threads of [2, 3, 4, 7]) {
      expect(bytes(gemm(300, 250, 200, a, b, { threads })).equals(one)).toBe(true);
    }
  });
});

describe('gemmAsync', () => {
  it('matches the synchronous result at every level and resolves with C', async () => {
    for (const simd of levels) {
      for (const p of prepared.filter((q) => q.m === 257 || q.m === 33)) {
        const c = p.c0.slice();
        const out = await gemmAsync(p.m, p.n, p.k, p.a, p.b, { ...p, c, simd, threads: 2 });
        expect(out).toBe(c);
        const problem = checkGemm(p, c);
        if (problem !== null) expect.fail(`${simd} async, ${caseName(p)}: ${problem}`);
      }
    }
  });

  it('runs concurrent calls correctly', async () => {
    const jobs = prepared.filter((q) => q.m >= 33).slice(0, 12);
    const outs = await Promise.all(
      jobs.map((p, i) =>
        addon.gemmF32Async(p.transA, p.transB, p.m, p.n, p.k, p.alpha, p.a, p.lda, p.b, p.ldb, p.beta, p.c0.slice(), p.ldc, {
          threads: 1 + (i % 3),
        }),
      ),
    );
    jobs.forEach((p, i) => expect(checkGemm(p, outs[i] as Float32Array)).toBeNull());
  });

  it('keeps the event loop running while it computes', async () => {
    const size = 640;
    const a = randomArray(size * size, 3);
    const b = randomArray(size * size, 4);
    let ticks = 0;
    let running = true;
    const tick = (): void => {
      ticks++;
      if (running) setImmediate(tick);
    };
    setImmediate(tick);
    await gemmAsync(size, size, size, a, b, { threads: 1, simd: 'scalar' });
    running = false;
    expect(ticks).toBeGreaterThan(0);
  });
});

// ---- GEMV -----------------------------------------------------------------------------------

interface GemvCase {
  m: number;
  n: number;
  transA: boolean;
  alpha: number;
  beta: number;
  pad: number;
  nanY: boolean;
}

interface PreparedGemv extends GemvCase {
  a: Float32Array;
  x: Float32Array;
  y0: Float32Array;
  lda: number;
  ref: Float64Array;
  bound: Float64Array;
}

function prepareGemv(tc: GemvCase, seed: number): PreparedGemv {
  const { m, n, transA, alpha, beta, pad } = tc;
  const lda = Math.max(1, n) + pad;
  const [xLen, yLen] = transA ? [m, n] : [n, m];
  const a = randomArray(m * lda, seed);
  const x = randomArray(xLen, seed + 1);
  const y0 = tc.nanY ? new Float32Array(yLen).fill(Number.NaN) : randomArray(yLen, seed + 2);
  const ref = new Float64Array(yLen);
  const bound = new Float64Array(yLen);
  const g = gamma(transA ? m : n);
  for (let o = 0; o < yLen; o++) {
    let s = 0;
    let sa = 0;
    for (let r = 0; r < xLen; r++) {
      const av = a[transA ? r * lda + o : o * lda + r] as number;
      const prod = av * (x[r] as number);
      s += prod;
      sa += Math.abs(prod);
    }
    const y = beta === 0 ? 0 : (y0[o] as number);
    ref[o] = alpha * s + beta * y;
    bound[o] = g * (Math.abs(alpha) * sa + Math.abs(beta) * Math.abs(y));
  }
  return { ...tc, a, x, y0, lda, ref, bound };
}

function checkGemv(p: PreparedGemv, y: Float32Array): string | null {
  for (let o = 0; o < p.ref.length; o++) {
    const got = y[o] as number;
    const err = Math.abs(got - (p.ref[o] as number));
    if (!(err <= (p.bound[o] as number))) return `y[${o}] = ${got}, reference ${p.ref[o]}, bound ${p.bound[o]}`;
  }
  return null;
}

const GEMV_SHAPES: ReadonlyArray<[number, number]> = [
  [1, 1],
  [7, 13],
  [300, 77],
  [77, 300],
  [1025, 515],
  [5, 0],
  [0, 4],
];

describe('gemv', () => {
  let cases: PreparedGemv[] = [];
  beforeAll(() => {
    let seed = 5000;
    for (const [m, n] of GEMV_SHAPES) {
      for (const transA of [false, true]) {
        cases.push(prepareGemv({ m, n, transA, alpha: 1, beta: 0, pad: 0, nanY: false }, (seed += 7)));
        cases.push(prepareGemv({ m, n, transA, alpha: -1.25, beta: 0.5, pad: 5, nanY: false }, (seed += 7)));
        cases.push(prepareGemv({ m, n, transA, alpha: 3, beta: 0, pad: 2, nanY: true }, (seed += 7)));
      }
    }
  });

  it.each([1, 4])('matches the float64 reference at every SIMD level with %i thread(s)', (threads) => {
    for (const simd of levels) {
      for (const p of cases) {
        const y = p.y0.slice();
        const out = addon.gemvF32(p.transA, p.m, p.n, p.alpha, p.a, p.lda, p.x, p.beta, y, { simd, threads });
        expect(out).toBe(y);
        const problem = checkGemv(p, y);
        if (problem !== null) {
          expect.fail(`${simd}, ${threads} thread(s), ${p.m}x${p.n} transA=${p.transA} beta=${p.beta}: ${problem}`);
        }
      }
    }
  });

  it('wrapper and async variant agree with the reference', async () => {
    for (const p of cases) {
      const y1 = gemv(p.m, p.n, p.a, p.x, { ...p, y: p.y0.slice() });
      expect(checkGemv(p, y1)).toBeNull();
      const y2 = await gemvAsync(p.m, p.n, p.a, p.x, { ...p, y: p.y0.slice() });
      expect(checkGemv(p, y2)).toBeNull();
    }
  });
});
