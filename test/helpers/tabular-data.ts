// Seeded input data and ONNX normalisation for tabular tests, without onnxruntime-node (so that
// the GPU-only test file runs where only production dependencies and vitest are installed).
import { normalize } from '../../src/tabular/onnx/operators.js';
import { parseOnnxModel } from '../../src/tabular/onnx/parse.js';
import type { NormalizedModel } from '../../src/tabular/onnx/types.js';
import { rng } from './api.js';

export function randomFloats(n: number, seed: number, lo = -2, hi = 2): Float32Array {
  const r = rng(seed);
  return Float32Array.from({ length: n }, () => lo + (hi - lo) * r());
}

export function normalized(bytes: Uint8Array): NormalizedModel {
  return normalize(parseOnnxModel(bytes));
}
