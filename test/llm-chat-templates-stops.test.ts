// The end-of-turn tokens chat templates imply end an answer on the real engine, though the model
// file names only EOS as its end: a tiny random model is run greedily once, then the same weights
// are saved with one of the generated tokens renamed to Gemma's <end_of_turn> (or Phi-3's
// <|end|>, Llama 3's <|eom_id|>, gpt-oss's <|call|>), which llama.cpp ends generation at by its
// text. The answer must stop right before it, with finish_reason "stop", and not contain it.
// Also the prompt side: a Gemma-style model file carrying Gemma 2's template, loaded as the host
// loads it, renders and tokenizes a conversation with each turn marker one control token and BOS
// once.
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { Completion } from '../src/llm/chat/completion.js';
import type { SamplingParams } from '../src/llm/chat/params.js';
import { LlmInstance } from '../src/llm/library/instance.js';
import { tinyModel, writeGguf, type TinyVocab } from './helpers/gguf-writer.js';
import { spmVocab } from './helpers/llm-models.js';
import { sentencePieceVocab } from './helpers/tiny-vocab.js';
import { chatMessages } from '../src/llm/chat/params.js';
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

describe('the rendered prompt as the host tokenizes it', () => {
  it('Gemma 2: <bos> once, <start_of_turn> / <end_of_turn> as single control tokens, the system text in the first user turn', async () => {
    const template = fs.readFileSync(path.join(__dirname, 'data/chat-templates/google-gemma-2-2b-it.jinja'), 'utf8');
    const vocab = sentencePieceVocab({ chatTemplate: template }, 'gemma');
    const gemma = await load('gemma-chat', vocab);
    const messages = chatMessages([
      { role: 'system', content: 'Be brief.' },
      { role: 'user', content: 'Hello world' },
    ]);
    const rendered = gemma.template.render(messages);
    expect(rendered).toBe('<bos><start_of_turn>user\nBe brief.\nHello world<end_of_turn>\n<start_of_turn>model\n');
    const ids = gemma.chatPrompt(rendered);
    const id = (t: string) => vocab.tokens.indexOf(t);
    expect(ids[0]).toBe(id('<bos>'));
    expect(ids.filter((x) => x === id('<bos>'))).toHaveLength(1);
    expect(ids.filter((x) => x === id('<start_of_turn>'))).toHaveLength(2);
    expect(ids.filter((x) => x === id('<end_of_turn>'))).toHaveLength(1);
    expect(gemma.tokenizer.isEog(id('<end_of_turn>'))).toBe(true);
    // no leading space is added to the text after a turn marker (add_space_prefix is false)
    expect(gemma.tokenizer.decode(ids, { special: true })).toBe(rendered);
  });
});
