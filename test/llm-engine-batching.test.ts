// Continuous batching, cancellation, overload, and sampling on a small random model.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LlmEngineError, OverloadedError, loadModel, type LlmModel } from '../src/llm/engine/index.js';
import { writeGguf } from './helpers/gguf-writer.js';
import { plainVocab, referenceModel } from './helpers/llm-reference.js';

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'llm-engine-batching-'));
const file = path.join(dir, 'model.gguf');
// Wider and with a long context: generation outlasts the checks made while it runs.
const slowFile = path.join(dir, 'slow.gguf');
beforeAll(() => {
  writeGguf(slowFile, referenceModel({ arch: 'llama', vocab: plainVocab(128), nEmbd: 256, nLayer: 4, nHead: 4, nHeadKv: 2, nFf: 512, seed: 6, nCtx: 4096 }).model.spec);
  // No EOS in reach (eos id 2 is fine: random weights rarely pick it; tests accept 'stop').
  const ref = referenceModel({ arch: 'llama', vocab: plainVocab(128), nEmbd: 64, nLayer: 2, nHead: 4, nHeadKv: 2, nFf: 96, seed: 5, nCtx: 512 });
  writeGguf(file, ref.model.spec);
});
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

async function withModel<T>(options: Parameters<typeof loadModel>[1], fn: (m: LlmModel) => Promise<T>, from = file): Promise<T> {
  const model = await loadModel(from, { threads: 2, ...options });
  try {
    return await fn(model);
  } finally {
    await model.unload();
  }
}

const prompts = [[5, 6, 7], [9], [10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29], [40, 41], [3, 3, 3, 3, 3]];

describe('continuous batching', () => {
  it('sequences decoded together give the same greedy tokens as each decoded alone', async () => {
    await withModel({ maxRunningSequences: 8, maxBatchTokens: 8 }, async (m) => {
      const solo: number[][] = [];
      for (const p of prompts) solo.push((await m.generate(p, { maxTokens: 40 }).result).tokens);
      const stepsBefore = m.stats().steps;
      const together = await Promise.all(prompts.map((p) => m.generate(p, { maxTokens: 40 }).result));
      expect(together.map((r) => r.tokens)).toEqual(solo);
      // Batched: far fewer steps than the sum of the sequences' tokens.
      expect(m.stats().steps - stepsBefore).toBeLessThan(prompts.length * 30);
      expect(m.stats()).toMatchObject({ running: 0, waiting: 0, kvBlocksUsed: 0, kvBlocksReserved: 0 });
    });
  });

  it('streams tokens as they are produced and reports timings', async () => {
    await withModel({}, async (m) => {
      const started = performance.now();
      const gen = m.generate([1, 2, 3], { maxTokens: 12 });
      let n = 0;
      for await (const t of gen) {
        expect(Number.isInteger(t.token)).toBe(true);
        n++;
      }
      const r = await gen.result;
      const elapsed = performance.now() - started;
      expect(r.completionTokens).toBe(n);
      expect(r.promptTokens).toBe(3);
      if (r.finishReason === 'length') expect(n).toBe(12);
      // Milliseconds of real work: the prompt pass takes some time, and the three phases fit in
      // the time the caller waited.
      const { queuedMs, prefillMs, decodeMs, decodeTokensPerSecond } = r.timings;
      expect(prefillMs).toBeGreaterThan(0);
      expect(queuedMs + prefillMs + decodeMs).toBeLessThanOrEqual(elapsed);
      if (n > 1) {
        expect(decodeMs).toBeGreaterThan(0);
        expect(decodeTokensPerSecond).toBeCloseTo(((n - 1) * 1000) / decodeMs, 6);
      }
    });
  });

  it('breaking out of the loop cancels the sequence and frees its KV blocks at once', async () => {
    await withModel({ kvBlockSize: 4, contextLength: 4096 }, async (m) => {
      const gen = m.generate([1, 2, 3, 4, 5, 6, 7, 8, 9], { maxTokens: 4000 });
      let n = 0;
      for await (const _ of gen) {
        if (++n === 3) {
          const s = m.stats();
          expect(s.running).toBe(1);
          expect(s.kvBlocksUsed).toBeGreaterThanOrEqual(3);
          expect(s.kvBlocksReserved).toBeGreaterThanOrEqual(s.kvBlocksUsed);
          break;
        }
      }
      const r = await gen.result;
      expect(r.finishReason).toBe('cancelled');
      expect(m.stats()).toMatchObject({ running: 0, kvBlocksUsed: 0, kvBlocksReserved: 0 });
    }, slowFile);
  });

  it('an AbortSignal cancels, before or during generation', async () => {
    await withModel({}, async (m) => {
      const early = new AbortController();
      early.abort();
      expect((await m.generate([4], { maxTokens: 400, signal: early.signal }).result).finishReason).toBe('cancelled');
      const ac = new AbortController();
      const gen = m.generate([4], { maxTokens: 400, signal: ac.signal });
      await gen.next();
      ac.abort();
      expect((await gen.result).finishReason).toBe('cancelled');
      expect(m.stats().kvBlocksUsed).toBe(0);
    });
  });

  it('a full wait queue gives OverloadedError (code overloaded); the queue drains afterwards', async () => {
    // The slow model: on the tiny one, a loaded machine can deliver a's first token together with
    // its end (300 tokens in ~15 ms), and then nothing is running when the stats are read.
    await withModel({ maxRunningSequences: 1, maxQueued: 1 }, async (m) => {
      const a = m.generate([1], { maxTokens: 300 });
      await a.next(); // a is running
      const b = m.generate([2], { maxTokens: 5 }); // waits
      expect(m.stats()).toMatchObject({ running: 1, waiting: 1 });
      let error: unknown;
      try {
        m.generate([3], { maxTokens: 5 });
      } catch (e) {
        error = e;
      }
      expect(error).toBeInstanceOf(OverloadedError);
      expect((error as OverloadedError).code).toBe('overloaded');
      a.cancel();
      expect((await a.result).finishReason).toBe('cancelled');
      expect((await b.result).completionTokens).toBeGreaterThan(0);
    }, slowFile);
  });

  it('a sequence waits for KV blocks instead of failing, then runs', async () => {
    // 4 blocks of 16 positions: the first request reserves all of them.
    const blockBytes = 2 * 2 * 16 * 32 * 4; // layers * (K,V) * positions * kv_dim * f32
    await withModel({ kvCacheBytes: 4 * blockBytes, maxRunningSequences: 4 }, async (m) => {
      expect(m.stats().kvBlocksTotal).toBe(4);
      const a = m.generate([1, 2], { maxTokens: 62 });
      const b = m.generate([3], { maxTokens: 10 });
      const [ra, rb] = await Promise.all([a.result, b.result]);
      expect(ra.timings.queuedMs).toBeLessThan(rb.timings.queuedMs + 1000);
      expect(rb.completionTokens).toBeGreaterThan(0);
      expect(m.stats().kvBlocksUsed).toBe(0);
    });
  });
});

