// Embeddings per second of a bge-small-shaped encoder (bert: dim 384, 12 layers, 12 heads, FFN
// 1536, vocab 30522, context 512, mean pooling; random F16 weights, written once into
// bench/out/embed/) at batch 1 and batch 32, our engine (src/llm/embed: one native call per
// batch, all its tokens through the matmuls together) against llama.cpp's embedding context
// (node-llama-cpp, found as bench/llm.bench.ts finds it) in the same process and run. Each input
// is INPUT_TOKENS token ids ([CLS] ... [SEP]). node-llama-cpp's LlamaEmbeddingContext embeds one
// input per call, so its "batch 32" is 32 calls in a row. The two engines alternate per
// measurement, and the load average is printed before and after, so a busy machine shows.
//
// Environment (defaults in brackets):
//   EMBED_BENCH_THREADS   threads for both engines [PLATFORM_THREADS or all cores]
//   EMBED_BENCH_TYPE      weight type F16 | Q8_0 | F32 [F16]
//   EMBED_BENCH_TOKENS    tokens per input [32]
//   EMBED_BENCH_SECONDS   time per measurement, at least one batch [5]
//   EMBED_BENCH_ENGINES   ours,llama.cpp [both]
import { existsSync, mkdirSync, renameSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

import { loadEmbedder } from '../src/llm/embed/index.js';
import { bertModel, CLS, SEP } from '../test/helpers/bert-model.js';
import type { QuantType } from '../test/helpers/ggml-quants.js';
import { writeGguf } from '../test/helpers/gguf-writer.js';
import { findNodeLlamaCpp } from './llm.bench.js';

const HERE = path.dirname(fileURLToPath(import.meta.url));
const OUT = path.join(HERE, 'out', 'embed');

const BGE_SMALL = { arch: 'bert', nEmbd: 384, nLayer: 12, nHead: 12, nFf: 1536, nCtx: 512, vocabSize: 30522, pooling: 'mean' } as const;

function env(name: string, def: string): string {
  return process.env[name]?.trim() || def;
}

function ensureModel(type: QuantType): string {
  const file = path.join(OUT, `bge-small-shaped-${type}.gguf`);
  if (existsSync(file)) return file;
  mkdirSync(OUT, { recursive: true });
  console.log(`writing ${path.relative(process.cwd(), file)} (random weights, once)...`);
  const m = bertModel({ ...BGE_SMALL, weightType: type, seed: 7, name: 'bge-small-shaped-random' });
  writeGguf(`${file}.tmp`, m.spec);
  renameSync(`${file}.tmp`, file);
  return file;
}

function inputs(count: number, tokens: number, seed: number): number[][] {
  let s = seed;
  const next = () => (s = (s * 1103515245 + 12345) % 2147483648);
  return Array.from({ length: count }, () => [CLS, ...Array.from({ length: tokens - 2 }, () => 5 + (next() % 30000)), SEP]);
}

/** Embeddings per second: runs `batch` (which embeds `size` inputs) for about `seconds`. */
async function rate(size: number, seconds: number, batch: () => Promise<void>): Promise<number> {
  await batch(); // warm-up
  const started = performance.now();
  let done = 0;
  while (done === 0 || performance.now() - started < seconds * 1000) {
    await batch();
    done += size;
  }
  return done / ((performance.now() - started) / 1000);
}

/** The part of node-llama-cpp used here (it is not a dependency, so no types are imported). */
interface NlcModule {
  getLlama(o: object): Promise<{
    loadModel(o: object): Promise<{
      createEmbeddingContext(o: object): Promise<{ getEmbeddingFor(ids: number[]): Promise<unknown>; dispose(): Promise<void> }>;
      dispose(): Promise<void>;
    }>;
    dispose(): Promise<void>;
  }>;
}

const load = () => os.loadavg().map((x) => x.toFixed(2)).join(' ');

export default async function main(): Promise<void> {
  const type = env('EMBED_BENCH_TYPE', 'F16') as QuantType;
  const tokens = Number(env('EMBED_BENCH_TOKENS', '32'));
  const seconds = Number(env('EMBED_BENCH_SECONDS', '5'));
  const threads = Number(env('EMBED_BENCH_THREADS', process.env.PLATFORM_THREADS ?? String(os.availableParallelism())));
  const engines = env('EMBED_BENCH_ENGINES', 'ours,llama.cpp').split(',');
  const file = ensureModel(type);

  const ours = engines.includes('ours') ? await loadEmbedder(file, { threads }) : null;
  let peer: { embed: (ids: number[]) => Promise<unknown>; dispose: () => Promise<void> } | null = null;
  const nlc = engines.includes('llama.cpp') ? findNodeLlamaCpp() : null;
  if (nlc) {
    const { getLlama } = (await import(pathToFileURL(nlc).href)) as NlcModule;
    const llama = await getLlama({ gpu: false, build: 'never', logLevel: 'error' });
    const model = await llama.loadModel({ modelPath: file, gpuLayers: 0 });
    const context = await model.createEmbeddingContext({ contextSize: BGE_SMALL.nCtx, threads });
    peer = {
      embed: (ids) => context.getEmbeddingFor(ids),
      dispose: async () => {
        await context.dispose();
        await model.dispose();
        await llama.dispose();
      },
    };
  } else if (engines.includes('llama.cpp')) {
    console.log('node-llama-cpp not found (scripts/oracle or bench/peer): llama.cpp not measured');
  }

  console.log(`bge-small-shaped bert, ${type} weights, ${tokens} tokens per input, ${threads} threads, ${os.cpus()[0]?.model ?? 'cpu'}`);
  console.log(`load average before: ${load()}`);
  const rows: string[][] = [];
  for (const batch of [1, 32]) {
    const data = inputs(batch, tokens, batch);
    const a = ours ? await rate(batch, seconds, async () => void (await ours.embed(data))) : NaN;
    const b = peer
      ? await rate(batch, seconds, async () => {
          for (const ids of data) await peer.embed(ids);
        })
      : NaN;
    rows.push([String(batch), a.toFixed(1), b.toFixed(1), Number.isNaN(a / b) ? '-' : (a / b).toFixed(2)]);
  }
  console.log(`load average after:  ${load()}`);
  const header = ['batch', 'ours emb/s', 'llama.cpp emb/s', 'ours / llama.cpp'];
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
  for (const r of [header, ...rows]) console.log(r.map((c, i) => c.padStart(widths[i]!)).join('  '));
  await ours?.unload();
  await peer?.dispose();
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) await main();
