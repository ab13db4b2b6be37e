// Typed wrappers over the addon's f32 GEMM / GEMV. Arguments are checked here first (so errors
// carry a JavaScript stack and the same wording as the native checks), defaults are filled in,
// and the output is allocated when the caller does not pass one.
//
// Storage is row-major with leading dimensions (row strides), as in BLAS:
//   gemm: C[m,n] = alpha * op(A)[m,k] * op(B)[k,n] + beta * C
//         A is stored [m,k] (lda >= k), or [k,m] (lda >= m) when transA;
//         B is stored [k,n] (ldb >= n), or [n,k] (ldb >= k) when transB (ONNX Gemm / LLM weights);
//         C is stored [m,n] (ldc >= n).
//   gemv: y = alpha * op(A) x + beta * y, A stored [m,n] (lda >= n);
//         x has n elements and y has m (x has m and y has n when transA).
// beta == 0 means the output is only written, never read (NaNs in it do not propagate).
import { loadAddon } from './addon.js';
import type { EngineInfo, NativeCallOptions } from './surface.js';


export interface GemmOptions extends NativeCallOptions {
  transA?: boolean;
  transB?: boolean;
  /** Default 1. */
  alpha?: number;
  /** Default 0. */
  beta?: number;
  /** Defaults: the stored row length (k or m for A, n or k for B, n for C), at least 1. */
  lda?: number;
  ldb?: number;
  ldc?: number;
  /** Output, updated in place; allocated (zeros) when absent. */
  c?: Float32Array;
}

export interface GemvOptions extends NativeCallOptions {
  transA?: boolean;
  /** Default 1. */
  alpha?: number;
  /** Default 0. */
  beta?: number;
  /** Default max(1, n). */
  lda?: number;
  /** Output, updated in place; allocated (zeros) when absent. */
  y?: Float32Array;
}

const MAX_DIM = 2147483647;
const MAX_THREADS = 256;
const SIMD_LEVELS: readonly string[] = ['scalar', 'neon', 'avx2', 'avx512'];

function describe(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'array';
  if (ArrayBuffer.isView(value)) return value.constructor.name;
  if (value instanceof ArrayBuffer) return 'ArrayBuffer';
  return typeof value;
}

// Checks with the same wording as native/addon/args.cc, prefixed with the wrapper's name.
class Checker {
  constructor(private readonly fn: string) {}

  typeError(message: string): never {
    throw new TypeError(`${this.fn}: ${message}`);
  }

  rangeError(message: string): never {
    throw new RangeError(`${this.fn}: ${message}`);
  }

  boolean(value: unknown, name: string): boolean {
    if (typeof value !== 'boolean') this.typeError(`${name} must be a boolean, got ${describe(value)}`);
    return value;
  }

  number(value: unknown, name: string): number {
    if (typeof value !== 'number') this.typeError(`${name} must be a number, got ${describe(value)}`);
    return value;
  }

  dim(value: unknown, name: string): number {
    const v = this.number(value, name);
    if (!Number.isInteger(v) || v < 0) this.rangeError(`${name} must be a non-negative integer, got ${v}`);
    if (v > MAX_DIM) this.rangeError(`${name} must be at most ${MAX_DIM}, got ${v}`);
    return v;
  }

  f32(value: unknown, name: string): Float32Array {
    if (!(value instanceof Float32Array)) this.typeError(`${name} must be a Float32Array, got ${describe(value)}`);
    return value;
  }

  callOptions(options: NativeCallOptions): void {
    if (options.simd !== undefined) {
      const expected = 'options.simd must be one of "scalar", "neon", "avx2", "avx512"';
      if (typeof options.simd !== 'string') this.typeError(`${expected}, got ${describe(options.simd)}`);
      if (!SIMD_LEVELS.includes(options.simd)) this.rangeError(`${expected}, got "${options.simd}"`);
    }
    if (options.threads !== undefined) {
      const expected = `options.threads must be an integer from 0 (the default) to ${MAX_THREADS}`;
      const t: unknown = options.threads;
      if (typeof t !== 'number') this.typeError(`${expected}, got ${describe(t)}`);
      if (!Number.isInteger(t) || t < 0 || t > MAX_THREADS) this.rangeError(`${expected}, got ${t}`);
    }
  }

  matrix(array: Float32Array, name: string, ldName: string, rows: number, cols: number, ld: number, why: string): void {
    const minLd = Math.max(1, cols);
    if (ld < minLd) this.rangeError(`${ldName} must be at least ${minLd} (${why}), got ${ld}`);
    const need = rows === 0 || cols === 0 ? 0 : (rows - 1) * ld + cols;
    if (array.length < need) {
      this.rangeError(
        `${name} has ${array.length} elements but needs at least ${need} (${why}, [${rows},${cols}] with ${ldName} ${ld})`,
      );
    }
  }

  vector(array: Float32Array, name: string, n: number, why: string): void {
    if (array.length < n) this.rangeError(`${name} has ${array.length} elements but needs at least ${n} (${why})`);
  }

  disjoint(out: Float32Array, outName: string, input: Float32Array, inName: string): void {
    if (out.buffer !== input.buffer) return;
    const o0 = out.byteOffset;
    const i0 = input.byteOffset;
    if (o0 < i0 + input.byteLength && i0 < o0 + out.byteLength) {
      this.rangeError(`${outName} must not share memory with ${inName}`);
    }
  }
}

