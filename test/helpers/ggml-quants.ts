// Reference quantizers and dequantizers for the tensor types the engine supports (F32, F16, BF16,
// Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, Q2_K, Q3_K, Q4_K, Q5_K, Q6_K, IQ4_NL, IQ4_XS, MXFP4), ported from ggml's ggml-quants.c (`quantize_row_*_ref`,
// `dequantize_row_*`) with the byte layouts of ggml-common.h:
//
//   Q8_0  {f16 d; i8 q[32]}                                   34 bytes / 32 elements
//   Q4_0  {f16 d; u8 q[16]}   q[j] low nibble = element j, high nibble = element j+16, offset 8
//   Q4_K  {f16 d; f16 dmin; u8 scales[12]; u8 qs[128]}       144 bytes / 256 elements
//         8 sub-blocks of 32 with a 6-bit scale and a 6-bit min each (get_scale_min_k4 packing);
//         qs[32*k + l]: low nibble = element 64k + l, high nibble = element 64k + 32 + l
//   Q6_K  {u8 ql[128]; u8 qh[64]; i8 scales[16]; f16 d}        210 bytes / 256 elements
//         16 sub-blocks of 16 with an int8 scale; 6-bit quants offset by 32
//   Q5_0  {f16 d; u8 qh[4]; u8 qs[16]}  as Q4_0 plus bit 4 of element j in bit j of qh, offset 16
//   Q4_1  {f16 d; f16 m; u8 qs[16]}, Q5_1 {f16 d; f16 m; u8 qh[4]; u8 qs[16]}: Q4_0 / Q5_0's
//         quants without offset, y = d * q + m
//   Q2_K  {u8 scales[16]; u8 qs[64]; f16 d; f16 dmin}           84 bytes / 256 elements
//         16 sub-blocks of 16, 4-bit scale (low nibble) and min (high); 2-bit quants
//   Q3_K  {u8 hmask[32]; u8 qs[64]; u8 scales[12]; f16 d}      110 bytes / 256 elements
//         16 sub-blocks of 16, 6-bit scales offset by 32; 3-bit quants offset by 4
//   Q5_K  {f16 d; f16 dmin; u8 scales[12]; u8 qh[32]; u8 qs[128]} 176 bytes / 256 elements
//         Q4_K's sub-blocks and scales with a fifth bit per value in qh
//   IQ4_NL {f16 d; u8 qs[16]}: Q4_0's nibbles index 16 non-linear values (IQ4_VALUES), y = d * v
//   IQ4_XS {f16 d; u16 scales_h; u8 scales_l[4]; u8 qs[128]}     136 bytes / 256 elements
//         8 IQ4_NL-like sub-blocks of 32 with 6-bit scales offset by 32 (low 4 bits in scales_l,
//         high 2 in scales_h)
//   MXFP4 {u8 e; u8 qs[16]}: E8M0 exponent, FP4 E2M1 codes packed as Q4_0's (MXFP4_VALUES are the
//         E2M1 values doubled), y = 2^(e - 128) * v                17 bytes / 32 elements
//
// Arithmetic is float32 throughout (Math.fround after every operation, nearest_int rounding half
// to even) so the blocks match ggml's own. A C compiler may contract a*b-c into an FMA, so compare
// the engine's dequantized values with a relative tolerance of a few float32 ulps, not bitwise.

const f = Math.fround;

const f32buf = new Float32Array(1);
const u32buf = new Uint32Array(f32buf.buffer);

/** IEEE half bits of a float32 value, round to nearest even (as F16C and ggml's fallback do). */
export function f32ToF16(value: number): number {
  f32buf[0] = value;
  const x = u32buf[0]!;
  const sign = (x >>> 16) & 0x8000;
  const exp = (x >>> 23) & 0xff;
  let mant = x & 0x7fffff;
  if (exp === 0xff) return sign | 0x7c00 | (mant !== 0 ? 0x200 : 0);
  const e = exp - 127 + 15;
  if (e >= 0x1f) return sign | 0x7c00;
  if (e <= 0) {
    if (e < -10) return sign;
    mant |= 0x800000;
    const shift = 14 - e;
    let h = mant >>> shift;
    const rem = mant & ((1 << shift) - 1);
    const half = 1 << (shift - 1);
    if (rem > half || (rem === half && (h & 1) !== 0)) h++;
    return sign | h;
  }
  let h = (e << 10) | (mant >>> 13);
  const rem = mant & 0x1fff;
  if (rem > 0x1000 || (rem === 0x1000 && (h & 1) !== 0)) h++; // a carry into the exponent is right
  return sign | h;
}

export function f16ToF32(h: number): number {
  const sign = h & 0x8000 ? -1 : 1;
  const exp = (h >>> 10) & 0x1f;
  const mant = h & 0x3ff;
  if (exp === 0) return sign * mant * 2 ** -24;
  if (exp === 0x1f) return mant ? NaN : sign * Infinity;
  return sign * (1 + mant / 1024) * 2 ** (exp - 15);
}

/** bfloat16 bits, ggml_compute_fp32_to_bf16: round to nearest even, NaN kept quiet. */
export function f32ToBf16(value: number): number {
  f32buf[0] = value;
  const x = u32buf[0]!;
  if ((x & 0x7fffffff) > 0x7f800000) return ((x >>> 16) | 64) & 0xffff;
  return ((x + (0x7fff + ((x >>> 16) & 1))) >>> 16) & 0xffff;
}

export function bf16ToF32(b: number): number {
  u32buf[0] = (b & 0xffff) << 16;
  return f32buf[0]!;
}

/** ggml's nearest_int: round half to even of a float32 (the 1.5 * 2^23 trick). */
function nearestInt(x: number): number {
  return f(f(x) + 12582912) - 12582912;
}

/** C roundf: half away from zero. */
function roundAway(x: number): number {
  return x < 0 ? -Math.round(-x) : Math.round(x);
}

const clamp = (v: number, lo: number, hi: number) => (v < lo ? lo : v > hi ? hi : v);

function requireMultiple(n: number, block: number, type: string): void {
  if (n % block !== 0) throw new Error(`${type} needs a multiple of ${block} elements, got ${n}`);
}

// ---------------------------------------------------------------- F32 / F16 / BF16

export function quantizeF32(x: Float32Array): Uint8Array {
  return new Uint8Array(Float32Array.from(x).buffer);
}

export function dequantizeF32(bytes: Uint8Array, n: number): Float32Array {
  return new Float32Array(bytes.slice(0, n * 4).buffer);
}

export function quantizeF16(x: Float32Array): Uint8Array {
  const out = new Uint16Array(x.length);
  for (let i = 0; i < x.length; i++) out[i] = f32ToF16(x[i]!);
  return new Uint8Array(out.buffer);
}

export function dequantizeF16(bytes: Uint8Array, n: number): Float32Array {
  const h = new Uint16Array(bytes.slice(0, n * 2).buffer);
  return Float32Array.from(h, f16ToF32);
}

export function quantizeBF16(x: Float32Array): Uint8Array {
  const out = new Uint16Array(x.length);
  for (let i = 0; i < x.length; i++) out[i] = f32ToBf16(x[i]!);
  return new Uint8Array(out.buffer);
}

