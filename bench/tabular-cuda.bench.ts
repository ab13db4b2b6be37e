// Where GPU execution of a tabular MLP starts to pay: the native executor compiled for the CPU
// against the same model compiled for CUDA with the crossover forced to 0 (every Gemm chain on the
// device: the input copied up, the layers run with resident weights, the output copied back), on
//   (a) MLP 64-256-256-1    (Gemm + Relu, Gemm + Relu, Gemm: ~82 k multiply-adds per row);
//   (b) MLP 512-1024-1024-1 (the same shape, ~1.6 M multiply-adds per row);
// at 1, 4, 16, ..., 16384 rows. Each figure is the median of runSync() calls (the engine's time on
// the calling thread, no libuv hand-off) over 4 different input batches after a warm-up. The
// crossover is the smallest measured row count from which the GPU is faster at every larger one:
// the value for PLATFORM_TABULAR_CUDA_MIN_ROWS / options.cudaMinRows (graph.h kDefaultCudaMinRows).
// Skipped, with the reason, on a host without the CUDA build or a device.
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

import { cudaUnavailableReason } from '../src/native/cuda-availability.js';
import { engineInfo } from '../src/native/gemm.js';
import { compileTabularModel, type TabularInput, type TabularModel } from '../src/tabular/executor/index.js';
import { normalize } from '../src/tabular/onnx/normalize.js';
import { parseOnnxModel } from '../src/tabular/onnx/parse.js';
import { rng } from '../test/helpers/random.js';
import { ModelBuilder } from '../test/helpers/onnx-builder.js';

const ROWS = [1, 4, 16, 64, 256, 1024, 4096, 16384];
const MODELS: ReadonlyArray<readonly number[]> = [
  [64, 256, 256, 1],
  [512, 1024, 1024, 1],
];
const TARGET_SECONDS = 0.3;
const MIN_RUNS = 3;
const MAX_RUNS = 2000;
const VARIANTS = 4;

/** Gemm (transB 1, bias) + Relu for every layer but the last, float, batch dimension N. */
function mlp(sizes: readonly number[]): Uint8Array {
  const r = rng(11);
  const b = new ModelBuilder({ opsets: { '': 13 } }).input('x', 'float', ['N', sizes[0]!]);
  let prev = 'x';
  for (let l = 0; l + 1 < sizes.length; l++) {
    const [k, n] = [sizes[l]!, sizes[l + 1]!];
    const scale = Math.sqrt(3 / k);
    b.initializer(`W${l}`, 'float', [n, k], Array.from({ length: n * k }, () => (r() * 2 - 1) * scale));
    b.initializer(`B${l}`, 'float', [n], Array.from({ length: n }, () => (r() - 0.5) / 10));
    const last = l + 2 === sizes.length;
    b.node('Gemm', [prev, `W${l}`, `B${l}`], [last ? 'y' : `h${l}`], { transB: 1 }, { name: `dense${l}` });
    if (!last) b.node('Relu', [`h${l}`], [`a${l}`], {}, { name: `relu${l}` });
    prev = `a${l}`;
  }
  return b.output('y', 'float', ['N', 1]).toBytes();
}

function median(call: (variant: number) => unknown): number {
  call(0);
  call(1 % VARIANTS);
  const times: number[] = [];
  const started = performance.now();
  while (times.length < MIN_RUNS || (times.length < MAX_RUNS && performance.now() - started < TARGET_SECONDS * 1000)) {
    const t0 = performance.now();
    call(times.length % VARIANTS);
    times.push(performance.now() - t0);
  }
  times.sort((a, b) => a - b);
  return times[Math.floor(times.length / 2)]!;
}

/** The smallest row count from which the GPU wins at every measured row count. */
function crossover(rows: readonly number[], cpu: readonly number[], gpu: readonly number[]): number | null {
  let from: number | null = null;
  for (let i = rows.length - 1; i >= 0; i--) {
    if (gpu[i]! < cpu[i]!) from = rows[i]!;
    else break;
  }
  return from;
}

export default async function main(): Promise<void> {
  const why = cudaUnavailableReason();
  if (why !== null) {
    console.log(`skipped: instance type cuda is not available on this host: ${why}`);
    return;
  }
  const info = engineInfo();
  console.log(`CPU: ${info.simd.active}, ${info.threads} threads; GPU: ${info.cuda.devices[0]?.name ?? '?'}`);
  const results: Array<{ model: string; rows: number[]; cpuMs: number[]; gpuMs: number[]; crossover: number | null }> = [];
  for (const sizes of MODELS) {
    const name = sizes.join('-');
    const normalized = normalize(parseOnnxModel(mlp(sizes)));
    const cpu: TabularModel = compileTabularModel(normalized);
    const gpu: TabularModel = compileTabularModel(normalized, { device: 'cuda', cudaMinRows: 0 });
    const d = gpu.describe();
    console.log(`\nMLP ${name}: ${d.deviceLayers} layers on ${d.deviceName}, ${((d.deviceBytes ?? 0) / 2 ** 20).toFixed(1)} MiB of weights resident`);
    console.log('rows      cpu ms      gpu ms   gpu speed-up   gpu rows/s');
    const cpuMs: number[] = [];
    const gpuMs: number[] = [];
    for (const rows of ROWS) {
      const r = rng(rows);
      const feeds: TabularInput[][] = Array.from({ length: VARIANTS }, () => [
        { name: 'x', dims: [rows, sizes[0]!], data: Float32Array.from({ length: rows * sizes[0]! }, () => r() * 2 - 1) },
      ]);
      const c = median((v) => cpu.runSync(feeds[v]!));
      const g = median((v) => gpu.runSync(feeds[v]!));
      cpuMs.push(c);
      gpuMs.push(g);
      console.log(
        `${String(rows).padStart(5)} ${c.toFixed(3).padStart(11)} ${g.toFixed(3).padStart(11)} ${(c / g).toFixed(2).padStart(13)}x ${Math.round(rows / (g / 1000)).toLocaleString('en-US').padStart(12)}`,
      );
    }
    const from = crossover(ROWS, cpuMs, gpuMs);
    console.log(from === null ? 'crossover: the GPU is not faster at 16384 rows' : `crossover: the GPU is faster from ${from} rows on (of those measured)`);
    results.push({ model: name, rows: ROWS, cpuMs, gpuMs, crossover: from });
    cpu.dispose();
    gpu.dispose();
  }
  const outDir = path.join(path.dirname(fileURLToPath(import.meta.url)), 'out');
  mkdirSync(outDir, { recursive: true });
  writeFileSync(path.join(outDir, 'tabular-cuda.json'), `${JSON.stringify({ info, results }, null, 2)}\n`);
}
