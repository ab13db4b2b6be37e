// Token log-probabilities: from the engine, over the whole tiny vocabulary they sum to 1 and equal
// an f64 log-softmax of the model's own logits after the penalties (the reference computed here
// from llmLogits); through the host, chat's `logprobs.content[]` and the legacy
// `{tokens, token_logprobs, top_logprobs, text_offset}`, whole and streamed, and the refusals.
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadModel, type LlmModel } from '../src/llm/engine/index.js';
import type { TestHost } from './helpers/in-process-host.js';
import { libraryHost } from './helpers/library.js';
import { writeTinyChatModel } from './helpers/llm-models.js';
import { tempDir } from './helpers/paths.js';

let model: LlmModel;
let vocab: number;

beforeAll(async () => {
  const dir = tempDir();
  model = await loadModel(path.join(dir, writeTinyChatModel(dir, 'tiny')), { contextLength: 256 });
  vocab = model.info().vocabSize;
});
afterAll(async () => {
  await model?.unload();
});

/** ln softmax in float64 of logits less the OpenAI penalties for the tokens generated so far. */
function reference(logits: Float32Array, generated: number[], frequency: number, presence: number): Float64Array {
  const l = Float64Array.from(logits);
  const counts = new Map<number, number>();
  for (const t of generated) counts.set(t, (counts.get(t) ?? 0) + 1);
  for (const [t, c] of counts) l[t] = Math.fround(l[t]! - Math.fround(Math.fround(frequency * c) + presence));
  const max = Math.max(...l);
  let sum = 0;
  for (const v of l) sum += Math.exp(v - max);
  const lse = max + Math.log(sum);
  return l.map((v) => v - lse);
}

describe('log-probabilities from the engine', () => {
  it('over the whole vocabulary they sum to 1 and equal an f64 log-softmax of the penalized logits', async () => {
    const prompt = [1, 100, 200, 150];
    for (const [frequency, presence, temperature] of [[0, 0, 0], [0.7, 0.4, 1.3]] as const) {
      const gen = model.generate(prompt, { maxTokens: 8, temperature, seed: 4, frequencyPenalty: frequency, presencePenalty: presence, logprobs: vocab });
      const generated: number[] = [];
      for await (const t of gen) {
        expect(t.top).toHaveLength(vocab);
        const total = t.top!.reduce((sum, [, lp]) => sum + Math.exp(lp), 0);
        expect(Math.abs(total - 1)).toBeLessThan(1e-4);
        const ref = reference(await model.logits([...prompt, ...generated]), generated, frequency, presence);
        expect(Math.abs(t.logprob! - ref[t.token]!)).toBeLessThan(1e-4);
        for (const [id, lp] of t.top!.slice(0, 10)) expect(Math.abs(lp - ref[id]!)).toBeLessThan(1e-4);
        // Sorted, most likely first; greedy picks the first.
        for (let i = 1; i < t.top!.length; i++) expect(t.top![i]![1]).toBeLessThanOrEqual(t.top![i - 1]![1]);
        if (temperature === 0 && frequency === 0) expect(t.token).toBe(t.top![0]![0]);
        generated.push(t.token);
      }
    }
  });

  it('without the option, tokens carry none', async () => {
    const gen = model.generate([1, 5, 6], { maxTokens: 3 });
    for await (const t of gen) expect(t.logprob).toBeUndefined();
  });
});