function nativeOptions(options: NativeCallOptions): NativeCallOptions {
  const out: NativeCallOptions = {};
  if (options.simd !== undefined) out.simd = options.simd;
  if (options.threads !== undefined) out.threads = options.threads;
  return out;
}

type GemmArgs = [
  boolean, boolean, number, number, number, number, Float32Array, number, Float32Array, number, number,
  Float32Array, number, NativeCallOptions,
];

function gemmArgs(fn: string, m: number, n: number, k: number, a: Float32Array, b: Float32Array, options: GemmOptions): GemmArgs {
  const check = new Checker(fn);
  if (typeof options !== 'object' || options === null) check.typeError(`options must be an object, got ${describe(options)}`);
  check.dim(m, 'm');
  check.dim(n, 'n');
  check.dim(k, 'k');
  check.f32(a, 'a');
  check.f32(b, 'b');
  const transA = check.boolean(options.transA ?? false, 'options.transA');
  const transB = check.boolean(options.transB ?? false, 'options.transB');
  const alpha = check.number(options.alpha ?? 1, 'options.alpha');
  const beta = check.number(options.beta ?? 0, 'options.beta');
  const [aRows, aCols] = transA ? [k, m] : [m, k];
  const [bRows, bCols] = transB ? [n, k] : [k, n];
  const lda = check.dim(options.lda ?? Math.max(1, aCols), 'lda');
  const ldb = check.dim(options.ldb ?? Math.max(1, bCols), 'ldb');
  const ldc = check.dim(options.ldc ?? Math.max(1, n), 'ldc');
  const c = options.c === undefined ? new Float32Array(m === 0 || n === 0 ? 0 : (m - 1) * ldc + n) : check.f32(options.c, 'c');
  check.callOptions(options);
  check.matrix(a, 'a', 'lda', aRows, aCols, lda, `A is stored ${transA ? '[k,m]' : '[m,k]'} because transA is ${transA}`);
  check.matrix(b, 'b', 'ldb', bRows, bCols, ldb, `B is stored ${transB ? '[n,k]' : '[k,n]'} because transB is ${transB}`);
  check.matrix(c, 'c', 'ldc', m, n, ldc, 'C is stored [m,n]');
  check.disjoint(c, 'c', a, 'a');
  check.disjoint(c, 'c', b, 'b');
  return [transA, transB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc, nativeOptions(options)];
}

type GemvArgs = [boolean, number, number, number, Float32Array, number, Float32Array, number, Float32Array, NativeCallOptions];

function gemvArgs(fn: string, m: number, n: number, a: Float32Array, x: Float32Array, options: GemvOptions): GemvArgs {
  const check = new Checker(fn);
  if (typeof options !== 'object' || options === null) check.typeError(`options must be an object, got ${describe(options)}`);
  check.dim(m, 'm');
  check.dim(n, 'n');
  check.f32(a, 'a');
  check.f32(x, 'x');
  const transA = check.boolean(options.transA ?? false, 'options.transA');
  const alpha = check.number(options.alpha ?? 1, 'options.alpha');
  const beta = check.number(options.beta ?? 0, 'options.beta');
  const lda = check.dim(options.lda ?? Math.max(1, n), 'lda');
  const [xLen, yLen] = transA ? [m, n] : [n, m];
  const y = options.y === undefined ? new Float32Array(yLen) : check.f32(options.y, 'y');
  check.callOptions(options);
  check.matrix(a, 'a', 'lda', m, n, lda, 'A is stored [m,n]');
  const why = `because transA is ${transA}`;
  check.vector(x, 'x', xLen, `${transA ? 'm' : 'n'} ${why}`);
  check.vector(y, 'y', yLen, `${transA ? 'n' : 'm'} ${why}`);
  check.disjoint(y, 'y', a, 'a');
  check.disjoint(y, 'y', x, 'x');
  return [transA, m, n, alpha, a, lda, x, beta, y, nativeOptions(options)];
}

/** C = alpha * op(A) * op(B) + beta * C on the calling thread; returns C. */
export function gemm(m: number, n: number, k: number, a: Float32Array, b: Float32Array, options: GemmOptions = {}): Float32Array {
  return loadAddon().gemmF32(...gemmArgs('gemm', m, n, k, a, b, options));
}

/**
 * gemm on a worker thread; resolves with C. The arrays must not be modified until it settles.
 * Invalid arguments reject the promise (they are checked before any work starts).
 */
export async function gemmAsync(
  m: number,
  n: number,
  k: number,
  a: Float32Array,
  b: Float32Array,
  options: GemmOptions = {},
): Promise<Float32Array> {
  return loadAddon().gemmF32Async(...gemmArgs('gemmAsync', m, n, k, a, b, options));
}

/** y = alpha * op(A) x + beta * y on the calling thread (A stored [m,n]); returns y. */
export function gemv(m: number, n: number, a: Float32Array, x: Float32Array, options: GemvOptions = {}): Float32Array {
  return loadAddon().gemvF32(...gemvArgs('gemv', m, n, a, x, options));
}

/** gemv on a worker thread; resolves with y. The arrays must not be modified until it settles. */
export async function gemvAsync(
  m: number,
  n: number,
  a: Float32Array,
  x: Float32Array,
  options: GemvOptions = {},
): Promise<Float32Array> {
  return loadAddon().gemvF32Async(...gemvArgs('gemvAsync', m, n, a, x, options));
}

/** Version, SIMD levels, default thread count and CUDA devices of the loaded addon. */
export function engineInfo(): EngineInfo {
  return loadAddon().engineInfo();
}
