// Exact error messages at the native boundary (the addon called directly) and in the TypeScript
// wrappers. Bad input must throw a TypeError (wrong type) or RangeError (unusable value) with a
// message naming the argument, never reach the kernels.
import { beforeAll, describe, expect, it } from 'vitest';

import { loadAddon } from '../src/native/addon.js';
import type { NativeAddon } from '../src/native/surface.js';
import { gemm, gemmAsync, gemv, gemvAsync } from '../src/native/gemm.js';

let addon: NativeAddon;
beforeAll(() => {
  addon = loadAddon();
});

const f32 = (n: number): Float32Array => new Float32Array(n).fill(1);

// A valid 3x4x5 call: A [3,5], B [5,4], C [3,4].
type GemmTuple = Parameters<NativeAddon['gemmF32']>;
function goodGemm(): GemmTuple {
  return [false, false, 3, 4, 5, 1, f32(15), 5, f32(20), 4, 0, f32(12), 4];
}
function withArg(index: number, value: unknown, base: GemmTuple = goodGemm()): GemmTuple {
  const args = [...base] as unknown[];
  args[index] = value;
  return args as GemmTuple;
}

function expectThrow(fn: () => unknown, type: typeof TypeError | typeof RangeError, message: string): void {
  let caught: unknown;
  try {
    fn();
  } catch (error) {
    caught = error;
  }
  expect(caught).toBeInstanceOf(type);
  expect((caught as Error).message).toBe(message);
}

const USAGE = 'transA, transB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc, options?';

