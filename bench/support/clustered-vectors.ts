// The vector benches' data: points around random centres, the shape of embedding collections
// (clusters of near neighbours) rather than uniform noise, from a seed so every run is the same.
import { rng } from '../../test/helpers/random.js';

/** `count` centres in [-1, 1]^dim, row by row, drawn from the seed `dim` (as the benches always have). */
export function randomCentres(dim: number, count = 100): Float32Array {
  const centres = new Float32Array(count * dim);
  const r = rng(dim);
  for (let i = 0; i < centres.length; i++) centres[i] = r() * 2 - 1;
  return centres;
}

/** n points around the centres (row by row), Gaussian spread 0.35, rounded to 6 decimals. */
export function clusteredVectors(n: number, dim: number, seed: number, centres: Float32Array): Float32Array {
  const r = rng(seed);
  const out = new Float32Array(n * dim);
  const c = centres.length / dim;
  for (let i = 0; i < n; i++) {
    const base = Math.floor(r() * c) * dim;
    for (let j = 0; j < dim; j++) {
      const g = Math.sqrt(-2 * Math.log(r() + 1e-12)) * Math.cos(2 * Math.PI * r());
      out[i * dim + j] = Math.round((centres[base + j]! + g * 0.35) * 1e6) / 1e6;
    }
  }
  return out;
}

/** Rows of a flat array as arrays of numbers (JSON bodies). */
export function rowsOf(values: Float32Array, dim: number): number[][] {
  return Array.from({ length: values.length / dim }, (_, i) => Array.from(values.subarray(i * dim, (i + 1) * dim)));
}
