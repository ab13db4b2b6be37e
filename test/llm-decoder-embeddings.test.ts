// Decoder models embed by last-token pooling (LlmModel.embed, the engine's embed requests): the
// last position's hidden state after the output norm, L2-normalized, as e5-mistral and gte-Qwen2
// are used. Checked against the f64 reference forward pass (test/helpers/llm-reference.ts) on
// small random llama and qwen2 files, f32 and Q8_0, alone and batched with generations.
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { loadModel, type LlmModel } from '../src/llm/engine/index.js';
import { writeGguf, type TinyModelOptions } from './helpers/gguf-writer.js';
import { plainVocab, referenceHidden, referenceModel, relativeError } from './helpers/llm-reference.js';
import { tempDir } from './helpers/paths.js';

const dir = tempDir();
const loaded: LlmModel[] = [];
afterAll(async () => {
  await Promise.all(loaded.map((m) => m.unload()));
});

async function build(o: TinyModelOptions) {
  const ref = referenceModel(o);
  const file = path.join(dir, `m${loaded.length}.gguf`);
  writeGguf(file, ref.model.spec);
  const model = await loadModel(file, { threads: 2, maxRunningSequences: 4 });
  loaded.push(model);
  return { ...ref, model };
}

function prompt(n: number, vocab: number, seed: number): number[] {
  let s = seed;
  return Array.from({ length: n }, () => (s = (s * 1103515245 + 12345) % 2147483648) % vocab);
}

/** The reference's last position, normalized. */
function expected(ref: Awaited<ReturnType<typeof build>>, tokens: number[]): Float64Array {
  const hidden = referenceHidden(ref.config, ref.weights, tokens);
  const last = hidden[hidden.length - 1]!;
  const norm = Math.sqrt(last.reduce((a, v) => a + v * v, 0));
  return last.map((v) => v / norm);
}

const norm = (v: Float32Array) => Math.sqrt(v.reduce((a, x) => a + x * x, 0));
const small = { vocab: plainVocab(96), nEmbd: 32, nLayer: 2, nHead: 4, nFf: 48 } as const;

describe('last-token pooling of decoder models', () => {
  it('equals the f64 reference on f32 weights (1e-4 relative), llama and qwen2, with unit length', async () => {
    for (const arch of ['llama', 'qwen2'] as const) {
      const ref = await build({ ...small, arch, nHeadKv: 2, seed: arch === 'llama' ? 21 : 22 });
      for (const n of [1, 7, 40]) {
        const tokens = prompt(n, 96, n);
        const got = await ref.model.embed(tokens);
        expect(got.length).toBe(32);
        expect(norm(got)).toBeCloseTo(1, 5);
        expect(relativeError(got, expected(ref, tokens)), `${arch}, ${n} tokens`).toBeLessThan(1e-4);
      }
    }
  });

  it('equals it on Q8_0 weights within 5e-2, the logits tests\' bound for 8-bit activations, and batched with generations as alone', async () => {
    const ref = await build({ ...small, nFf: 64, arch: 'llama', nHeadKv: 2, seed: 23, weightType: 'Q8_0' });
    const prompts = [5, 12, 33, 64].map((n) => prompt(n, 96, 100 + n));
    const alone: Float32Array[] = [];
    for (const p of prompts) alone.push(await ref.model.embed(p));
    prompts.forEach((p, i) => expect(relativeError(alone[i]!, expected(ref, p))).toBeLessThan(5e-2));
    // The same requests at once, beside two generations decoding: each answer is its own.
    const gens = [ref.model.generate(prompt(9, 96, 7), { maxTokens: 20 }), ref.model.generate(prompt(3, 96, 8), { maxTokens: 20 })];
    const together = await Promise.all(prompts.map((p) => ref.model.embed(p)));
    await Promise.all(gens.map((g) => g.result));
    together.forEach((v, i) => expect(relativeError(v, alone[i]!)).toBeLessThan(1e-3));
  });

  it('refuses tokens outside the vocabulary and an empty input by name', async () => {
    const ref = await build({ ...small, arch: 'llama', nHeadKv: 2, seed: 24 });
    await expect(ref.model.embed([3, 96])).rejects.toThrow(/token id 96 is outside the vocabulary \[0, 96\)/);
    await expect(ref.model.embed([])).rejects.toThrow(/at least one token/);
  });
});
