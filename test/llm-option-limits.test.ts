// One owner for every default and range of the LLM engine's options: the addon. It reads the
// options with the table it exports as llmOptionLimits, applies the defaults of the engine's own
// structs, and the TypeScript wrapper neither re-checks nor re-defaults. This pins that:
// - every numeric option of llmLoadModel / llmGenerate is in the table, and the table's defaults
//   are the ones the engine applies (a generation without maxTokens stops at that many tokens);
// - a value just outside each range is refused with the range in the message, one just inside
//   is accepted, through the public loadModel / generate;
// - the environment variables of src/config.ts share the engine's maximum and stay inside its
//   range, so LLM_CONTEXT_LENGTH and friends cannot drift from the engine again.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { LLM_ENV_OPTIONS, loadConfig } from '../src/config.js';
import { loadModel, type LlmModel } from '../src/llm/engine/index.js';
import { loadAddon } from '../src/native/addon.js';
import type { NativeGenerateOptions, NativeLoadOptions, NativeOptionLimit } from '../src/native/surface.js';
import { writeGguf } from './helpers/gguf-writer.js';
import { plainVocab, referenceModel } from './helpers/llm-reference.js';

const limits = loadAddon().llmOptionLimits;
const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'llm-option-limits-'));
const file = path.join(dir, 'model.gguf');
let model: LlmModel;

beforeAll(async () => {
  // eos 2 is out of reach of this vocabulary's draws often enough; the default test allows 'stop'.
  writeGguf(file, referenceModel({ arch: 'llama', vocab: plainVocab(64), nEmbd: 32, nLayer: 1, nHead: 2, nHeadKv: 1, nFf: 48, seed: 11, nCtx: 256 }).model.spec);
  model = await loadModel(file, { threads: 1 });
});
afterAll(async () => {
  await model?.unload();
  fs.rmSync(dir, { recursive: true, force: true });
});

const show = (n: number) => String(n);
const rangeMessage = (fn: string, key: string, l: NativeOptionLimit, got: number) =>
  `${fn}: options.${key} must be ${l.integer ? 'an integer' : 'a number'} in [${show(l.min)}, ${show(l.max)}], got ${show(got)}`;

describe('llmOptionLimits', () => {
  it('lists every numeric option of the surface, frozen', () => {
    const load: Array<keyof NativeLoadOptions> = ['threads', 'contextLength', 'kvCacheBytes', 'maxRunningSequences', 'maxQueued', 'kvBlockSize', 'maxBatchTokens', 'speculativeTokens'];
    const generate: Array<keyof NativeGenerateOptions> = ['maxTokens', 'temperature', 'topK', 'topP', 'minP', 'frequencyPenalty', 'presencePenalty', 'seed', 'logprobs'];
    expect(Object.keys(limits.load).sort()).toEqual([...load].sort());
    expect(Object.keys(limits.generate).sort()).toEqual([...generate].sort());
    expect(Object.isFrozen(limits) && Object.isFrozen(limits.load) && Object.isFrozen(limits.generate.maxTokens)).toBe(true);
    for (const l of [...Object.values(limits.load), ...Object.values(limits.generate)]) {
      expect(l.min).toBeLessThanOrEqual(l.max);
    }
  });

  it('holds the engine defaults the model reports', () => {
    const info = model.info();
    expect(info.maxRunningSequences).toBe(limits.load.maxRunningSequences.default);
    expect(info.maxQueued).toBe(limits.load.maxQueued.default);
    expect(info.kvBlockSize).toBe(limits.load.kvBlockSize.default);
    expect(info.maxBatchTokens).toBe(limits.load.maxBatchTokens.default);
    expect(info.speculativeTokens).toBe(limits.load.speculativeTokens.default);
    expect(info.contextLength).toBe(256); // default 0: the model's training context
    expect(limits.load.contextLength.default).toBe(0);
  });

  it('a generation without maxTokens stops at the default', async () => {
    const r = await model.generate([5, 6, 7]).result;
    if (r.finishReason === 'length') expect(r.completionTokens).toBe(limits.generate.maxTokens.default);
    else expect(r.completionTokens).toBeLessThan(limits.generate.maxTokens.default);
    expect(limits.generate.maxTokens.default).toBe(16);
  });

  for (const key of ['maxTokens', 'topK', 'topP', 'minP', 'temperature', 'frequencyPenalty', 'presencePenalty', 'logprobs'] as const) {
    it(`generate refuses ${key} just outside its range and takes it at the edges`, async () => {
      const l = limits.generate[key];
      const step = l.integer ? 1 : 0.5; // exact in binary, so both sides print it alike
      expect(() => model.generate([1], { [key]: l.min - step })).toThrow(rangeMessage('llmGenerate', key, l, l.min - step));
      expect(() => model.generate([1], { [key]: l.max + step })).toThrow(rangeMessage('llmGenerate', key, l, l.max + step));
      if (l.integer) expect(() => model.generate([1], { [key]: l.min + 0.5 })).toThrow(RangeError);
      for (const edge of [l.min, Math.min(l.max, key === 'maxTokens' ? 2 : l.max)]) {
        const r = await model.generate([1], { maxTokens: 2, [key]: edge }).result;
        expect(['stop', 'length']).toContain(r.finishReason);
      }
    });
  }

  for (const key of ['contextLength', 'maxRunningSequences', 'maxQueued', 'kvBlockSize', 'maxBatchTokens'] as const) {
    it(`loadModel refuses ${key} just outside its range`, async () => {
      const l = limits.load[key];
      await expect(loadModel(file, { [key]: l.max + 1 })).rejects.toThrow(rangeMessage('llmLoadModel', key, l, l.max + 1));
      await expect(loadModel(file, { [key]: l.min - 1 })).rejects.toThrow(rangeMessage('llmLoadModel', key, l, l.min - 1));
    });
  }
});

describe('the LLM environment variables of src/config.ts', () => {
  for (const [key, [variable, min, max]] of Object.entries(LLM_ENV_OPTIONS)) {
    it(`${variable} shares the engine's maximum for ${key} and stays inside its range`, () => {
      const l = limits.load[key as keyof typeof limits.load];
      expect(max).toBe(l.max);
      expect(min).toBeGreaterThanOrEqual(l.min);
      expect(loadConfig({ [variable]: String(max) }).llm[key as keyof typeof LLM_ENV_OPTIONS]).toBe(max);
      expect(() => loadConfig({ [variable]: String(max + 1) })).toThrow(variable);
    });
  }
});