export function dequantizeBF16(bytes: Uint8Array, n: number): Float32Array {
  const h = new Uint16Array(bytes.slice(0, n * 2).buffer);
  return Float32Array.from(h, bf16ToF32);
}

// ---------------------------------------------------------------- Q8_0

const QK8_0 = 32;
const Q8_0_BYTES = 34;

export function quantizeQ8_0(x: Float32Array): Uint8Array {
  requireMultiple(x.length, QK8_0, 'Q8_0');
  const nb = x.length / QK8_0;
  const out = new Uint8Array(nb * Q8_0_BYTES);
  const view = new DataView(out.buffer);
  for (let i = 0; i < nb; i++) {
    let amax = 0;
    for (let j = 0; j < QK8_0; j++) amax = Math.max(amax, Math.abs(x[i * QK8_0 + j]!));
    const d = f(amax / 127);
    const id = d !== 0 ? f(1 / d) : 0;
    view.setUint16(i * Q8_0_BYTES, f32ToF16(d), true);
    for (let j = 0; j < QK8_0; j++) view.setInt8(i * Q8_0_BYTES + 2 + j, roundAway(f(x[i * QK8_0 + j]! * id)));
  }
  return out;
}

export function dequantizeQ8_0(bytes: Uint8Array, n: number): Float32Array {
  requireMultiple(n, QK8_0, 'Q8_0');
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const y = new Float32Array(n);
  for (let i = 0; i < n / QK8_0; i++) {
    const d = f16ToF32(view.getUint16(i * Q8_0_BYTES, true));
    for (let j = 0; j < QK8_0; j++) y[i * QK8_0 + j] = f(view.getInt8(i * Q8_0_BYTES + 2 + j) * d);
  }
  return y;
}

// ---------------------------------------------------------------- Q4_0

const QK4_0 = 32;
const Q4_0_BYTES = 18;

export function quantizeQ4_0(x: Float32Array): Uint8Array {
  requireMultiple(x.length, QK4_0, 'Q4_0');
  const nb = x.length / QK4_0;
  const out = new Uint8Array(nb * Q4_0_BYTES);
  const view = new DataView(out.buffer);
  for (let i = 0; i < nb; i++) {
    let amax = 0;
    let max = 0;
    for (let j = 0; j < QK4_0; j++) {
      const v = x[i * QK4_0 + j]!;
      if (amax < Math.abs(v)) {
        amax = Math.abs(v);
        max = v;
      }
    }
    const d = f(max / -8);
    const id = d !== 0 ? f(1 / d) : 0;
    view.setUint16(i * Q4_0_BYTES, f32ToF16(d), true);
    for (let j = 0; j < QK4_0 / 2; j++) {
      const x0 = f(x[i * QK4_0 + j]! * id);
      const x1 = f(x[i * QK4_0 + QK4_0 / 2 + j]! * id);
      const xi0 = Math.min(15, Math.trunc(f(x0 + 8.5)));
      const xi1 = Math.min(15, Math.trunc(f(x1 + 8.5)));
      out[i * Q4_0_BYTES + 2 + j] = xi0 | (xi1 << 4);
    }
  }
  return out;
}

export function dequantizeQ4_0(bytes: Uint8Array, n: number): Float32Array {
  requireMultiple(n, QK4_0, 'Q4_0');
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const y = new Float32Array(n);
  for (let i = 0; i < n / QK4_0; i++) {
    const d = f16ToF32(view.getUint16(i * Q4_0_BYTES, true));
    for (let j = 0; j < QK4_0 / 2; j++) {
      const q = bytes[i * Q4_0_BYTES + 2 + j]!;
      y[i * QK4_0 + j] = f(((q & 0x0f) - 8) * d);
      y[i * QK4_0 + j + QK4_0 / 2] = f(((q >> 4) - 8) * d);
    }
  }
  return y;
}

// ---------------------------------------------------------------- K-quants

const QK_K = 256;
const Q4_K_BYTES = 144;
const Q6_K_BYTES = 210;

/** Scale and min of sub-block j from the 12 packed bytes of a Q4_K block (get_scale_min_k4). */
export function getScaleMinK4(j: number, q: Uint8Array, at: number): [number, number] {
  if (j < 4) return [q[at + j]! & 63, q[at + j + 4]! & 63];
  const d = (q[at + j + 4]! & 0xf) | ((q[at + j - 4]! >> 6) << 4);
  const m = (q[at + j + 4]! >> 4) | ((q[at + j]! >> 6) << 4);
  return [d, m];
}

/** make_qkx2_quants: an asymmetric (scale, min) fit of n values to 0..nmax by weighted search. */
function makeQkx2Quants(
  n: number,
  nmax: number,
  x: Float32Array,
  weights: Float32Array,
  L: Uint8Array,
  rmin: number,
  rdelta: number,
  nstep: number,
  useMad = false,
): { scale: number; theMin: number } {
  const err = (w: number, diff: number) => f(w * (useMad ? Math.abs(diff) : f(diff * diff)));
  const Laux = new Uint8Array(n);
  let min = x[0]!;
  let max = x[0]!;
  let sumW = weights[0]!;
  let sumX = f(sumW * x[0]!);
  for (let i = 1; i < n; i++) {
    if (x[i]! < min) min = x[i]!;
    if (x[i]! > max) max = x[i]!;
    sumW = f(sumW + weights[i]!);
    sumX = f(sumX + f(weights[i]! * x[i]!));
  }
  if (min > 0) min = 0;
  if (max === min) {
    L.fill(0, 0, n);
    return { scale: 0, theMin: -min };
  }
  let iscale = f(nmax / f(max - min));
  let scale = f(1 / iscale);
  let bestError = 0;
  for (let i = 0; i < n; i++) {
    const l = nearestInt(f(iscale * f(x[i]! - min)));
    L[i] = clamp(l, 0, nmax);
    const diff = f(f(f(scale * L[i]!) + min) - x[i]!);
    bestError = f(bestError + err(weights[i]!, diff));
  }
  if (nstep < 1) return { scale, theMin: -min };
  for (let is = 0; is <= nstep; is++) {
    iscale = f(f(f(rmin + f(rdelta * is)) + nmax) / f(max - min));
    let sumL = 0;
    let sumL2 = 0;
    let sumXl = 0;
    for (let i = 0; i < n; i++) {
      const l = clamp(nearestInt(f(iscale * f(x[i]! - min))), 0, nmax);
      Laux[i] = l;
      const wl = f(weights[i]! * l);
      sumL = f(sumL + wl);
      sumL2 = f(sumL2 + f(wl * l));
      sumXl = f(sumXl + f(wl * x[i]!));
    }
    const D = f(f(sumW * sumL2) - f(sumL * sumL));
    if (D > 0) {
      let thisScale = f(f(f(sumW * sumXl) - f(sumX * sumL)) / D);
      let thisMin = f(f(f(sumL2 * sumX) - f(sumL * sumXl)) / D);
      if (thisMin > 0) {
        thisMin = 0;
        thisScale = f(sumXl / sumL2);
      }
      let curError = 0;
      for (let i = 0; i < n; i++) {
        const diff = f(f(f(thisScale * Laux[i]!) + thisMin) - x[i]!);
        curError = f(curError + err(weights[i]!, diff));
      }
      if (curError < bestError) {
        L.set(Laux.subarray(0, n));
        bestError = curError;
        scale = thisScale;
        min = thisMin;
      }
    }
  }
  return { scale, theMin: -min };
}

