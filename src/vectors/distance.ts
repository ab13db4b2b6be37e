// The three distances of DESIGN.md section 6 and how hnswlib's spaces map onto them:
//
//   metric  hnswlib space  hnswlib returns            we report
//   cosine  'cosine'       1 - dot(a/|a|, b/|b|)      as is: 1 - cos(a, b) (not below 0)
//   l2      'l2'           sum((a - b)^2)             its square root: the Euclidean distance
//   dot     'ip'           1 - dot(a, b)              minus one: -(a . b)
//
// All three conversions are increasing, so hnswlib's ascending order is ours too.
import type { Metric } from './types.js';

export type SpaceName = 'cosine' | 'l2' | 'ip';

export const SPACE: Record<Metric, SpaceName> = { cosine: 'cosine', l2: 'l2', dot: 'ip' };

/** hnswlib's distance to ours. */
export function fromSpace(metric: Metric, d: number): number {
  switch (metric) {
    case 'cosine':
      return Math.max(0, d); // rounding can put an identical vector a hair below 0
    case 'l2':
      return Math.sqrt(Math.max(0, d));
    case 'dot':
      return d - 1;
  }
}

// hnswlib computes in float32, and its SSE build (x86-64; hnswlib-node is built without -mavx)
// sums four lanes: lane k adds the products of elements k, k+4, k+8, ... of the whole blocks
// of 4 (or 16), the lanes are then added in order, and any remaining elements one by one. The
// exact scan below repeats that, rounding to float32 at each step (Math.fround), so that a
// filtered search answered by the scan reports the very distance the graph would. Other builds
// (arm64) sum in order.
const LANES = process.arch === 'x64' || process.arch === 'ia32';
const f = Math.fround;

// The term of element i: l2 (q - p)^2, otherwise q * p, each rounded to float32. The loops below
// are written out, not passed a closure, because the exact scan runs them over every vector a
// search must scan (the graph's queued points included): they are its whole cost.
type Vec = ArrayLike<number>;

/** Sum of the terms for i in [from, to), in order, in float32. */
function serialSum(l2: boolean, q: Vec, p: Vec, from: number, to: number): number {
  let s = 0;
  if (l2) {
    for (let i = from; i < to; i++) {
      const d = f(q[i]! - p[i]!);
      s = f(s + f(d * d));
    }
  } else {
    for (let i = from; i < to; i++) s = f(s + f(q[i]! * p[i]!));
  }
  return s;
}

/** hnswlib's 4-lane SSE sum of the terms for i in [0, to); `to` is a multiple of 4. */
function laneSum(l2: boolean, q: Vec, p: Vec, to: number): number {
  let l0 = 0;
  let l1 = 0;
  let l2s = 0;
  let l3 = 0;
  if (l2) {
    for (let i = 0; i < to; i += 4) {
      const d0 = f(q[i]! - p[i]!);
      const d1 = f(q[i + 1]! - p[i + 1]!);
      const d2 = f(q[i + 2]! - p[i + 2]!);
      const d3 = f(q[i + 3]! - p[i + 3]!);
      l0 = f(l0 + f(d0 * d0));
      l1 = f(l1 + f(d1 * d1));
      l2s = f(l2s + f(d2 * d2));
      l3 = f(l3 + f(d3 * d3));
    }
  } else {
    for (let i = 0; i < to; i += 4) {
      l0 = f(l0 + f(q[i]! * p[i]!));
      l1 = f(l1 + f(q[i + 1]! * p[i + 1]!));
      l2s = f(l2s + f(q[i + 2]! * p[i + 2]!));
      l3 = f(l3 + f(q[i + 3]! * p[i + 3]!));
    }
  }
  return f(f(f(l0 + l1) + l2s) + l3);
}

/** The sum as hnswlib's space for dimension n sums it (the dispatch of space_ip.h and space_l2.h). */
function hnswSum(l2: boolean, q: Vec, p: Vec, n: number): number {
  if (!LANES || n < 4) return serialSum(l2, q, p, 0, n);
  if (n % 4 === 0) return laneSum(l2, q, p, n);
  const whole = n > 16 ? n - (n % 16) : n - (n % 4);
  return f(laneSum(l2, q, p, whole) + serialSum(l2, q, p, whole, n));
}

/** hnswlib's own distance ('l2': squared; 'ip' and cosine: 1 - dot), in float32. */
export function spaceDistance(space: SpaceName, q: ArrayLike<number>, p: ArrayLike<number>): number {
  const n = q.length;
  if (space === 'l2') return hnswSum(true, q, p, n);
  return f(1 - hnswSum(false, q, p, n));
}

/**
 * Our distance between a query and a stored point as hnswlib holds it, computed as hnswlib
 * computes it (float32, its order of sums) and then converted as the graph's answers are (for
 * cosine both are already unit length: hnswlib normalises stored points, and the caller the query).
 */
export function exactDistance(metric: Metric, q: ArrayLike<number>, p: ArrayLike<number>): number {
  return fromSpace(metric, spaceDistance(SPACE[metric], q, p));
}

/** The vector scaled to unit length as hnswlib-node's cosine space does it, in float32 (zero stays zero). */
export function normalized(v: Float32Array): Float32Array {
  let s = 0;
  for (let i = 0; i < v.length; i++) s = f(s + f(v[i]! * v[i]!));
  const norm = f(Math.sqrt(Math.abs(s)));
  const out = new Float32Array(v);
  if (norm > 0) for (let i = 0; i < v.length; i++) out[i] = v[i]! / norm;
  return out;
}

/** The largest finite float32. */
export const FLOAT32_MAX = 3.4028234663852886e38;

/**
 * The shortest decimal that reads back as the same float32, as a JS number: a stored 0.1f comes
 * back as 0.1, not 0.10000000149011612.
 */
export function float32ToNumber(x: number): number {
  if (!Number.isFinite(x) || x === 0 || Number.isInteger(x)) return x;
  for (let p = 6; p <= 9; p++) {
    const y = Number(x.toPrecision(p));
    if (Math.fround(y) === x) return y;
  }
  return x;
}

export function float32ArrayToNumbers(v: Float32Array): number[] {
  const out = new Array<number>(v.length);
  for (let i = 0; i < v.length; i++) out[i] = float32ToNumber(v[i]!);
  return out;
}
