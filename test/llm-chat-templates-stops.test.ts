// The end-of-turn tokens chat templates imply end an answer on the real engine, though the model
// file names only EOS as its end: a tiny random model is run greedily once, then the same weights
// are saved with one of the generated tokens renamed to Gemma's <end_of_turn> (or Phi-3's
// <|end|>, Llama 3's <|eom_id|>, gpt-oss's <|call|>), which llama.cpp ends generation at by its
// text. The answer must stop right before it, with finish_reason "stop", and not contain it.
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { Completion } from '../src/llm/chat/completion.js';
import type { SamplingParams } from '../src/llm/chat/params.js';
import { LlmInstance } from '../src/llm/library/instance.js';
import { tinyModel, writeGguf, type TinyVocab } from './helpers/gguf-writer.js';
import { spmVocab } from './helpers/llm-models.js';
import { tempDir } from './helpers/paths.js';

const dir = tempDir();
const loaded: LlmInstance[] = [];
afterAll(async () => {
  for (const i of loaded) await i.unload();
});

const greedy: SamplingParams = {
  maxTokens: 12,
  temperature: 0,
  topP: 1,
  topK: 0,
  minP: 0,
  seed: 1,
  frequencyPenalty: 0,
  presencePenalty: 0,
  stop: [],
  stream: false,
  includeUsage: false,
  cacheSalt: '',
  logprobs: null,
  n: 1,
};

/** The same random weights (seed, shapes) under `vocab`. */
async function load(name: string, vocab: TinyVocab): Promise<LlmInstance> {
  const model = tinyModel({ arch: 'llama', vocab, nEmbd: 64, nLayer: 2, nHead: 4, nHeadKv: 2, nFf: 128, nCtx: 256, seed: 11, name, weightScale: 0.3 });
  const file = path.join(dir, `${name}.gguf`);
  writeGguf(file, model.spec);
  const instance = await LlmInstance.load(file, { instanceType: 'cpu', threads: 1, contextLength: 256 });
  loaded.push(instance);
  return instance;
}

async function run(instance: LlmInstance, prompt: number[]): Promise<{ text: string; finishReason: string; completionTokens: number }> {
  const completion = new Completion(instance, prompt, greedy, performance.now());
  const it = completion.text();
  let text = '';
  for (;;) {
    const r = await it.next();
    if (r.done) return { text, finishReason: r.value.finishReason, completionTokens: r.value.completionTokens };
    text += r.value;
  }
}

describe('end-of-turn tokens end the answer', () => {
  it.each(['<end_of_turn>', '<|end|>', '<|eom_id|>', '<|call|>'])('%s, renamed onto a token the model generates', async (eot) => {
    const base = spmVocab();
    const plain = await load('plain', base);
    const prompt = plain.tokenizer.encode('Once upon a time', { addSpecial: true });
    const free = await run(plain, prompt);
    expect(free.finishReason).toBe('length');
    expect(free.completionTokens).toBe(12);

    // The engine's own tokens, to find one first generated at position >= 2.
    const ids: number[] = [];
    const generation = plain.model.generate(prompt, { maxTokens: 12, temperature: 0 });
    for await (const { token } of generation) ids.push(token);
    const at = ids.findIndex((id, i) => i >= 2 && !ids.slice(0, i).includes(id) && id > 2);
    expect(at, `greedy ids ${ids.join(' ')}`).toBeGreaterThanOrEqual(2);

    const tokens = [...base.tokens];
    tokens[ids[at]!] = eot;
    const types = Int32Array.from(base.tokenTypes!);
    types[ids[at]!] = 3; // control, as converted chat models mark them
    const renamed = await load(`renamed-${at}-${eot.replace(/\W/g, '')}`, { ...base, tokens, tokenTypes: types });
    expect(renamed.tokenizer.isEog(ids[at]!)).toBe(true);
    expect(renamed.tokenizer.eos).toBe(2); // the file's EOS is still </s>

    const stopped = await run(renamed, prompt);
    expect(stopped).toEqual({ text: plain.tokenizer.decode(ids.slice(0, at), { startOfText: false }), finishReason: 'stop', completionTokens: at });
  });
});