/**
 * The 256-element super-block fit Q4_K and Q5_K share: 8 sub-blocks of 32, each an asymmetric
 * (scale, min) fit to 0..nmax (make_qkx2_quants with weights av_x + |x|), both packed to 6 bits
 * against f16 super-block scales. Writes the 12 scale bytes into `sc`, the values into L, and
 * returns the f16 bits of d and dmin.
 */
function fitScaleMinBlock(
  xb: Float32Array,
  nmax: number,
  rmin: number,
  nstep: number,
  sc: Uint8Array,
  L: Uint8Array,
): [number, number] {
  const weights = new Float32Array(32);
  const mins = new Float32Array(8);
  const scales = new Float32Array(8);
  let maxScale = 0;
  let maxMin = 0;
  for (let j = 0; j < 8; j++) {
    const xs = xb.subarray(32 * j, 32 * j + 32);
    let sumX2 = 0;
    for (let l = 0; l < 32; l++) sumX2 = f(sumX2 + f(xs[l]! * xs[l]!));
    const avX = f(Math.sqrt(f(sumX2 / 32)));
    for (let l = 0; l < 32; l++) weights[l] = f(avX + Math.abs(xs[l]!));
    const r = makeQkx2Quants(32, nmax, xs, weights, L.subarray(32 * j, 32 * j + 32), rmin, 0.1, nstep);
    scales[j] = r.scale;
    mins[j] = r.theMin;
    if (r.scale > maxScale) maxScale = r.scale;
    if (r.theMin > maxMin) maxMin = r.theMin;
  }
  const invScale = maxScale > 0 ? f(63 / maxScale) : 0;
  const invMin = maxMin > 0 ? f(63 / maxMin) : 0;
  for (let j = 0; j < 8; j++) {
    const ls = Math.min(63, nearestInt(f(invScale * scales[j]!)) & 0xff);
    const lm = Math.min(63, nearestInt(f(invMin * mins[j]!)) & 0xff);
    if (j < 4) {
      sc[j] = ls;
      sc[j + 4] = lm;
    } else {
      sc[j + 4] = (ls & 0xf) | ((lm & 0xf) << 4);
      sc[j - 4]! |= (ls >> 4) << 6;
      sc[j]! |= (lm >> 4) << 6;
    }
  }
  const dBits = f32ToF16(f(maxScale / 63));
  const dminBits = f32ToF16(f(maxMin / 63));
  const d = f16ToF32(dBits);
  const dmin = f16ToF32(dminBits);
  for (let j = 0; j < 8; j++) {
    const [s, m] = getScaleMinK4(j, sc, 0);
    const dj = f(d * s);
    if (dj === 0) continue;
    const dm = f(dmin * m);
    for (let ii = 0; ii < 32; ii++) L[32 * j + ii] = clamp(nearestInt(f(f(xb[32 * j + ii]! + dm) / dj)), 0, nmax);
  }
  return [dBits, dminBits];
}

export function quantizeQ4_K(x: Float32Array): Uint8Array {
  requireMultiple(x.length, QK_K, 'Q4_K');
  const nb = x.length / QK_K;
  const out = new Uint8Array(nb * Q4_K_BYTES);
  const view = new DataView(out.buffer);
  const L = new Uint8Array(QK_K);
  for (let i = 0; i < nb; i++) {
    const at = i * Q4_K_BYTES;
    const [dBits, dminBits] = fitScaleMinBlock(x.subarray(i * QK_K, (i + 1) * QK_K), 15, -1, 20, out.subarray(at + 4, at + 16), L);
    view.setUint16(at, dBits, true);
    view.setUint16(at + 2, dminBits, true);
    for (let j = 0; j < QK_K; j += 64) {
      for (let l = 0; l < 32; l++) out[at + 16 + j / 2 + l] = L[j + l]! | (L[j + l + 32]! << 4);
    }
  }
  return out;
}

export function dequantizeQ4_K(bytes: Uint8Array, n: number): Float32Array {
  requireMultiple(n, QK_K, 'Q4_K');
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const y = new Float32Array(n);
  let k = 0;
  for (let i = 0; i < n / QK_K; i++) {
    const at = i * Q4_K_BYTES;
    const d = f16ToF32(view.getUint16(at, true));
    const min = f16ToF32(view.getUint16(at + 2, true));
    let q = at + 16;
    for (let j = 0, is = 0; j < QK_K; j += 64, is += 2, q += 32) {
      const [s1, m1q] = getScaleMinK4(is, bytes, at + 4);
      const [s2, m2q] = getScaleMinK4(is + 1, bytes, at + 4);
      const d1 = f(d * s1);
      const m1 = f(min * m1q);
      const d2 = f(d * s2);
      const m2 = f(min * m2q);
      for (let l = 0; l < 32; l++) y[k++] = f(f(d1 * (bytes[q + l]! & 0xf)) - m1);
      for (let l = 0; l < 32; l++) y[k++] = f(f(d2 * (bytes[q + l]! >> 4)) - m2);
    }
  }
  return y;
}

/** make_qx_quants with rmse_type 1: a symmetric scale for n values in -nmax..nmax-1. */
function makeQxQuants(n: number, nmax: number, x: Float32Array, L: Int8Array): number {
  let max = 0;
  let amax = 0;
  for (let i = 0; i < n; i++) {
    const ax = Math.abs(x[i]!);
    if (ax > amax) {
      amax = ax;
      max = x[i]!;
    }
  }
  if (amax < f(1e-15)) {
    L.fill(0, 0, n);
    return 0;
  }
  let iscale = f(-nmax / max);
  let sumlx = 0;
  let suml2 = 0;
  for (let i = 0; i < n; i++) {
    const l = clamp(nearestInt(f(iscale * x[i]!)), -nmax, nmax - 1);
    L[i] = l + nmax;
    const w = f(x[i]! * x[i]!);
    sumlx = f(sumlx + f(f(w * x[i]!) * l));
    suml2 = f(suml2 + f(f(w * l) * l));
  }
  let scale = suml2 !== 0 ? f(sumlx / suml2) : 0;
  let best = f(scale * sumlx);
  for (let is = -9; is <= 9; is++) {
    if (is === 0) continue;
    iscale = f(-f(nmax + f(0.1 * is)) / max);
    sumlx = 0;
    suml2 = 0;
    for (let i = 0; i < n; i++) {
      const l = clamp(nearestInt(f(iscale * x[i]!)), -nmax, nmax - 1);
      const w = f(x[i]! * x[i]!);
      sumlx = f(sumlx + f(f(w * x[i]!) * l));
      suml2 = f(suml2 + f(f(w * l) * l));
    }
    if (suml2 > 0 && f(sumlx * sumlx) > f(best * suml2)) {
      for (let i = 0; i < n; i++) L[i] = nmax + clamp(nearestInt(f(iscale * x[i]!)), -nmax, nmax - 1);
      scale = f(sumlx / suml2);
      best = f(scale * sumlx);
    }
  }
  return scale;
}

