// The LLM engine's CUDA backend against its CPU backend, on the same GGUF files.
//
// Everywhere: asking for `cuda` where it cannot run (an addon built without CUDA, or no device)
// is a one-line load error, never a crash. With a CUDA device (and the CUDA build, `npm run
// build:cuda`) the rest runs:
//  - logits of tiny random models of every tensor type and both architectures within a stated
//    tolerance of the CPU backend's (all positions, several prefill chunkings);
//  - greedy decoding of stories260K.gguf equal to the CPU's (200 tokens), and 8 prompts batched
//    giving the CPU's logits (the fixture comes from ../shared/fixtures, or PLATFORM_FIXTURES_DIR
//    on the GPU machine);
//  - N sequences together giving the logits each gives alone (the batched kernels), and graphs on
//    and off giving the same tokens.
// Batched steps are compared through logits, not greedy tokens: at most 4 tokens a step the
// matmuls are f32 GEMVs, above that f16 tensor-core tiles (~1e-3 relative), so a near-tie between
// the two best tokens may legitimately flip between a sequence alone and in a batch.
//  - seeded sampling: valid tokens, the same seed twice gives the same tokens;
//  - CUDA graphs on and off give the same tokens;
//  - a grammar's mask in the sample kernel, log-probabilities, and prefix-cached blocks;
//  - the decoder architectures without CUDA kernels yet (qwen3, gemma2, gemma3, phi3) and mixture-of-experts files are a load
//    error that names them; Llama 3's rope_freqs give the CPU's logits.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { LlmEngineError, loadModel, type LoadModelOptions } from '../src/llm/engine/index.js';
import { engineInfo } from '../src/native/gemm.js';
import { archModel } from './helpers/arch-models.js';
import { writeGguf, type TinyModelOptions } from './helpers/gguf-writer.js';
import type { QuantType } from './helpers/ggml-quants.js';
import { plainVocab, referenceModel, relativeError } from './helpers/llm-reference.js';
import { encodeGrammar, GrammarBuilder, grammarMatches } from '../src/llm/structured/grammar.js';

const info = engineInfo();
const hasGpu = info.cuda.built && info.cuda.devices.length > 0;
if (!hasGpu) console.warn(`skipping CUDA engine comparisons: ${info.cuda.built ? info.cuda.error ?? 'no CUDA device' : 'addon built without CUDA'}`);

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'llm-engine-cuda-'));
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

let fileNo = 0;
function build(o: TinyModelOptions): string {
  const file = path.join(dir, `m${fileNo++}.gguf`);
  writeGguf(file, referenceModel(o).model.spec);
  return file;
}

function prompt(n: number, vocab: number, seed: number): number[] {
  let s = seed;
  return Array.from({ length: n }, () => (s = (s * 1103515245 + 12345) % 2147483648) % vocab);
}

async function logitsOn(backend: 'cpu' | 'cuda', file: string, tokens: number[], options: LoadModelOptions = {}) {
  const model = await loadModel(file, { threads: 2, ...options, backend });
  try {
    return await model.logits(tokens, { allPositions: true });
  } finally {
    await model.unload();
  }
}

async function greedy(backend: 'cpu' | 'cuda', file: string, prompts: number[][], maxTokens: number, options: LoadModelOptions = {}) {
  const model = await loadModel(file, { threads: 2, maxRunningSequences: Math.max(8, prompts.length), ...options, backend });
  try {
    return await Promise.all(prompts.map(async (p) => (await model.generate(p, { maxTokens, temperature: 0 }).result).tokens));
  } finally {
    await model.unload();
  }
}

/** Last-position logits of each prompt, all submitted at once (one batch). */
async function logitsTogether(backend: 'cpu' | 'cuda', file: string, prompts: number[][]): Promise<Float32Array[]> {
  const model = await loadModel(file, { threads: 2, maxRunningSequences: Math.max(8, prompts.length), maxBatchTokens: 1024, backend });
  try {
    return await Promise.all(prompts.map((p) => model.logits(p)));
  } finally {
    await model.unload();
  }
}