describe('gemmF32 argument checks', () => {
  const cases: Array<[string, () => GemmTuple, typeof TypeError | typeof RangeError, string]> = [
    ['transA type', () => withArg(0, 1), TypeError, 'gemmF32: transA must be a boolean, got number'],
    ['transB type', () => withArg(1, 'yes'), TypeError, 'gemmF32: transB must be a boolean, got string'],
    ['m type', () => withArg(2, '3'), TypeError, 'gemmF32: m must be a number, got string'],
    ['m negative', () => withArg(2, -1), RangeError, 'gemmF32: m must be a non-negative integer, got -1'],
    ['n fractional', () => withArg(3, 1.5), RangeError, 'gemmF32: n must be a non-negative integer, got 1.5'],
    ['k NaN', () => withArg(4, Number.NaN), RangeError, 'gemmF32: k must be a non-negative integer, got NaN'],
    ['k infinite', () => withArg(4, Infinity), RangeError, 'gemmF32: k must be a non-negative integer, got Infinity'],
    ['m too large', () => withArg(2, 2 ** 31), RangeError, 'gemmF32: m must be at most 2147483647, got 2147483648'],
    ['alpha type', () => withArg(5, null), TypeError, 'gemmF32: alpha must be a number, got null'],
    ['a Float64Array', () => withArg(6, new Float64Array(15)), TypeError, 'gemmF32: a must be a Float32Array, got Float64Array'],
    ['a plain array', () => withArg(6, [1, 2, 3]), TypeError, 'gemmF32: a must be a Float32Array, got array'],
    ['b undefined', () => withArg(8, undefined), TypeError, 'gemmF32: b must be a Float32Array, got undefined'],
    ['c ArrayBuffer', () => withArg(11, new ArrayBuffer(48)), TypeError, 'gemmF32: c must be a Float32Array, got ArrayBuffer'],
    ['lda negative', () => withArg(7, -5), RangeError, 'gemmF32: lda must be a non-negative integer, got -5'],
    [
      'lda too small',
      () => withArg(7, 4),
      RangeError,
      'gemmF32: lda must be at least 5 (A is stored [m,k] because transA is false), got 4',
    ],
    [
      'lda too small for transA',
      () => withArg(7, 2, withArg(0, true)),
      RangeError,
      'gemmF32: lda must be at least 3 (A is stored [k,m] because transA is true), got 2',
    ],
    [
      'ldb too small for transB',
      () => withArg(9, 4, withArg(1, true)),
      RangeError,
      'gemmF32: ldb must be at least 5 (B is stored [n,k] because transB is true), got 4',
    ],
    ['ldc too small', () => withArg(12, 3), RangeError, 'gemmF32: ldc must be at least 4 (C is stored [m,n]), got 3'],
    ['ldc zero with n = 0', () => withArg(12, 0, withArg(3, 0)), RangeError, 'gemmF32: ldc must be at least 1 (C is stored [m,n]), got 0'],
    [
      'a too short',
      () => withArg(6, f32(14)),
      RangeError,
      'gemmF32: a has 14 elements but needs at least 15 (A is stored [m,k] because transA is false, [3,5] with lda 5)',
    ],
    [
      'a too short for its lda',
      () => withArg(7, 8, withArg(6, f32(20))),
      RangeError,
      'gemmF32: a has 20 elements but needs at least 21 (A is stored [m,k] because transA is false, [3,5] with lda 8)',
    ],
    [
      'b too short for transB',
      () => withArg(9, 5, withArg(1, true, withArg(8, f32(19)))),
      RangeError,
      'gemmF32: b has 19 elements but needs at least 20 (B is stored [n,k] because transB is true, [4,5] with ldb 5)',
    ],
    [
      'c too short',
      () => withArg(11, f32(11)),
      RangeError,
      'gemmF32: c has 11 elements but needs at least 12 (C is stored [m,n], [3,4] with ldc 4)',
    ],
    ['options type', () => [...goodGemm(), 5] as unknown as GemmTuple, TypeError, 'gemmF32: options must be an object, got number'],
    [
      'options.simd unknown',
      () => [...goodGemm(), { simd: 'sse' }] as unknown as GemmTuple,
      RangeError,
      'gemmF32: options.simd must be one of "scalar", "neon", "avx2", "avx512", got "sse"',
    ],
    [
      'options.simd type',
      () => [...goodGemm(), { simd: 2 }] as unknown as GemmTuple,
      TypeError,
      'gemmF32: options.simd must be one of "scalar", "neon", "avx2", "avx512", got number',
    ],
    [
      'options.threads negative',
      () => [...goodGemm(), { threads: -1 }] as unknown as GemmTuple,
      RangeError,
      'gemmF32: options.threads must be an integer from 0 (the default) to 256, got -1',
    ],
    [
      'options.threads too many',
      () => [...goodGemm(), { threads: 257 }] as unknown as GemmTuple,
      RangeError,
      'gemmF32: options.threads must be an integer from 0 (the default) to 256, got 257',
    ],
  ];

  it.each(cases)('%s', (_name, args, type, message) => {
    expectThrow(() => addon.gemmF32(...args()), type, message);
    // The async variant checks synchronously, before any work is queued.
    expectThrow(() => addon.gemmF32Async(...args()), type, message.replace('gemmF32:', 'gemmF32Async:'));
  });

  it('checks the argument count', () => {
    const call = addon.gemmF32 as unknown as (...args: unknown[]) => unknown;
    expectThrow(() => call(), TypeError, `gemmF32: expected 13 or 14 arguments (${USAGE}), got 0`);
    expectThrow(() => call(...goodGemm().slice(0, 12)), TypeError, `gemmF32: expected 13 or 14 arguments (${USAGE}), got 12`);
    expectThrow(() => call(...goodGemm(), {}, 1), TypeError, `gemmF32: expected 13 or 14 arguments (${USAGE}), got 15`);
  });

  it('refuses an output that shares memory with an input', () => {
    const buffer = new Float32Array(64);
    const a = buffer.subarray(0, 15);
    const c = buffer.subarray(10, 22); // overlaps the end of a
    expectThrow(
      () => addon.gemmF32(false, false, 3, 4, 5, 1, a, 5, f32(20), 4, 0, c, 4),
      RangeError,
      'gemmF32: c must not share memory with a',
    );
    const b = buffer.subarray(30, 50);
    const c2 = buffer.subarray(45, 57);
    expectThrow(
      () => addon.gemmF32(false, false, 3, 4, 5, 1, f32(15), 5, b, 4, 0, c2, 4),
      RangeError,
      'gemmF32: c must not share memory with b',
    );
    // Disjoint views of one buffer are fine.
    const c3 = buffer.subarray(50, 62);
    expect(addon.gemmF32(false, false, 3, 4, 5, 1, a, 5, b, 4, 0, c3, 4)).toBe(c3);
  });

  it('refuses resizable buffers in async calls', () => {
    const Resizable = ArrayBuffer as unknown as new (n: number, o: { maxByteLength: number }) => ArrayBuffer;
    const a = new Float32Array(new Resizable(60, { maxByteLength: 120 }));
    if (!(a.buffer as ArrayBuffer & { resizable?: boolean }).resizable) return; // runtime without resizable buffers
    expectThrow(
      () => addon.gemmF32Async(...withArg(6, a)),
      TypeError,
      'gemmF32Async: a must not be backed by a resizable buffer in an async call',
    );
    expect(addon.gemmF32(...withArg(6, a))).toBeInstanceOf(Float32Array); // sync calls are fine
  });

  it('accepts empty problems with empty arrays', () => {
    const empty = new Float32Array(0);
    expect(addon.gemmF32(false, false, 0, 0, 0, 1, empty, 1, empty, 1, 0, empty, 1).length).toBe(0);
    const c = new Float32Array([1, 2, 3, 4]).fill(Number.NaN);
    addon.gemmF32(false, false, 2, 2, 0, 1, empty, 1, empty, 2, 0, c, 2);
    expect(Array.from(c)).toEqual([0, 0, 0, 0]); // K = 0, beta = 0: C = 0 even over NaN
  });
});