export function quantizeQ6_K(x: Float32Array): Uint8Array {
  requireMultiple(x.length, QK_K, 'Q6_K');
  const nb = x.length / QK_K;
  const out = new Uint8Array(nb * Q6_K_BYTES);
  const view = new DataView(out.buffer);
  const L = new Int8Array(QK_K);
  const scales = new Float32Array(16);
  for (let i = 0; i < nb; i++) {
    const xb = x.subarray(i * QK_K, (i + 1) * QK_K);
    const at = i * Q6_K_BYTES;
    let maxScale = 0;
    let maxAbsScale = 0;
    for (let ib = 0; ib < 16; ib++) {
      const scale = makeQxQuants(16, 32, xb.subarray(16 * ib, 16 * ib + 16), L.subarray(16 * ib, 16 * ib + 16));
      scales[ib] = scale;
      if (Math.abs(scale) > maxAbsScale) {
        maxAbsScale = Math.abs(scale);
        maxScale = scale;
      }
    }
    if (maxAbsScale < f(1e-15)) continue; // an all-zero block: zero bytes, d = 0
    const iscale = f(-128 / maxScale);
    const dBits = f32ToF16(f(1 / iscale));
    view.setUint16(at + 208, dBits, true);
    for (let ib = 0; ib < 16; ib++) view.setInt8(at + 192 + ib, Math.min(127, nearestInt(f(iscale * scales[ib]!))));
    const d = f16ToF32(dBits);
    for (let j = 0; j < 16; j++) {
      const dj = f(d * view.getInt8(at + 192 + j));
      if (dj === 0) continue;
      for (let ii = 0; ii < 16; ii++) L[16 * j + ii] = clamp(nearestInt(f(xb[16 * j + ii]! / dj)), -32, 31) + 32;
    }
    for (let j = 0, ql = at, qh = at + 128; j < QK_K; j += 128, ql += 64, qh += 32) {
      for (let l = 0; l < 32; l++) {
        const q1 = L[j + l]! & 0xf;
        const q2 = L[j + l + 32]! & 0xf;
        const q3 = L[j + l + 64]! & 0xf;
        const q4 = L[j + l + 96]! & 0xf;
        out[ql + l] = q1 | (q3 << 4);
        out[ql + l + 32] = q2 | (q4 << 4);
        out[qh + l] = (L[j + l]! >> 4) | ((L[j + l + 32]! >> 4) << 2) | ((L[j + l + 64]! >> 4) << 4) | ((L[j + l + 96]! >> 4) << 6);
      }
    }
  }
  return out;
}

export function dequantizeQ6_K(bytes: Uint8Array, n: number): Float32Array {
  requireMultiple(n, QK_K, 'Q6_K');
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const y = new Float32Array(n);
  for (let i = 0; i < n / QK_K; i++) {
    const at = i * Q6_K_BYTES;
    const d = f16ToF32(view.getUint16(at + 208, true));
    for (let half = 0; half < 2; half++) {
      const ql = at + 64 * half;
      const qh = at + 128 + 32 * half;
      const sc = at + 192 + 8 * half;
      const yb = i * QK_K + 128 * half;
      for (let l = 0; l < 32; l++) {
        const is = l >> 4;
        const h = bytes[qh + l]!;
        const q1 = ((bytes[ql + l]! & 0xf) | ((h & 3) << 4)) - 32;
        const q2 = ((bytes[ql + l + 32]! & 0xf) | (((h >> 2) & 3) << 4)) - 32;
        const q3 = ((bytes[ql + l]! >> 4) | (((h >> 4) & 3) << 4)) - 32;
        const q4 = ((bytes[ql + l + 32]! >> 4) | (((h >> 6) & 3) << 4)) - 32;
        y[yb + l] = f(f(d * view.getInt8(sc + is)) * q1);
        y[yb + l + 32] = f(f(d * view.getInt8(sc + is + 2)) * q2);
        y[yb + l + 64] = f(f(d * view.getInt8(sc + is + 4)) * q3);
        y[yb + l + 96] = f(f(d * view.getInt8(sc + is + 6)) * q4);
      }
    }
  }
  return y;
}

// ---------------------------------------------------------------- Q5_0

const QK5_0 = 32;
const Q5_0_BYTES = 22;

export function quantizeQ5_0(x: Float32Array): Uint8Array {
  requireMultiple(x.length, QK5_0, 'Q5_0');
  const nb = x.length / QK5_0;
  const out = new Uint8Array(nb * Q5_0_BYTES);
  const view = new DataView(out.buffer);
  for (let i = 0; i < nb; i++) {
    let amax = 0;
    let max = 0;
    for (let j = 0; j < QK5_0; j++) {
      const v = x[i * QK5_0 + j]!;
      if (amax < Math.abs(v)) {
        amax = Math.abs(v);
        max = v;
      }
    }
    const d = f(max / -16);
    const id = d !== 0 ? f(1 / d) : 0;
    const at = i * Q5_0_BYTES;
    view.setUint16(at, f32ToF16(d), true);
    let qh = 0;
    for (let j = 0; j < QK5_0 / 2; j++) {
      const xi0 = Math.min(31, Math.trunc(f(f(x[i * QK5_0 + j]! * id) + 16.5)));
      const xi1 = Math.min(31, Math.trunc(f(f(x[i * QK5_0 + 16 + j]! * id) + 16.5)));
      out[at + 6 + j] = (xi0 & 0xf) | ((xi1 & 0xf) << 4);
      qh |= ((xi0 >> 4) << j) | ((xi1 >> 4) << (j + 16));
    }
    view.setUint32(at + 2, qh >>> 0, true);
  }
  return out;
}

export function dequantizeQ5_0(bytes: Uint8Array, n: number): Float32Array {
  requireMultiple(n, QK5_0, 'Q5_0');
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const y = new Float32Array(n);
  for (let i = 0; i < n / QK5_0; i++) {
    const at = i * Q5_0_BYTES;
    const d = f16ToF32(view.getUint16(at, true));
    const qh = view.getUint32(at + 2, true);
    for (let j = 0; j < QK5_0 / 2; j++) {
      const q = bytes[at + 6 + j]!;
      y[i * QK5_0 + j] = f((((q & 0xf) | (((qh >>> j) & 1) << 4)) - 16) * d);
      y[i * QK5_0 + j + 16] = f((((q >> 4) | (((qh >>> (j + 16)) & 1) << 4)) - 16) * d);
    }
  }
  return y;
}

// ---------------------------------------------------------------- Q4_1, Q5_1

const QK4_1 = 32;
const Q4_1_BYTES = 20;
const Q5_1_BYTES = 24;