describe('log-probabilities through the host', () => {
  let host: TestHost;
  let token: string;

  beforeAll(async () => {
    ({ host, token } = await libraryHost((dir) => ({ tiny: writeTinyChatModel(dir, 'tiny-chat') }), { LLM_CONTEXT_LENGTH: '256' }));
  }, 60_000);
  afterAll(async () => {
    await host?.close();
  });

  const post = (route: string, body: Record<string, unknown>) =>
    fetch(`${host.url}/v1/${route}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'tiny', ...body }),
    });
  const chunksOf = async (res: Response) =>
    (await res.text())
      .split('\n\n')
      .filter((e) => e.startsWith('data: {'))
      .map((e) => JSON.parse(e.slice(6)) as { choices: Array<Record<string, any>> });

  interface ChatEntry {
    token: string;
    logprob: number;
    bytes: number[];
    top_logprobs: Array<{ token: string; logprob: number; bytes: number[] }>;
  }

  it('chat: one entry per generated token with its top alternatives, whole and streamed alike', async () => {
    const body = { messages: [{ role: 'user', content: 'Hello' }], max_tokens: 10, temperature: 1, seed: 3, logprobs: true, top_logprobs: 5 };
    const res = await post('chat/completions', body);
    expect(res.status).toBe(200);
    const whole = (await res.json()) as { choices: Array<{ message: { content: string }; logprobs: { content: ChatEntry[] } }>; usage: { completion_tokens: number } };
    const entries = whole.choices[0]!.logprobs.content;
    expect(entries).toHaveLength(whole.usage.completion_tokens);
    for (const e of entries) {
      expect(e.top_logprobs).toHaveLength(5);
      expect(e.logprob).toBeLessThanOrEqual(0);
      expect(e.logprob).toBeLessThanOrEqual(e.top_logprobs[0]!.logprob + 1e-6);
      expect(e.token).toBe(new TextDecoder().decode(Uint8Array.from(e.bytes)));
      for (let i = 1; i < 5; i++) expect(e.top_logprobs[i]!.logprob).toBeLessThanOrEqual(e.top_logprobs[i - 1]!.logprob);
    }
    // The tokens' bytes are the answer's text (the unknown token shows as its name here, as nothing there).
    const spoken = entries.filter((e) => e.token !== '<unk>');
    expect(Buffer.concat(spoken.map((e) => Buffer.from(e.bytes))).toString('utf8')).toBe(whole.choices[0]!.message.content);
    const streamed = (await chunksOf(await post('chat/completions', { ...body, stream: true }))).flatMap((c) => (c.choices[0]?.logprobs?.content ?? []) as ChatEntry[]);
    expect(streamed).toEqual(entries);
  });

  it('legacy completions: tokens, token_logprobs, top_logprobs and text_offset', async () => {
    const res = await post('completions', { prompt: 'Once upon a time', max_tokens: 8, temperature: 0, logprobs: 3 });
    const json = (await res.json()) as { choices: Array<{ text: string; logprobs: { tokens: string[]; token_logprobs: number[]; top_logprobs: Array<Record<string, number>>; text_offset: number[] } }> };
    const lp = json.choices[0]!.logprobs;
    expect(lp.tokens).toHaveLength(8);
    expect(lp.token_logprobs).toHaveLength(8);
    expect(lp.top_logprobs.every((t) => Object.keys(t).length <= 3 && Object.keys(t).length >= 1)).toBe(true);
    expect(lp.text_offset[0]).toBe(0);
    for (let i = 1; i < 8; i++) expect(lp.text_offset[i]).toBe(lp.text_offset[i - 1]! + lp.tokens[i - 1]!.length);
    // Greedy: each token is its own most likely alternative.
    for (let i = 0; i < 8; i++) expect(Math.max(...Object.values(lp.top_logprobs[i]!))).toBeCloseTo(lp.token_logprobs[i]!, 5);
  });

  it('bad values are 400s naming the field', async () => {
    const refused = async (body: Record<string, unknown>, param: string) => {
      const res = await post('chat/completions', { messages: [{ role: 'user', content: 'x' }], ...body });
      expect(res.status).toBe(400);
      expect(((await res.json()) as { error: { param: string } }).error.param).toBe(param);
    };
    await refused({ logprobs: true, top_logprobs: 21 }, 'top_logprobs');
    await refused({ top_logprobs: 3 }, 'top_logprobs');
    await refused({ logprobs: 'yes' }, 'logprobs');
    await refused({ logprobs: 4, top_logprobs: 2 }, 'top_logprobs');
  });
});
