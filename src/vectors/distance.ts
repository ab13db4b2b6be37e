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

/**
 * Our distance between a query and a stored point as hnswlib holds it (for cosine both are
 * already unit length: hnswlib normalises stored points, and the caller the query).
 */
export function exactDistance(metric: Metric, q: ArrayLike<number>, p: ArrayLike<number>): number {
  const n = q.length;
  if (metric === 'l2') {
    let s = 0;
    for (let i = 0; i < n; i++) {
      const d = q[i]! - p[i]!;
      s += d * d;
    }
    return Math.sqrt(s);
  }
  let dot = 0;
  for (let i = 0; i < n; i++) dot += q[i]! * p[i]!;
  return metric === 'cosine' ? Math.max(0, 1 - dot) : -dot;
}

/** The vector scaled to unit length, as hnswlib's cosine space stores it (zero stays zero). */
export function normalized(v: Float32Array): Float32Array {
  let s = 0;
  for (let i = 0; i < v.length; i++) s += v[i]! * v[i]!;
  const inv = 1 / (Math.sqrt(s) + 1e-30);
  const out = new Float32Array(v.length);
  for (let i = 0; i < v.length; i++) out[i] = v[i]! * inv;
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