/** Q4_1 / Q5_1: (max - min) / (2^bits - 1) steps above the block's minimum, rounded half up. */
function quantizeMinBlocks(x: Float32Array, bits: 4 | 5): Uint8Array {
  const type = bits === 4 ? 'Q4_1' : 'Q5_1';
  requireMultiple(x.length, QK4_1, type);
  const blockBytes = bits === 4 ? Q4_1_BYTES : Q5_1_BYTES;
  const qs = bits === 4 ? 4 : 8; // offset of the nibbles
  const nb = x.length / QK4_1;
  const out = new Uint8Array(nb * blockBytes);
  const view = new DataView(out.buffer);
  for (let i = 0; i < nb; i++) {
    const xb = x.subarray(i * QK4_1, (i + 1) * QK4_1);
    let min = Infinity;
    let max = -Infinity;
    for (const v of xb) {
      if (v < min) min = v;
      if (v > max) max = v;
    }
    const d = f(f(max - min) / ((1 << bits) - 1));
    const id = d ? f(1 / d) : 0;
    const at = i * blockBytes;
    view.setUint16(at, f32ToF16(d), true);
    view.setUint16(at + 2, f32ToF16(min), true);
    let qh = 0;
    for (let j = 0; j < 16; j++) {
      let xi0 = Math.trunc(f(f(f(xb[j]! - min) * id) + 0.5));
      let xi1 = Math.trunc(f(f(f(xb[j + 16]! - min) * id) + 0.5));
      if (bits === 4) {
        xi0 = Math.min(15, xi0);
        xi1 = Math.min(15, xi1);
      } else {
        qh |= (((xi0 >> 4) & 1) << j) | (((xi1 >> 4) & 1) << (j + 16));
      }
      out[at + qs + j] = (xi0 & 0xf) | ((xi1 & 0xf) << 4);
    }
    if (bits === 5) view.setUint32(at + 4, qh >>> 0, true);
  }
  return out;
}

function dequantizeMinBlocks(bytes: Uint8Array, n: number, bits: 4 | 5): Float32Array {
  requireMultiple(n, QK4_1, bits === 4 ? 'Q4_1' : 'Q5_1');
  const blockBytes = bits === 4 ? Q4_1_BYTES : Q5_1_BYTES;
  const qs = bits === 4 ? 4 : 8;
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const y = new Float32Array(n);
  for (let i = 0; i < n / QK4_1; i++) {
    const at = i * blockBytes;
    const d = f16ToF32(view.getUint16(at, true));
    const m = f16ToF32(view.getUint16(at + 2, true));
    const qh = bits === 5 ? view.getUint32(at + 4, true) : 0;
    for (let j = 0; j < 16; j++) {
      const q = bytes[at + qs + j]!;
      y[i * QK4_1 + j] = f(f(((q & 0xf) | (((qh >>> j) & 1) << 4)) * d) + m);
      y[i * QK4_1 + j + 16] = f(f(((q >> 4) | (((qh >>> (j + 16)) & 1) << 4)) * d) + m);
    }
  }
  return y;
}

export const quantizeQ4_1 = (x: Float32Array) => quantizeMinBlocks(x, 4);
export const quantizeQ5_1 = (x: Float32Array) => quantizeMinBlocks(x, 5);
export const dequantizeQ4_1 = (bytes: Uint8Array, n: number) => dequantizeMinBlocks(bytes, n, 4);
export const dequantizeQ5_1 = (bytes: Uint8Array, n: number) => dequantizeMinBlocks(bytes, n, 5);

// ---------------------------------------------------------------- Q2_K, Q3_K, Q5_K

const Q2_K_BYTES = 84;
const Q3_K_BYTES = 110;
const Q5_K_BYTES = 176;

/** Packs 256 2-bit values as Q2_K / Q3_K do: element 128h + 32c + l in bits 2c of byte 32h + l. */
function pack2Bit(L: Uint8Array | Int8Array, out: Uint8Array, at: number): void {
  for (let j = 0; j < QK_K; j += 128) {
    for (let l = 0; l < 32; l++) {
      out[at + j / 4 + l] = (L[j + l]! & 3) | ((L[j + l + 32]! & 3) << 2) | ((L[j + l + 64]! & 3) << 4) | ((L[j + l + 96]! & 3) << 6);
    }
  }
}

export function quantizeQ2_K(x: Float32Array): Uint8Array {
  requireMultiple(x.length, QK_K, 'Q2_K');
  const nb = x.length / QK_K;
  const out = new Uint8Array(nb * Q2_K_BYTES);
  const view = new DataView(out.buffer);
  const L = new Uint8Array(QK_K);
  const weights = new Float32Array(16);
  const mins = new Float32Array(16);
  const scales = new Float32Array(16);
  for (let i = 0; i < nb; i++) {
    const xb = x.subarray(i * QK_K, (i + 1) * QK_K);
    const at = i * Q2_K_BYTES;
    let maxScale = 0;
    let maxMin = 0;
    for (let j = 0; j < 16; j++) {
      const xs = xb.subarray(16 * j, 16 * j + 16);
      for (let l = 0; l < 16; l++) weights[l] = Math.abs(xs[l]!);
      const r = makeQkx2Quants(16, 3, xs, weights, L.subarray(16 * j, 16 * j + 16), -0.5, 0.1, 15, true);
      scales[j] = r.scale;
      mins[j] = r.theMin;
      if (r.scale > maxScale) maxScale = r.scale;
      if (r.theMin > maxMin) maxMin = r.theMin;
    }
    if (maxScale > 0) {
      const iscale = f(15 / maxScale);
      for (let j = 0; j < 16; j++) out[at + j] = nearestInt(f(iscale * scales[j]!));
      view.setUint16(at + 80, f32ToF16(f(maxScale / 15)), true);
    }
    if (maxMin > 0) {
      const iscale = f(15 / maxMin);
      for (let j = 0; j < 16; j++) out[at + j]! |= nearestInt(f(iscale * mins[j]!)) << 4;
      view.setUint16(at + 82, f32ToF16(f(maxMin / 15)), true);
    }
    const d = f16ToF32(view.getUint16(at + 80, true));
    const dmin = f16ToF32(view.getUint16(at + 82, true));
    for (let j = 0; j < 16; j++) {
      const dj = f(d * (out[at + j]! & 0xf));
      if (dj === 0) continue;
      const dm = f(dmin * (out[at + j]! >> 4));
      for (let ii = 0; ii < 16; ii++) L[16 * j + ii] = clamp(nearestInt(f(f(xb[16 * j + ii]! + dm) / dj)), 0, 3);
    }
    pack2Bit(L, out, at + 16);
  }
  return out;
}

export function dequantizeQ2_K(bytes: Uint8Array, n: number): Float32Array {
  requireMultiple(n, QK_K, 'Q2_K');
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const y = new Float32Array(n);
  for (let i = 0; i < n / QK_K; i++) {
    const at = i * Q2_K_BYTES;
    const d = f16ToF32(view.getUint16(at + 80, true));
    const dmin = f16ToF32(view.getUint16(at + 82, true));
    for (let e = 0; e < QK_K; e++) {
      const sc = bytes[at + (e >> 4)]!;
      const q = (bytes[at + 16 + 32 * (e >> 7) + (e & 31)]! >> (2 * ((e >> 5) & 3))) & 3;
      y[i * QK_K + e] = f(f(f(d * (sc & 0xf)) * q) - f(dmin * (sc >> 4)));
    }
  }
  return y;
}

