// Mixture-of-experts decoding against a dense model with the same active parameters: random
// qwen3moe files (8 experts of 1024, 2 per token, as Mixtral routes; 32 experts of 256, 8 per
// token, as Qwen3-30B-A3B routes) and a random qwen3 whose FFN is 2048 wide, otherwise the same
// shape (1024 wide, 4 layers, 8 heads, MOE_BENCH_TYPE weights). Decoding one sequence, a MoE
// model reads only its chosen experts' weights per layer (as many bytes as the dense FFN) though
// it holds 4x as many; the goal is decode within 1.2x of the dense model. Prefill
// (128 tokens in one step) reads every expert its tokens chose, once.
// The two models alternate for MOE_BENCH_ROUNDS rounds and the median counts.
//
// Environment (defaults in brackets):
//   MOE_BENCH_TYPE     Q8_0 or Q4_K [Q8_0]
//   MOE_BENCH_ROUNDS   rounds, the median counts [3]
//   LLM_BENCH_THREADS  engine threads [PLATFORM_THREADS or all cores]
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { loadModel } from '../src/llm/engine/index.js';
import { archModel, type ArchModelOptions } from '../test/helpers/arch-models.js';
import { writeGguf } from '../test/helpers/gguf-writer.js';
import { plainVocab } from '../test/helpers/llm-reference.js';
import { printTable } from './support/markdown-table.js';

const OUT = path.join(path.dirname(fileURLToPath(import.meta.url)), 'out', 'moe');
const type = (process.env['MOE_BENCH_TYPE'] ?? 'Q8_0') as 'Q8_0' | 'Q4_K';
if (type !== 'Q8_0' && type !== 'Q4_K') throw new Error('MOE_BENCH_TYPE must be Q8_0 or Q4_K');
const rounds = Number(process.env['MOE_BENCH_ROUNDS'] ?? 3);
if (!Number.isInteger(rounds) || rounds < 1) throw new Error('MOE_BENCH_ROUNDS must be a positive integer');
const threads = Number(process.env['LLM_BENCH_THREADS'] ?? process.env['PLATFORM_THREADS'] ?? os.availableParallelism());
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

const VOCAB = 512;
const base = { vocab: plainVocab(VOCAB), nEmbd: 1024, nLayer: 4, nHead: 8, nHeadKv: 8, nFf: 2048, weightType: type, seed: 3, nCtx: 1024 } as const;
const MODELS: Record<string, Omit<ArchModelOptions, 'vocab'> & { vocab: ArchModelOptions['vocab'] }> = {
  'dense (qwen3, FFN 2048)': { ...base, arch: 'qwen3' },
  'MoE (qwen3moe, 8 x 1024, top 2)': { ...base, arch: 'qwen3moe', experts: { count: 8, used: 2, ffn: 1024 } },
  'MoE (qwen3moe, 32 x 256, top 8)': { ...base, arch: 'qwen3moe', experts: { count: 32, used: 8, ffn: 256 } },
};

/** Matrix parameters: all of them, and those one token's step reads. */
function params(o: (typeof MODELS)[string]): { total: number; active: number } {
  const d = o.nEmbd;
  const attention = 4 * d * d;
  const ffn = o.experts ? 3 * d * o.experts.ffn : 3 * d * o.nFf;
  const experts = o.experts?.count ?? 1;
  const used = o.experts?.used ?? 1;
  const router = o.experts ? d * experts : 0;
  const io = 2 * d * VOCAB;
  return { total: io + o.nLayer * (attention + router + experts * ffn), active: io + o.nLayer * (attention + router + used * ffn) };
}

export default async function run(): Promise<void> {
  fs.mkdirSync(OUT, { recursive: true });
  const files: Record<string, string> = {};
  for (const [name, o] of Object.entries(MODELS)) {
    const file = path.join(OUT, `${o.arch}${o.experts ? `-${o.experts.count}x${o.experts.ffn}` : ''}-${type}.gguf`);
    if (!fs.existsSync(file)) writeGguf(file, archModel(o).spec);
    files[name] = file;
  }
  const prompt = Array.from({ length: 128 }, (_, i) => 3 + ((i * 7) % (VOCAB - 3)));
  const decode: Record<string, number[]> = {};
  const prefill: Record<string, number[]> = {};
  for (let r = 0; r < rounds; r++) {
    for (const [name, file] of Object.entries(files)) {
      const model = await loadModel(file, { threads });
      try {
        await model.generate(prompt.slice(0, 4), { maxTokens: 4, temperature: 0 }).result; // the pages in memory
        let t = performance.now();
        await model.logits(prompt);
        (prefill[name] ??= []).push(performance.now() - t);
        t = performance.now();
        const { tokens } = await model.generate([5, 6, 7], { maxTokens: 128, temperature: 0 }).result;
        (decode[name] ??= []).push((performance.now() - t) / tokens.length);
      } finally {
        await model.unload();
      }
    }
  }
  console.log(`\nMixture of experts vs dense, ${type}, ${threads} threads, median of ${rounds} rounds (load average ${os.loadavg()[0]!.toFixed(1)})\n`);
  const names = Object.keys(MODELS);
  printTable(
    names.map((name) => ({
      model: name,
      'params (M)': params(MODELS[name]!).total / 1e6,
      'active (M)': params(MODELS[name]!).active / 1e6,
      'decode ms/token': median(decode[name]!),
      'prefill 128 tokens ms': median(prefill[name]!),
    })),
    (v) => v.toFixed(1),
  );
  for (const name of names.slice(1)) console.log(`\n${name} / dense decode time: ${(median(decode[name]!) / median(decode[names[0]!]!)).toFixed(2)}x`);
  fs.writeFileSync(path.join(OUT, `moe-${type}.json`), JSON.stringify({ type, threads, rounds, decode, prefill }, null, 2));
}
