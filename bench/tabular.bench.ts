// Tabular model latency and throughput: the native executor against onnxruntime-node in the same
// process, on
//   (a) a gradient-boosted tree ensemble: 300 trees of depth 6 (full), 20 features, one target
//       (TreeEnsembleRegressor, SUM), inputs with 5 % NaN (missing_value_tracks_true on half the
//       branches);
//   (b) an MLP 64-256-256-1: Gemm + Relu, Gemm + Relu, Gemm (float);
// at batch sizes 1, 64 and 4096. Each figure is the median latency of repeated calls (cycling
// through 16 different input batches) after a warm-up; rows/s = batch / median. Ours: runSync() (on the calling thread) and run() (copies the
// inputs, computes on a libuv worker, resolves a promise: the thread hand-off is part of the
// figure). onnxruntime-node: InferenceSession.run(), which in 1.30 computes on the JavaScript
// thread inside a setImmediate, with its default thread settings. Ratios are onnxruntime's median
// over ours: above 1, ours is faster.
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

import ort from 'onnxruntime-node';

import { compileTabularModel, type TabularInput, type TabularModel } from '../src/tabular/executor/index.js';
import { engineInfo } from '../src/native/gemm.js';
import { normalize } from '../src/tabular/onnx/normalize.js';
import { parseOnnxModel } from '../src/tabular/onnx/parse.js';
import { attr, ModelBuilder } from '../test/helpers/onnx-builder.js';

const BATCHES = [1, 64, 4096];
// Per configuration: repeat until this much time has passed (at least MIN_RUNS calls).
const TARGET_SECONDS = 0.4;
const MIN_RUNS = 5;
const MAX_RUNS = 5000;

function rng(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    return s / 4294967296;
  };
}

/** A full gradient-boosted regressor: `trees` trees of `depth`, over `features` features (also used by predict-http.bench.ts). */
export function treeModel(trees: number, depth: number, features: number): Uint8Array {
  const r = rng(7);
  const ids: number[] = [], nodeIds: number[] = [], feats: number[] = [], modes: string[] = [], values: number[] = [];
  const trues: number[] = [], falses: number[] = [], missing: number[] = [];
  const tIds: number[] = [], tNodes: number[] = [], tTrees: number[] = [], tWeights: number[] = [];
  for (let t = 0; t < trees; t++) {
    // A full tree in breadth-first numbering: node k has children 2k+1 and 2k+2.
    const count = 2 ** (depth + 1) - 1;
    for (let k = 0; k < count; k++) {
      const leaf = k >= 2 ** depth - 1;
      ids.push(t);
      nodeIds.push(k);
      feats.push(leaf ? 0 : Math.floor(r() * features));
      modes.push(leaf ? 'LEAF' : 'BRANCH_LEQ');
      values.push(leaf ? 0 : Math.fround(-1.5 + 3 * r()));
      trues.push(leaf ? 0 : 2 * k + 1);
      falses.push(leaf ? 0 : 2 * k + 2);
      missing.push(!leaf && r() < 0.5 ? 1 : 0);
      if (leaf) {
        tIds.push(0);
        tNodes.push(k);
        tTrees.push(t);
        tWeights.push(Math.fround((r() - 0.5) / 10));
      }
    }
  }
  return new ModelBuilder({ opsets: { '': 13, 'ai.onnx.ml': 3 } })
    .input('x', 'float', ['N', features])
    .mlNode('TreeEnsembleRegressor', ['x'], ['y'], {
      n_targets: 1,
      aggregate_function: 'SUM',
      nodes_treeids: ids,
      nodes_nodeids: nodeIds,
      nodes_featureids: feats,
      nodes_modes: modes,
      nodes_values: attr.floats(values),
      nodes_truenodeids: trues,
      nodes_falsenodeids: falses,
      nodes_missing_value_tracks_true: missing,
      target_ids: tIds,
      target_nodeids: tNodes,
      target_treeids: tTrees,
      target_weights: attr.floats(tWeights),
      base_values: attr.floats([0.5]),
    })
    .output('y', 'float', ['N', 1])
    .toBytes();
}

/** Gemm + Relu layers of the given widths, e.g. [64, 256, 256, 1] (also used by predict-http.bench.ts). */
export function mlpModel(widths: number[]): Uint8Array {
  const r = rng(11);
  const b = new ModelBuilder({ opsets: { '': 13 } }).input('x', 'float', ['N', widths[0]!]);
  let prev = 'x';
  for (let l = 1; l < widths.length; l++) {
    const [k, n] = [widths[l - 1]!, widths[l]!];
    const scale = Math.sqrt(2 / k);
    b.initializer(`W${l}`, 'float', [n, k], Array.from({ length: n * k }, () => (r() * 2 - 1) * scale));
    b.initializer(`B${l}`, 'float', [n], Array.from({ length: n }, () => (r() - 0.5) / 10));
    b.node('Gemm', [prev, `W${l}`, `B${l}`], [`h${l}`], { transB: 1 });
    prev = `h${l}`;
    if (l < widths.length - 1) {
      b.node('Relu', [prev], [`a${l}`]);
      prev = `a${l}`;
    }
  }
  return b.output(prev, 'float', ['N', widths[widths.length - 1]!]).toBytes();
}