/** make_q3_quants with do_rmse: a symmetric scale for n values in -nmax..nmax-1, refined by moves. */
function makeQ3Quants(n: number, nmax: number, x: Float32Array, L: Int8Array): number {
  let max = 0;
  let amax = 0;
  for (let i = 0; i < n; i++) {
    const ax = Math.abs(x[i]!);
    if (ax > amax) {
      amax = ax;
      max = x[i]!;
    }
  }
  if (amax < f(1e-15)) {
    L.fill(0, 0, n);
    return 0;
  }
  const iscale = f(-nmax / max);
  let sumlx = 0;
  let suml2 = 0;
  for (let i = 0; i < n; i++) {
    const l = clamp(nearestInt(f(iscale * x[i]!)), -nmax, nmax - 1);
    L[i] = l;
    const w = f(x[i]! * x[i]!);
    sumlx = f(sumlx + f(f(w * x[i]!) * l));
    suml2 = f(suml2 + f(f(w * l) * l));
  }
  for (let itry = 0; itry < 5; itry++) {
    let changed = 0;
    for (let i = 0; i < n; i++) {
      const w = f(x[i]! * x[i]!);
      let slx = f(sumlx - f(f(w * x[i]!) * L[i]!));
      if (slx > 0) {
        let sl2 = f(suml2 - f(f(w * L[i]!) * L[i]!));
        const newL = clamp(nearestInt(f(f(x[i]! * sl2) / slx)), -nmax, nmax - 1);
        if (newL !== L[i]) {
          slx = f(slx + f(f(w * x[i]!) * newL));
          sl2 = f(sl2 + f(f(w * newL) * newL));
          if (sl2 > 0 && f(f(slx * slx) * suml2) > f(f(sumlx * sumlx) * sl2)) {
            L[i] = newL;
            sumlx = slx;
            suml2 = sl2;
            changed++;
          }
        }
      }
    }
    if (!changed) break;
  }
  for (let i = 0; i < n; i++) L[i]! += nmax;
  return suml2 > 0 ? f(sumlx / suml2) : 0;
}

/** Scale j (0..15) of a Q3_K block minus 32, from its 12 packed bytes at `at`. */
export function q3KScale(j: number, q: Uint8Array, at: number): number {
  const low = j < 8 ? q[at + j]! & 0xf : q[at + j - 8]! >> 4;
  const high = (q[at + 8 + (j % 4)]! >> (2 * Math.floor(j / 4))) & 3;
  return (low | (high << 4)) - 32;
}

export function quantizeQ3_K(x: Float32Array): Uint8Array {
  requireMultiple(x.length, QK_K, 'Q3_K');
  const nb = x.length / QK_K;
  const out = new Uint8Array(nb * Q3_K_BYTES);
  const view = new DataView(out.buffer);
  const L = new Int8Array(QK_K);
  const scales = new Float32Array(16);
  for (let i = 0; i < nb; i++) {
    const xb = x.subarray(i * QK_K, (i + 1) * QK_K);
    const at = i * Q3_K_BYTES;
    const sc = at + 96;
    let maxScale = 0;
    let amax = 0;
    for (let j = 0; j < 16; j++) {
      scales[j] = makeQ3Quants(16, 4, xb.subarray(16 * j, 16 * j + 16), L.subarray(16 * j, 16 * j + 16));
      if (Math.abs(scales[j]!) > amax) {
        amax = Math.abs(scales[j]!);
        maxScale = scales[j]!;
      }
    }
    if (maxScale) {
      const iscale = f(-32 / maxScale);
      for (let j = 0; j < 16; j++) {
        const l = clamp(nearestInt(f(iscale * scales[j]!)), -32, 31) + 32;
        if (j < 8) out[sc + j] = l & 0xf;
        else out[sc + j - 8]! |= (l & 0xf) << 4;
        out[sc + 8 + (j % 4)]! |= (l >> 4) << (2 * Math.floor(j / 4));
      }
      view.setUint16(at + 108, f32ToF16(f(1 / iscale)), true);
    }
    const d = f16ToF32(view.getUint16(at + 108, true));
    for (let j = 0; j < 16; j++) {
      const dj = f(d * q3KScale(j, out, sc));
      if (dj === 0) continue;
      for (let ii = 0; ii < 16; ii++) L[16 * j + ii] = clamp(nearestInt(f(xb[16 * j + ii]! / dj)), -4, 3) + 4;
    }
    // bit 2 of element 32c + l is bit c of hmask[l]
    for (let e = 0; e < QK_K; e++) {
      if (L[e]! > 3) {
        out[at + (e & 31)]! |= 1 << (e >> 5);
        L[e]! -= 4;
      }
    }
    pack2Bit(L, out, at + 32);
  }
  return out;
}

export function dequantizeQ3_K(bytes: Uint8Array, n: number): Float32Array {
  requireMultiple(n, QK_K, 'Q3_K');
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const y = new Float32Array(n);
  for (let i = 0; i < n / QK_K; i++) {
    const at = i * Q3_K_BYTES;
    const d = f16ToF32(view.getUint16(at + 108, true));
    for (let e = 0; e < QK_K; e++) {
      const low = (bytes[at + 32 + 32 * (e >> 7) + (e & 31)]! >> (2 * ((e >> 5) & 3))) & 3;
      const high = (bytes[at + (e & 31)]! >> (e >> 5)) & 1;
      y[i * QK_K + e] = f(f(d * q3KScale(e >> 4, bytes, at + 96)) * (low - (high ? 0 : 4)));
    }
  }
  return y;
}

export function quantizeQ5_K(x: Float32Array): Uint8Array {
  requireMultiple(x.length, QK_K, 'Q5_K');
  const nb = x.length / QK_K;
  const out = new Uint8Array(nb * Q5_K_BYTES);
  const view = new DataView(out.buffer);
  const L = new Uint8Array(QK_K);
  for (let i = 0; i < nb; i++) {
    const at = i * Q5_K_BYTES;
    const [dBits, dminBits] = fitScaleMinBlock(x.subarray(i * QK_K, (i + 1) * QK_K), 31, -0.5, 15, out.subarray(at + 4, at + 16), L);
    view.setUint16(at, dBits, true);
    view.setUint16(at + 2, dminBits, true);
    // element 64j + 32h + l: low 4 bits in nibble h of qs[32j + l], bit 4 in bit 2j + h of qh[l]
    for (let j = 0; j < 4; j++) {
      for (let l = 0; l < 32; l++) {
        const l0 = L[64 * j + l]!;
        const l1 = L[64 * j + 32 + l]!;
        out[at + 48 + 32 * j + l] = (l0 & 0xf) | ((l1 & 0xf) << 4);
        out[at + 16 + l]! |= ((l0 >> 4) << (2 * j)) | ((l1 >> 4) << (2 * j + 1));
      }
    }
  }
  return out;
}