describe('cuda where it cannot run', () => {
  it.skipIf(hasGpu)('is a one-line load error naming the reason', async () => {
    const file = build({ arch: 'llama', vocab: plainVocab(32), nEmbd: 32, nLayer: 1, nHead: 4, nFf: 32, seed: 1 });
    const err = await loadModel(file, { backend: 'cuda' }).then(
      () => null,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(LlmEngineError);
    expect((err as LlmEngineError).code).toBe('load_failed');
    expect((err as Error).message).not.toContain('\n');
    expect((err as Error).message).toMatch(info.cuda.built ? /CUDA device/ : /built without CUDA \(build it with `npm run build:cuda`\)/);
    // The CPU backend of the same file still loads.
    const m = await loadModel(file, { backend: 'cpu', threads: 1 });
    expect(m.info().backend).toBe('cpu');
    await m.unload();
  });

  it('an unknown backend name is refused before loading', async () => {
    await expect(loadModel('x.gguf', { backend: 'gpu' as 'cpu' })).rejects.toThrow('llmLoadModel: options.backend must be one of "cpu", "cuda", got "gpu"');
  });
});

// Tolerances (max |cuda - cpu| / max |cpu| over every position's logits):
//  - F32, F16, BF16: both sides compute in f32 from the same weights; the CUDA KV cache is f16
//    (relative rounding 2^-11 on K and V) and large-batch matmuls run on f16 tensor cores:
//    1e-2.
//  - the quantized types: the CPU rounds activations to 8 bits per block (observed 2-2.6 % from
//    the f64 reference), CUDA may round them differently: 6e-2 (a layout or scale bug gives errors
//    of order 1).
const TOLERANCE: Record<QuantType, number> = {
  F32: 1e-2, F16: 1e-2, BF16: 1e-2, Q8_0: 6e-2, Q4_0: 6e-2, Q4_1: 6e-2, Q5_0: 6e-2, Q5_1: 6e-2, Q2_K: 6e-2, Q3_K: 6e-2, Q4_K: 6e-2, Q5_K: 6e-2, Q6_K: 6e-2,
  IQ4_NL: 6e-2, IQ4_XS: 6e-2, MXFP4: 6e-2,
};
const wide = { vocab: plainVocab(64), nEmbd: 256, nLayer: 2, nHead: 4, nHeadKv: 2, nFf: 512 } as const;

describe.skipIf(!hasGpu)('architectures', () => {
  const small = { vocab: plainVocab(64), nEmbd: 64, nLayer: 2, nHead: 4, nHeadKv: 2, nFf: 96, seed: 41 } as const;

  it('those without CUDA kernels yet are a load error naming the architecture, never wrong numbers', async () => {
    for (const arch of ['qwen3', 'gemma2', 'gemma3', 'phi3'] as const) {
      const file = path.join(dir, `arch-${arch}.gguf`);
      writeGguf(file, archModel({ ...small, arch }).spec);
      await expect(loadModel(file, { backend: 'cuda' })).rejects.toThrow(`architecture '${arch}' is not supported on the CUDA backend yet`);
    }
  });

  it('mixture-of-experts files (qwen3moe, Mixtral-style llama) are a load error that says so', async () => {
    for (const arch of ['qwen3moe', 'llama'] as const) {
      const file = path.join(dir, `moe-${arch}.gguf`);
      writeGguf(file, archModel({ ...small, arch, experts: { count: 4, used: 2, ffn: small.nFf } }).spec);
      await expect(loadModel(file, { backend: 'cuda' })).rejects.toThrow('mixture-of-experts models are not supported on the CUDA backend yet');
    }
  });

  it("Llama 3's rope_freqs.weight: the CPU's logits", async () => {
    const file = path.join(dir, 'arch-llama3.gguf');
    writeGguf(file, archModel({ ...small, arch: 'llama', ropeFreqs: Array.from({ length: 8 }, (_, i) => 1 + i) }).spec);
    const tokens = prompt(37, 64, 12);
    expect(relativeError(await logitsOn('cuda', file, tokens), await logitsOn('cpu', file, tokens))).toBeLessThan(TOLERANCE.F32);
  });
});

describe.skipIf(!hasGpu)('cuda logits match the cpu backend', () => {
  it.each(Object.keys(TOLERANCE) as QuantType[])('%s weights, both architectures', async (type) => {
    for (const arch of ['llama', 'qwen2'] as const) {
      const file = build({ ...wide, arch, weightType: type, seed: 31, ...(arch === 'qwen2' ? { tiedOutput: true } : {}) });
      const tokens = prompt(37, 64, 9);
      const cpu = await logitsOn('cpu', file, tokens);
      const cuda = await logitsOn('cuda', file, tokens);
      expect(cuda.length).toBe(cpu.length);
      expect(relativeError(cuda, cpu)).toBeLessThan(TOLERANCE[type]);
    }
  });

  it('prefill chunks of 1, 5 and 250 tokens and KV blocks of 1 and 16 give the same logits', async () => {
    const file = build({ ...wide, arch: 'llama', weightType: 'Q8_0', seed: 32 });
    const tokens = prompt(250, 64, 10);  // (the models' context is 256)
    const cpu = await logitsOn('cpu', file, tokens, { maxBatchTokens: 64 });
    for (const options of [{ maxBatchTokens: 1 }, { maxBatchTokens: 5, kvBlockSize: 1 }, { maxBatchTokens: 250 }] as LoadModelOptions[]) {
      expect(relativeError(await logitsOn('cuda', file, tokens, options), cpu)).toBeLessThan(TOLERANCE.Q8_0);
    }
  });
});

const STORIES = path.resolve(process.env['PLATFORM_FIXTURES_DIR'] ?? '../shared/fixtures', 'stories260K.gguf');

describe.skipIf(!hasGpu || !fs.existsSync(STORIES))('stories260K.gguf on cuda', () => {
  it('greedy decoding from BOS equals the CPU backend; 8 prompts together give the CPU logits', async () => {
    const bos = [1];
    const [cpu] = await greedy('cpu', STORIES, [bos], 200);
    const [alone] = await greedy('cuda', STORIES, [bos], 200);
    expect(alone).toEqual(cpu);
    const prompts = Array.from({ length: 8 }, (_, i) => [1, ...prompt(3 + 4 * i, 512, 40 + i)]);
    const onCpu = await logitsTogether('cpu', STORIES, prompts);
    const onCuda = await logitsTogether('cuda', STORIES, prompts);
    prompts.forEach((_, i) => expect(relativeError(onCuda[i]!, onCpu[i]!)).toBeLessThan(TOLERANCE.F32));
  });
});

describe.skipIf(!hasGpu)('cuda batching, graphs and sampling', () => {
  const file = () => build({ ...wide, arch: 'llama', weightType: 'F16', seed: 33 });

  it('12 sequences together give the logits each gives alone; graphs on and off give the same tokens', async () => {
    const f = file();
    const prompts = Array.from({ length: 12 }, (_, i) => prompt(3 + 5 * i, 64, 50 + i));
    const together = await logitsTogether('cuda', f, prompts);
    for (const [i, p] of prompts.entries()) {
      const [alone] = await logitsTogether('cuda', f, [p]);
      expect(relativeError(together[i]!, alone!)).toBeLessThan(TOLERANCE.F16);
    }
    // The same batch, replayed from captured graphs or launched kernel by kernel: same kernels,
    // same order, so the same tokens exactly.
    const withGraphs = await greedy('cuda', f, prompts, 24);
    process.env['PLATFORM_CUDA_GRAPHS'] = '0';
    try {
      expect(await greedy('cuda', f, prompts, 24)).toEqual(withGraphs);
    } finally {
      delete process.env['PLATFORM_CUDA_GRAPHS'];
    }
  });

  it('seeded sampling with every filter gives valid tokens, the same for the same seed', async () => {
    const f = file();
    const model = await loadModel(f, { backend: 'cuda' });
    try {
      const options = { maxTokens: 32, temperature: 0.9, topK: 20, topP: 0.9, minP: 0.02, frequencyPenalty: 0.5, presencePenalty: 0.3, seed: 7 };
      const a = (await model.generate(prompt(5, 64, 1), options).result).tokens;
      const b = (await model.generate(prompt(5, 64, 1), options).result).tokens;
      expect(a).toEqual(b);
      for (const t of a) expect(t >= 0 && t < 64).toBe(true);
      expect(model.info().backend).toBe('cuda');
      expect(model.info().memory.deviceWeightBytes).toBeGreaterThan(0);
    } finally {
      await model.unload();
    }
  });
});

// Issue 19 and 20 on the device: a grammar's mask applied in the sample kernel, log-probabilities
// read from the host copy of the logits, and prefix-cached blocks read by the attention kernels.
describe.skipIf(!hasGpu)('cuda: grammars, log-probabilities and the prefix cache', () => {
  const file = () => build({ ...wide, arch: 'llama', weightType: 'F16', seed: 35 });
  // The engine only needs each token's bytes: tokens 0-9 are the digits, the others letters.
  const bytes = Array.from({ length: 64 }, (_, t) => Buffer.from(t < 10 ? String(t) : String.fromCharCode(97 + ((t - 10) % 26))));
  const grammar = () => {
    const b = new GrammarBuilder();
    return b.build([...b.repeat(b.bytes([[0x30, 0x39]]), 2, 5), ...b.literal('x')]);
  };

  it('every sampled and greedy output matches the grammar, batched with free sequences', async () => {
    const model = await loadModel(file(), { backend: 'cuda', maxRunningSequences: 8 });
    try {
      model.setTokenBytes(bytes);
      const g = grammar();
      const compiled = model.compileGrammar(encodeGrammar(g));
      const runs = await Promise.all(
        Array.from({ length: 8 }, async (_, i) => {
          const options = { maxTokens: 16, temperature: i % 2 === 0 ? 0.9 : 0, seed: i, ...(i < 6 ? { grammar: compiled.handle } : {}) };
          return { constrained: i < 6, result: await model.generate(prompt(5, 64, i + 1), options).result };
        }),
      );
      for (const { constrained, result } of runs) {
        if (!constrained) continue;
        expect(result.finishReason).toBe('stop');
        expect(grammarMatches(g, Buffer.concat(result.tokens.map((t) => bytes[t]!)))).toBe(true);
      }
    } finally {
      await model.unload();
    }
  });

  it('log-probabilities over the whole vocabulary sum to 1 and match the cpu backend', async () => {
    const f = file();
    const run = async (backend: 'cpu' | 'cuda') => {
      const model = await loadModel(f, { backend });
      try {
        const gen = model.generate(prompt(6, 64, 3), { maxTokens: 1, temperature: 0, logprobs: 64 });
        const tokens = [];
        for await (const t of gen) tokens.push(t);
        return tokens[0]!;
      } finally {
        await model.unload();
      }
    };
    const [cpu, cuda] = [await run('cpu'), await run('cuda')];
    expect(Math.abs(cuda.top!.reduce((s, [, lp]) => s + Math.exp(lp), 0) - 1)).toBeLessThan(1e-4);
    const byId = (top: Array<[number, number]>) => Float32Array.from(top.slice().sort((a, b) => a[0] - b[0]).map(([, lp]) => lp));
    expect(relativeError(byId(cuda.top!), byId(cpu.top!))).toBeLessThan(TOLERANCE.F16);
  });

  it('a prompt whose blocks come from the prefix cache gives the logits of one computed in full', async () => {
    const model = await loadModel(file(), { backend: 'cuda', kvBlockSize: 16 });
    try {
      const p = prompt(70, 64, 9);
      const first = model.generate(p, { maxTokens: 1, temperature: 0, logprobs: 64 });
      const a = [];
      for await (const t of first) a.push(t);
      const second = model.generate(p, { maxTokens: 1, temperature: 0, logprobs: 64 });
      const b = [];
      for await (const t of second) b.push(t);
      expect((await second.result).cachedTokens).toBe(64);
      const byId = (top: Array<[number, number]>) => Float32Array.from(top.slice().sort((x, y) => x[0] - y[0]).map(([, lp]) => lp));
      expect(relativeError(byId(b[0]!.top!), byId(a[0]!.top!))).toBeLessThan(TOLERANCE.F16);
    } finally {
      await model.unload();
    }
  });
});
