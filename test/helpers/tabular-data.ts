// Seeded input data and ONNX normalisation for tabular tests, without onnxruntime-node (so that
// the GPU-only test file runs where only production dependencies and vitest are installed).
import { normalize } from '../../src/tabular/onnx/normalize.js';
import { parseOnnxModel } from '../../src/tabular/onnx/parse.js';
import type { NormalizedModel } from '../../src/tabular/onnx/types.js';
import { rng } from './random.js';

/** Uniform in [lo, hi). */
export function randomDoubles(n: number, seed: number, lo = -2, hi = 2): Float64Array {
  const r = rng(seed);
  return Float64Array.from({ length: n }, () => lo + (hi - lo) * r());
}

/** randomDoubles rounded to float32: the same seed gives the same values in either precision. */
export function randomFloats(n: number, seed: number, lo = -2, hi = 2): Float32Array {
  return Float32Array.from(randomDoubles(n, seed, lo, hi));
}

/** Whole numbers from lo to hi, both included. */
export function randomInts(n: number, seed: number, lo: number, hi: number): number[] {
  const r = rng(seed);
  return Array.from({ length: n }, () => lo + Math.floor((hi - lo + 1) * r()));
}

export function normalized(bytes: Uint8Array): NormalizedModel {
  return normalize(parseOnnxModel(bytes));
}