describe('sampling', () => {
  it('a seed reproduces the same tokens; different seeds differ', async () => {
    await withModel({}, async (m) => {
      const run = async (seed: number) => (await m.generate([7, 8], { maxTokens: 30, temperature: 1.5, seed }).result).tokens;
      const a = await run(42);
      expect(await run(42)).toEqual(a);
      expect(await run(43)).not.toEqual(a);
    });
  });

  it('topK 1 equals greedy; a huge presence penalty forbids repeats', async () => {
    await withModel({}, async (m) => {
      const greedy = (await m.generate([7], { maxTokens: 30 }).result).tokens;
      const topk1 = (await m.generate([7], { maxTokens: 30, temperature: 0.8, topK: 1, seed: 1 }).result).tokens;
      expect(topk1).toEqual(greedy);
      const tiny = (await m.generate([7], { maxTokens: 30, temperature: 1, topP: 1e-6, seed: 9 }).result).tokens;
      expect(tiny).toEqual(greedy); // top-p that keeps one token is greedy too
      const minp = (await m.generate([7], { maxTokens: 30, temperature: 1, minP: 1, seed: 9 }).result).tokens;
      expect(minp).toEqual(greedy);
      const r = await m.generate([7], { maxTokens: 60, presencePenalty: 2, frequencyPenalty: 2 }).result;
      // Logits of this model span a few units: a penalty of 2 per use keeps greedy output varied.
      expect(new Set(r.tokens).size).toBeGreaterThan(new Set(greedy).size / 2);
    });
  });
});

describe('argument checks', () => {
  it('bad arguments throw TypeError / RangeError; long prompts throw context_length', async () => {
    await withModel({ contextLength: 32 }, async (m) => {
      expect(() => m.generate('hello' as unknown as number[])).toThrow(TypeError);
      expect(() => m.generate([])).toThrow(RangeError);
      expect(() => m.generate([1.5])).toThrow(TypeError);
      expect(() => m.generate([128])).toThrow(RangeError);
      expect(() => m.generate([1], { maxTokens: 0 })).toThrow(RangeError);
      expect(() => m.generate([1], { topP: 2 })).toThrow(RangeError);
      expect(() => m.generate([1], { temperature: 'hot' as unknown as number })).toThrow(TypeError);
      let error: unknown;
      try {
        m.generate(new Array(33).fill(1));
      } catch (e) {
        error = e;
      }
      expect(error).toBeInstanceOf(LlmEngineError);
      expect((error as LlmEngineError).code).toBe('context_length');
      // A prompt that fills the context yields one token and stops on length.
      const r = await m.generate(new Array(32).fill(1), { maxTokens: 10 }).result;
      expect(r.finishReason === 'length' || r.finishReason === 'stop').toBe(true);
      expect(r.completionTokens).toBeLessThanOrEqual(1);
    });
    await expect(loadModel(file, { threads: -1 })).rejects.toThrow(RangeError);
  });

  it('after unload, calls fail with code unloaded and pending generations end cancelled', async () => {
    const m = await loadModel(file, { threads: 1 });
    const gen = m.generate([1], { maxTokens: 10000 });
    await gen.next();
    await m.unload();
    expect((await gen.result).finishReason).toBe('cancelled');
    expect(() => m.generate([1])).toThrow(expect.objectContaining({ code: 'unloaded' }) as Error);
    await m.unload(); // idempotent
  });
});