function inputRows(n: number, features: number, nanShare: number, seed: number): Float32Array {
  const r = rng(seed * 1000003 + n + features);
  return Float32Array.from({ length: n * features }, () => (r() < nanShare ? NaN : -2 + 4 * r()));
}

// Calls cycle through VARIANTS different input batches: repeating one batch lets the branch
// predictor learn its tree paths, which flatters branchy tree code at small batches.
const VARIANTS = 16;

async function median(call: (variant: number) => unknown): Promise<number> {
  await call(0);
  await call(1); // warm-up: allocations, thread pool start-up
  const times: number[] = [];
  const start = performance.now();
  while (times.length < MAX_RUNS && (times.length < MIN_RUNS || performance.now() - start < TARGET_SECONDS * 1000)) {
    const variant = times.length % VARIANTS;
    const t0 = performance.now();
    await call(variant);
    times.push(performance.now() - t0);
  }
  times.sort((a, b) => a - b);
  return times[Math.floor(times.length / 2)]!;
}

interface Row {
  model: string;
  batch: number;
  oursRunMs: number;
  oursSyncMs: number;
  ortMs: number;
}

const fmtMs = (ms: number) => (ms < 1 ? `${(ms * 1000).toFixed(1)} µs` : `${ms.toFixed(2)} ms`);
const fmtRate = (rows: number, ms: number) => {
  const r = rows / (ms / 1000);
  return r >= 1e6 ? `${(r / 1e6).toFixed(2)} M` : r >= 1e3 ? `${(r / 1e3).toFixed(1)} k` : r.toFixed(0);
};

export default async function run(): Promise<void> {
  ort.env.logLevel = 'error';
  const info = engineInfo();
  console.log(`native ${info.version}: SIMD ${info.simd.active}, ${info.threads} threads; onnxruntime-node ${ort.env.versions.common}`);
  const models: { name: string; bytes: Uint8Array; features: number; nan: number }[] = [
    { name: 'trees 300 x depth 6, 20 features', bytes: treeModel(300, 6, 20), features: 20, nan: 0.05 },
    { name: 'MLP 64-256-256-1', bytes: mlpModel([64, 256, 256, 1]), features: 64, nan: 0 },
  ];
  const rows: Row[] = [];
  console.log('');
  console.log('| model | batch | ours runSync() | ours run() | onnxruntime run() | ours rows/s (sync) | onnxruntime rows/s | ORT / ours (sync) | ORT / ours (run) |');
  console.log('|---|---:|---:|---:|---:|---:|---:|---:|---:|');
  for (const m of models) {
    // One engine at a time: onnxruntime's intra-op threads spin after each run and would take the
    // cores from ours if the two were interleaved (and ours would from it).
    const inputs = BATCHES.map((n) => Array.from({ length: VARIANTS }, (_, v) => inputRows(n, m.features, m.nan, v)));
    const ours: TabularModel = compileTabularModel(normalize(parseOnnxModel(m.bytes)));
    const oursTimes: [number, number][] = [];
    for (const [k, n] of BATCHES.entries()) {
      const feeds: TabularInput[][] = inputs[k]!.map((data) => [{ name: 'x', dims: [n, m.features], data }]);
      oursTimes.push([await median((v) => ours.run(feeds[v]!)), await median((v) => ours.runSync(feeds[v]!))]);
    }
    ours.dispose();
    await new Promise((resolve) => setTimeout(resolve, 200));
    const session = await ort.InferenceSession.create(m.bytes);
    for (const [k, n] of BATCHES.entries()) {
      const feeds = inputs[k]!.map((data) => ({ x: new ort.Tensor('float32', data, [n, m.features]) }));
      const ortMs = await median((v) => session.run(feeds[v]!));
      const [oursRunMs, oursSyncMs] = oursTimes[k]!;
      rows.push({ model: m.name, batch: n, oursRunMs, oursSyncMs, ortMs });
      console.log(
        `| ${m.name} | ${n} | ${fmtMs(oursSyncMs)} | ${fmtMs(oursRunMs)} | ${fmtMs(ortMs)} | ${fmtRate(n, oursSyncMs)} | ${fmtRate(n, ortMs)} | ` +
          `${(ortMs / oursSyncMs).toFixed(2)}x | ${(ortMs / oursRunMs).toFixed(2)}x |`,
      );
    }
    await session.release();
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
  console.log('\nmedian latency per call; rows/s = batch / median; ratios above 1: ours is faster.');
  const outDir = path.join(path.dirname(fileURLToPath(import.meta.url)), 'out');
  mkdirSync(outDir, { recursive: true });
  writeFileSync(path.join(outDir, 'tabular.json'), `${JSON.stringify({ info, onnxruntime: ort.env.versions.common, rows }, null, 2)}\n`);
}