export function dequantizeQ5_K(bytes: Uint8Array, n: number): Float32Array {
  requireMultiple(n, QK_K, 'Q5_K');
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const y = new Float32Array(n);
  let k = 0;
  for (let i = 0; i < n / QK_K; i++) {
    const at = i * Q5_K_BYTES;
    const d = f16ToF32(view.getUint16(at, true));
    const min = f16ToF32(view.getUint16(at + 2, true));
    for (let j = 0; j < 4; j++) {
      const [s1, m1q] = getScaleMinK4(2 * j, bytes, at + 4);
      const [s2, m2q] = getScaleMinK4(2 * j + 1, bytes, at + 4);
      const d1 = f(d * s1);
      const m1 = f(min * m1q);
      const d2 = f(d * s2);
      const m2 = f(min * m2q);
      const q = at + 48 + 32 * j;
      for (let l = 0; l < 32; l++) y[k++] = f(f(d1 * ((bytes[q + l]! & 0xf) | (((bytes[at + 16 + l]! >> (2 * j)) & 1) << 4))) - m1);
      for (let l = 0; l < 32; l++) y[k++] = f(f(d2 * ((bytes[q + l]! >> 4) | (((bytes[at + 16 + l]! >> (2 * j + 1)) & 1) << 4))) - m2);
    }
  }
  return y;
}

// ---------------------------------------------------------------- IQ4_NL, IQ4_XS

/** The 16 non-linear 4-bit values of IQ4_NL / IQ4_XS (ggml's kvalues_iq4nl). */
export const IQ4_VALUES: readonly number[] = [-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113];
const IQ4_NL_BYTES = 18;
const IQ4_XS_BYTES = 136;

/** best_index_int8: the index of the table value nearest x (the lower one on a tie). */
function bestIndex(x: number): number {
  const v = IQ4_VALUES;
  if (x <= v[0]!) return 0;
  if (x >= v[15]!) return 15;
  let ml = 0;
  let mu = 15;
  while (mu - ml > 1) {
    const mav = (ml + mu) >> 1;
    if (x < v[mav]!) mu = mav;
    else ml = mav;
  }
  return f(x - v[mu - 1]!) < f(v[mu]! - x) ? mu - 1 : mu;
}

/**
 * quantize_row_iq4_nl_impl without an importance matrix (weights x^2, 7 tries either side): the
 * scale of each 32-value block by a search over candidate scales; for IQ4_XS (8 blocks) those
 * scales then go to 6 bits under an f16 super-block scale. Writes the f16 d, the packed values
 * and (IQ4_XS) the scales into `out` at `at` in the block's layout; returns nothing.
 */
function quantizeIq4Block(x: Float32Array, out: Uint8Array, at: number, superBlock: 32 | 256): void {
  const view = new DataView(out.buffer, out.byteOffset, out.byteLength);
  const ntry = 7;
  const L = new Uint8Array(superBlock);
  const scales = new Float32Array(superBlock / 32);
  const weight = new Float32Array(32);
  let maxScale = 0;
  let amaxScale = 0;
  for (let ib = 0; ib < superBlock / 32; ib++) {
    const xb = x.subarray(32 * ib, 32 * ib + 32);
    for (let j = 0; j < 32; j++) weight[j] = f(xb[j]! * xb[j]!);
    let amax = 0;
    let max = 0;
    for (let j = 0; j < 32; j++) {
      const ax = Math.abs(xb[j]!);
      if (ax > amax) {
        amax = ax;
        max = xb[j]!;
      }
    }
    if (amax < f(1e-15)) {
      scales[ib] = 0;
      continue;
    }
    let d = f(-max / IQ4_VALUES[0]!);
    let id = f(1 / d);
    let sumqx = 0;
    let sumq2 = 0;
    for (let j = 0; j < 32; j++) {
      const l = bestIndex(f(id * xb[j]!));
      L[32 * ib + j] = l;
      const q = IQ4_VALUES[l]!;
      sumqx = f(sumqx + f(f(weight[j]! * q) * xb[j]!));
      sumq2 = f(sumq2 + f(f(weight[j]! * q) * q));
    }
    d = sumq2 > 0 ? f(sumqx / sumq2) : 0;
    let best = f(d * sumqx);
    for (let itry = -ntry; itry <= ntry; itry++) {
      id = f((itry + IQ4_VALUES[0]!) / max);
      sumqx = 0;
      sumq2 = 0;
      for (let j = 0; j < 32; j++) {
        const q = IQ4_VALUES[bestIndex(f(id * xb[j]!))]!;
        sumqx = f(sumqx + f(f(weight[j]! * q) * xb[j]!));
        sumq2 = f(sumq2 + f(f(weight[j]! * q) * q));
      }
      if (sumq2 > 0 && f(sumqx * sumqx) > f(best * sumq2)) {
        d = f(sumqx / sumq2);
        best = f(d * sumqx);
      }
    }
    scales[ib] = d;
    if (Math.abs(d) > amaxScale) {
      amaxScale = Math.abs(d);
      maxScale = d;
    }
  }
  if (superBlock === 256) {
    // {f16 d; u16 scales_h; u8 scales_l[4]; u8 qs[128]}
    const d = f(-maxScale / 32);
    view.setUint16(at, f32ToF16(d), true);
    const id = d ? f(1 / d) : 0;
    let scalesH = 0;
    for (let ib = 0; ib < 8; ib++) {
      const l = clamp(nearestInt(f(id * scales[ib]!)), -32, 31);
      const dl = f(d * l);
      const idl = dl ? f(1 / dl) : 0;
      for (let j = 0; j < 32; j++) L[32 * ib + j] = bestIndex(f(idl * x[32 * ib + j]!));
      const ls = l + 32;
      if (ib % 2 === 0) out[at + 4 + ib / 2] = ls & 0xf;
      else out[at + 4 + (ib >> 1)]! |= (ls & 0xf) << 4;
      scalesH |= (ls >> 4) << (2 * ib);
    }
    view.setUint16(at + 2, scalesH, true);
  } else {
    view.setUint16(at, f32ToF16(scales[0]!), true);
    const id = scales[0] ? f(1 / scales[0]!) : 0;
    for (let j = 0; j < 32; j++) L[j] = bestIndex(f(id * x[j]!));
  }
  const qs = at + (superBlock === 256 ? 8 : 2);
  for (let i = 0; i < superBlock / 32; i++) {
    for (let j = 0; j < 16; j++) out[qs + 16 * i + j] = L[32 * i + j]! | (L[32 * i + 16 + j]! << 4);
  }
}

export function quantizeIQ4_NL(x: Float32Array): Uint8Array {
  requireMultiple(x.length, 32, 'IQ4_NL');
  const out = new Uint8Array((x.length / 32) * IQ4_NL_BYTES);
  for (let i = 0; i < x.length / 32; i++) quantizeIq4Block(x.subarray(32 * i, 32 * i + 32), out, i * IQ4_NL_BYTES, 32);
  return out;
}

export function quantizeIQ4_XS(x: Float32Array): Uint8Array {
  requireMultiple(x.length, QK_K, 'IQ4_XS');
  const out = new Uint8Array((x.length / QK_K) * IQ4_XS_BYTES);
  for (let i = 0; i < x.length / QK_K; i++) quantizeIq4Block(x.subarray(QK_K * i, QK_K * (i + 1)), out, i * IQ4_XS_BYTES, 256);
  return out;
}