describe('gemvF32 argument checks', () => {
  type GemvTuple = Parameters<NativeAddon['gemvF32']>;
  // A valid call: A [3,5], x [5], y [3].
  const good = (): GemvTuple => [false, 3, 5, 1, f32(15), 5, f32(5), 0, f32(3)];
  const set = (index: number, value: unknown, base: GemvTuple = good()): GemvTuple => {
    const args = [...base] as unknown[];
    args[index] = value;
    return args as GemvTuple;
  };

  const cases: Array<[string, () => GemvTuple, typeof TypeError | typeof RangeError, string]> = [
    ['transA type', () => set(0, 0), TypeError, 'gemvF32: transA must be a boolean, got number'],
    ['m negative', () => set(1, -2), RangeError, 'gemvF32: m must be a non-negative integer, got -2'],
    ['x type', () => set(6, new Int32Array(5)), TypeError, 'gemvF32: x must be a Float32Array, got Int32Array'],
    ['lda too small', () => set(5, 4), RangeError, 'gemvF32: lda must be at least 5 (A is stored [m,n]), got 4'],
    [
      'a too short',
      () => set(4, f32(14)),
      RangeError,
      'gemvF32: a has 14 elements but needs at least 15 (A is stored [m,n], [3,5] with lda 5)',
    ],
    ['x too short', () => set(6, f32(4)), RangeError, 'gemvF32: x has 4 elements but needs at least 5 (n because transA is false)'],
    [
      'y too short for transA',
      () => set(0, true, set(6, f32(3))),
      RangeError,
      'gemvF32: y has 3 elements but needs at least 5 (n because transA is true)',
    ],
    ['beta type', () => set(7, '0'), TypeError, 'gemvF32: beta must be a number, got string'],
  ];

  it.each(cases)('%s', (_name, args, type, message) => {
    expectThrow(() => addon.gemvF32(...args()), type, message);
    expectThrow(() => addon.gemvF32Async(...args()), type, message.replace('gemvF32:', 'gemvF32Async:'));
  });

  it('checks the argument count', () => {
    const call = addon.gemvF32 as unknown as (...args: unknown[]) => unknown;
    expectThrow(() => call(true), TypeError, 'gemvF32: expected 9 or 10 arguments (transA, m, n, alpha, a, lda, x, beta, y, options?), got 1');
  });
});

describe('wrapper argument checks', () => {
  it('gemm checks in JavaScript with the same wording', () => {
    expectThrow(() => gemm(-1, 4, 5, f32(15), f32(20)), RangeError, 'gemm: m must be a non-negative integer, got -1');
    expectThrow(() => gemm(3, 4, 5, [1] as unknown as Float32Array, f32(20)), TypeError, 'gemm: a must be a Float32Array, got array');
    expectThrow(
      () => gemm(3, 4, 5, f32(14), f32(20)),
      RangeError,
      'gemm: a has 14 elements but needs at least 15 (A is stored [m,k] because transA is false, [3,5] with lda 5)',
    );
    expectThrow(
      () => gemm(3, 4, 5, f32(15), f32(20), { transB: true, ldb: 4 }),
      RangeError,
      'gemm: ldb must be at least 5 (B is stored [n,k] because transB is true), got 4',
    );
    expectThrow(
      () => gemm(3, 4, 5, f32(15), f32(20), { transA: 'no' as unknown as boolean }),
      TypeError,
      'gemm: options.transA must be a boolean, got string',
    );
    expectThrow(
      () => gemm(3, 4, 5, f32(15), f32(20), { threads: 1.5 }),
      RangeError,
      'gemm: options.threads must be an integer from 0 (the default) to 256, got 1.5',
    );
    expectThrow(
      () => gemm(3, 4, 5, f32(15), f32(20), { c: f32(11) }),
      RangeError,
      'gemm: c has 11 elements but needs at least 12 (C is stored [m,n], [3,4] with ldc 4)',
    );
    const shared = new Float32Array(40);
    expectThrow(
      () => gemm(3, 4, 5, shared.subarray(0, 15), f32(20), { c: shared.subarray(14, 26) }),
      RangeError,
      'gemm: c must not share memory with a',
    );
  });

  it('async wrappers reject with the same errors', async () => {
    await expect(gemmAsync(3, 4, 5, f32(15), f32(20), { simd: 'mmx' as never })).rejects.toThrow(
      new RangeError('gemmAsync: options.simd must be one of "scalar", "neon", "avx2", "avx512", got "mmx"'),
    );
    await expect(gemvAsync(3, 5, f32(15), f32(4))).rejects.toThrow(
      new RangeError('gemvAsync: x has 4 elements but needs at least 5 (n because transA is false)'),
    );
  });

  it('gemv checks in JavaScript with the same wording', () => {
    expectThrow(() => gemv(3, 5, f32(15), f32(5), { lda: 4 }), RangeError, 'gemv: lda must be at least 5 (A is stored [m,n]), got 4');
    expectThrow(
      () => gemv(3, 5, f32(15), f32(3), { transA: true, y: f32(4) }),
      RangeError,
      'gemv: y has 4 elements but needs at least 5 (n because transA is true)',
    );
  });
});
