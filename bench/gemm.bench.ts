// f32 GEMM / GEMV throughput of the native tensor core, in GFLOP/s (2*M*N*K per call).
//
// For each shape: the multithreaded kernel at the best SIMD level, every SIMD level on one
// thread, and the portable scalar kernel on one thread, which is the peer every ratio is taken
// against. Shapes are square GEMMs plus the two LLM-inference shapes: a single token (1 x 4096 x
// 4096, a GEMV) and a batch of 32 tokens against a 4096 x 4096 weight stored [N,K] (transB).
// Each figure is the median of repeated calls after a warm-up; inputs are random in [-1, 1].
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

import { engineInfo, gemm } from '../src/native/gemm.js';
import type { SimdLevel } from '../src/native/surface.js';

interface Shape {
  label: string;
  m: number;
  n: number;
  k: number;
  transB: boolean;
}

const SHAPES: Shape[] = [
  { label: '64 x 64 x 64', m: 64, n: 64, k: 64, transB: false },
  { label: '256 x 256 x 256', m: 256, n: 256, k: 256, transB: false },
  { label: '512 x 512 x 512', m: 512, n: 512, k: 512, transB: false },
  { label: '1024 x 1024 x 1024', m: 1024, n: 1024, k: 1024, transB: false },
  { label: '1024 x 1024 x 1024 transB', m: 1024, n: 1024, k: 1024, transB: true },
  { label: '1 x 4096 x 4096 transB (GEMV)', m: 1, n: 4096, k: 4096, transB: true },
  { label: '32 x 4096 x 4096 transB', m: 32, n: 4096, k: 4096, transB: true },
  { label: '32 x 4096 x 4096', m: 32, n: 4096, k: 4096, transB: false },
];

// Per configuration: repeat until this much time has been spent (at least MIN_RUNS calls).
const TARGET_SECONDS = 0.4;
const MIN_RUNS = 3;
const MAX_RUNS = 200;

function random(length: number, seed: number): Float32Array {
  let s = seed >>> 0;
  const out = new Float32Array(length);
  for (let i = 0; i < length; i++) {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    out[i] = s / 2147483648 - 1;
  }
  return out;
}

function measure(shape: Shape, a: Float32Array, b: Float32Array, c: Float32Array, simd: SimdLevel, threads: number): number {
  const { m, n, k, transB } = shape;
  const call = (): void => {
    gemm(m, n, k, a, b, { transB, c, simd, threads });
  };
  call(); // warm-up: page faults, packing buffers, thread start-up
  const times: number[] = [];
  const start = performance.now();
  while (times.length < MAX_RUNS && (times.length < MIN_RUNS || performance.now() - start < TARGET_SECONDS * 1000)) {
    const t0 = performance.now();
    call();
    times.push(performance.now() - t0);
  }
  times.sort((x, y) => x - y);
  const median = times[Math.floor(times.length / 2)] as number;
  return (2 * m * n * k) / (median / 1000) / 1e9;
}

function pad(text: string, width: number, right = false): string {
  return right ? text.padStart(width) : text.padEnd(width);
}

export default async function run(): Promise<void> {
  const info = engineInfo();
  const best = info.simd.active;
  const levels = [...info.simd.available].reverse(); // best first
  const threads = info.threads;
  console.log(
    `native ${info.version}: SIMD detected ${info.simd.detected}, active ${best}, available ${info.simd.available.join('/')}; ` +
      `${threads} threads`,
  );

  const columns = [`${best} ${threads}T`, ...levels.map((l) => `${l} 1T`), `${best} ${threads}T / scalar 1T`, `${best} 1T / scalar 1T`];
  const widths = [30, ...columns.map((c) => Math.max(9, c.length))];
  const header = [pad('M x N x K', widths[0] ?? 30), ...columns.map((c, i) => pad(c, widths[i + 1] ?? 9, true))];
  console.log(`| ${header.join(' | ')} |`);
  console.log(`|${widths.map((w, i) => (i === 0 ? '-'.repeat(w + 2) : `${'-'.repeat(w + 1)}:`)).join('|')}|`);

  const results: Array<Record<string, number | string>> = [];
  for (const shape of SHAPES) {
    const a = random(shape.m * shape.k, 1);
    const b = random(shape.k * shape.n, 2);
    const c = new Float32Array(shape.m * shape.n);
    const multi = measure(shape, a, b, c, best, threads);
    const single = new Map<SimdLevel, number>();
    for (const level of levels) single.set(level, measure(shape, a, b, c, level, 1));
    const scalar = single.get('scalar') ?? Number.NaN;
    const bestSingle = single.get(best) ?? Number.NaN;
    const cells = [
      multi.toFixed(1),
      ...levels.map((l) => (single.get(l) ?? Number.NaN).toFixed(1)),
      `${(multi / scalar).toFixed(1)}x`,
      `${(bestSingle / scalar).toFixed(1)}x`,
    ];
    console.log(`| ${[pad(shape.label, widths[0] ?? 30), ...cells.map((x, i) => pad(x, widths[i + 1] ?? 9, true))].join(' | ')} |`);
    results.push({ shape: shape.label, [`${best}_${threads}T`]: multi, ...Object.fromEntries([...single].map(([l, g]) => [`${l}_1T`, g])) });
  }
  console.log('\nGFLOP/s = 2*M*N*K / median time per call; nT = threads.');

  const outDir = path.join(path.dirname(fileURLToPath(import.meta.url)), 'out');
  mkdirSync(outDir, { recursive: true });
  writeFileSync(path.join(outDir, 'gemm.json'), `${JSON.stringify({ info, results }, null, 2)}\n`);
}