export function dequantizeIQ4_NL(bytes: Uint8Array, n: number): Float32Array {
  requireMultiple(n, 32, 'IQ4_NL');
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const y = new Float32Array(n);
  for (let i = 0; i < n / 32; i++) {
    const at = i * IQ4_NL_BYTES;
    const d = f16ToF32(view.getUint16(at, true));
    for (let j = 0; j < 16; j++) {
      y[32 * i + j] = f(d * IQ4_VALUES[bytes[at + 2 + j]! & 0xf]!);
      y[32 * i + j + 16] = f(d * IQ4_VALUES[bytes[at + 2 + j]! >> 4]!);
    }
  }
  return y;
}

/** Scale of sub-block ib (0..7) of an IQ4_XS block at `at`, minus 32. */
export function iq4XsScale(ib: number, bytes: Uint8Array, at: number): number {
  const low = (bytes[at + 4 + (ib >> 1)]! >> (4 * (ib % 2))) & 0xf;
  const high = ((bytes[at + 2]! | (bytes[at + 3]! << 8)) >> (2 * ib)) & 3;
  return (low | (high << 4)) - 32;
}

export function dequantizeIQ4_XS(bytes: Uint8Array, n: number): Float32Array {
  requireMultiple(n, QK_K, 'IQ4_XS');
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const y = new Float32Array(n);
  for (let i = 0; i < n / QK_K; i++) {
    const at = i * IQ4_XS_BYTES;
    const d = f16ToF32(view.getUint16(at, true));
    for (let ib = 0; ib < 8; ib++) {
      const dl = f(d * iq4XsScale(ib, bytes, at));
      const qs = at + 8 + 16 * ib;
      for (let j = 0; j < 16; j++) {
        y[QK_K * i + 32 * ib + j] = f(dl * IQ4_VALUES[bytes[qs + j]! & 0xf]!);
        y[QK_K * i + 32 * ib + j + 16] = f(dl * IQ4_VALUES[bytes[qs + j]! >> 4]!);
      }
    }
  }
  return y;
}

// ---------------------------------------------------------------- MXFP4

/** MXFP4's 16 values: FP4 E2M1 doubled (ggml's kvalues_mxfp4), so the block scale is halved. */
export const MXFP4_VALUES: readonly number[] = [0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12];
const MXFP4_BYTES = 17;

/** 2^(e - 128): an E8M0 exponent as a float, halved (ggml_e8m0_to_fp32_half). */
export function e8m0Half(e: number): number {
  return 2 ** (e - 128);
}

export function quantizeMXFP4(x: Float32Array): Uint8Array {
  requireMultiple(x.length, 32, 'MXFP4');
  const out = new Uint8Array((x.length / 32) * MXFP4_BYTES);
  for (let i = 0; i < x.length / 32; i++) {
    const xb = x.subarray(32 * i, 32 * i + 32);
    let amax = 0;
    for (const v of xb) if (amax < Math.abs(v)) amax = Math.abs(v);
    // (uint8_t)(floorf(log2f(amax)) - 2 + 127): log2f rounded to float before the floor
    const e = amax > 0 ? (Math.floor(f(Math.log2(amax))) - 2 + 127) & 0xff : 0;
    const d = e8m0Half(e);
    const best = (v: number) => {
      let bi = 0;
      let be = Math.abs(f(f(MXFP4_VALUES[0]! * d) - v));
      for (let k = 1; k < 16; k++) {
        const err = Math.abs(f(f(MXFP4_VALUES[k]! * d) - v));
        if (err < be) {
          bi = k;
          be = err;
        }
      }
      return bi;
    };
    out[i * MXFP4_BYTES] = e;
    for (let j = 0; j < 16; j++) out[i * MXFP4_BYTES + 1 + j] = best(xb[j]!) | (best(xb[j + 16]!) << 4);
  }
  return out;
}

export function dequantizeMXFP4(bytes: Uint8Array, n: number): Float32Array {
  requireMultiple(n, 32, 'MXFP4');
  const y = new Float32Array(n);
  for (let i = 0; i < n / 32; i++) {
    const at = i * MXFP4_BYTES;
    const d = e8m0Half(bytes[at]!);
    for (let j = 0; j < 16; j++) {
      y[32 * i + j] = f(MXFP4_VALUES[bytes[at + 1 + j]! & 0xf]! * d);
      y[32 * i + j + 16] = f(MXFP4_VALUES[bytes[at + 1 + j]! >> 4]! * d);
    }
  }
  return y;
}

// ---------------------------------------------------------------- by type name

export type QuantType =
  | 'F32'
  | 'F16'
  | 'BF16'
  | 'Q8_0'
  | 'Q4_0'
  | 'Q4_1'
  | 'Q5_0'
  | 'Q5_1'
  | 'Q2_K'
  | 'Q3_K'
  | 'Q4_K'
  | 'Q5_K'
  | 'Q6_K'
  | 'IQ4_NL'
  | 'IQ4_XS'
  | 'MXFP4';

export const QUANT_TYPES: readonly QuantType[] = ['F32', 'F16', 'BF16', 'Q8_0', 'Q4_0', 'Q4_1', 'Q5_0', 'Q5_1', 'Q2_K', 'Q3_K', 'Q4_K', 'Q5_K', 'Q6_K', 'IQ4_NL', 'IQ4_XS', 'MXFP4'];

const QUANTIZE: Record<QuantType, (x: Float32Array) => Uint8Array> = {
  F32: quantizeF32,
  F16: quantizeF16,
  BF16: quantizeBF16,
  Q8_0: quantizeQ8_0,
  Q4_0: quantizeQ4_0,
  Q4_1: quantizeQ4_1,
  Q5_0: quantizeQ5_0,
  Q5_1: quantizeQ5_1,
  Q2_K: quantizeQ2_K,
  Q3_K: quantizeQ3_K,
  Q4_K: quantizeQ4_K,
  Q5_K: quantizeQ5_K,
  Q6_K: quantizeQ6_K,
  IQ4_NL: quantizeIQ4_NL,
  IQ4_XS: quantizeIQ4_XS,
  MXFP4: quantizeMXFP4,
};

const DEQUANTIZE: Record<QuantType, (bytes: Uint8Array, n: number) => Float32Array> = {
  F32: dequantizeF32,
  F16: dequantizeF16,
  BF16: dequantizeBF16,
  Q8_0: dequantizeQ8_0,
  Q4_0: dequantizeQ4_0,
  Q4_1: dequantizeQ4_1,
  Q5_0: dequantizeQ5_0,
  Q5_1: dequantizeQ5_1,
  Q2_K: dequantizeQ2_K,
  Q3_K: dequantizeQ3_K,
  Q4_K: dequantizeQ4_K,
  Q5_K: dequantizeQ5_K,
  Q6_K: dequantizeQ6_K,
  IQ4_NL: dequantizeIQ4_NL,
  IQ4_XS: dequantizeIQ4_XS,
  MXFP4: dequantizeMXFP4,
};

/** Encodes float data as `type` blocks (the length must be a multiple of the block size). */
export function quantize(type: QuantType, x: Float32Array): Uint8Array {
  return QUANTIZE[type](x);
}

/** Decodes `n` elements of `type` blocks back to float32. */
export function dequantize(type: QuantType, bytes: Uint8Array, n: number): Float32Array {
  return DEQUANTIZE[type](bytes, n);
}
