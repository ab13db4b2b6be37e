// n > 1 through the real host: several choices for one prompt, each with its own random stream
// (seed + i), reproducible with a seed, streamed with each chunk's index, counted once for the
// prompt and for every choice's tokens; the prompt is computed once (the other choices find its
// blocks in the prefix cache); a response format holds every choice.
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TestHost } from './helpers/in-process-host.js';
import { libraryHost } from './helpers/library.js';
import { writeTinyChatModel } from './helpers/llm-models.js';

let host: TestHost;
let token: string;

beforeAll(async () => {
  ({ host, token } = await libraryHost((dir) => ({ tiny: writeTinyChatModel(dir, 'tiny-chat', { nCtx: 1024 }) }), { LLM_CONTEXT_LENGTH: '1024', LLM_MAX_RUNNING_SEQUENCES: '8' }));
}, 60_000);
afterAll(async () => {
  await host?.close();
});

const system = 'You are a helpful assistant. Answer briefly and kindly, in plain words. '.repeat(3);
const post = (route: string, body: Record<string, unknown>) =>
  fetch(`${host.url}/v1/${route}`, {
    method: 'POST',
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'tiny', ...body }),
  });

interface Whole {
  choices: Array<{ index: number; message?: { content: string }; text?: string; finish_reason: string }>;
  usage: { prompt_tokens: number; completion_tokens: number; prompt_tokens_details: { cached_tokens: number } };
}

describe('n choices', () => {
  const chat = (extra: Record<string, unknown>) => ({ messages: [{ role: 'system', content: system }, { role: 'user', content: 'Tell me a story' }], max_tokens: 12, ...extra });

  it('gives n choices with their own streams, reproducible with a seed, counted once for the prompt', async () => {
    const first = (await (await post('chat/completions', chat({ n: 4, temperature: 1, seed: 77 }))).json()) as Whole;
    expect(first.choices.map((c) => c.index)).toEqual([0, 1, 2, 3]);
    const texts = first.choices.map((c) => c.message!.content);
    expect(new Set(texts).size).toBeGreaterThan(1);
    const again = (await (await post('chat/completions', chat({ n: 4, temperature: 1, seed: 77 }))).json()) as Whole;
    expect(again.choices.map((c) => c.message!.content)).toEqual(texts);
    // Choice i is what a single request with seed + i gives.
    for (const i of [0, 2]) {
      const single = (await (await post('chat/completions', chat({ temperature: 1, seed: 77 + i }))).json()) as Whole;
      expect(single.choices[0]!.message!.content).toBe(texts[i]);
    }
    const single = (await (await post('chat/completions', chat({ temperature: 1, seed: 77 }))).json()) as Whole;
    expect(first.usage.prompt_tokens).toBe(single.usage.prompt_tokens);
    expect(first.usage.completion_tokens).toBe(first.choices.length * 12);
  });

  it('computes the prompt once: the other choices find its full blocks in the prefix cache', async () => {
    const salt = `fresh-${Date.now()}`;
    const res = (await (await post('chat/completions', chat({ n: 3, temperature: 1, seed: 5, cache_salt: salt }))).json()) as Whole;
    expect(res.usage.prompt_tokens_details.cached_tokens).toBe(0); // the first choice computed it
    const metrics = await (await fetch(`${host.url}/metrics`, { headers: { authorization: `Bearer ${token}` } })).text();
    const hits = Number(/^platform:prefix_cache_hits\{model="tiny"\} (\d+)/m.exec(metrics)?.[1]);
    // Two siblings, each reusing every full block of the prompt.
    expect(hits).toBeGreaterThanOrEqual(2 * Math.floor((res.usage.prompt_tokens - 1) / 16) * 16);
  });

  it('streams every choice with its index, assembling to the whole answer', async () => {
    const body = chat({ n: 3, temperature: 1, seed: 21, stream: true, stream_options: { include_usage: true } });
    const events = (await (await post('chat/completions', body)).text()).split('\n\n').filter((e) => e.startsWith('data: {'));
    const texts = ['', '', ''];
    const finishes: Array<string | null> = [null, null, null];
    let usage: Whole['usage'] | null = null;
    for (const e of events) {
      const chunk = JSON.parse(e.slice(6)) as { choices: Array<{ index: number; delta: { content?: string }; finish_reason: string | null }>; usage: Whole['usage'] | null };
      if (chunk.usage) usage = chunk.usage;
      for (const c of chunk.choices) {
        texts[c.index] += c.delta.content ?? '';
        finishes[c.index] = c.finish_reason ?? finishes[c.index]!;
      }
    }
    const whole = (await (await post('chat/completions', { ...body, stream: false, stream_options: undefined })).json()) as Whole;
    expect(texts).toEqual(whole.choices.map((c) => c.message!.content));
    expect(finishes).toEqual(whole.choices.map((c) => c.finish_reason));
    expect(usage!.completion_tokens).toBe(whole.usage.completion_tokens);
  });

  it('works on legacy completions, with a response format, and through the openai SDK', async () => {
    const text = (await (await post('completions', { prompt: 'Once upon a time', n: 2, max_tokens: 6, temperature: 1, seed: 3 })).json()) as Whole;
    expect(text.choices.map((c) => c.index)).toEqual([0, 1]);
    expect(text.choices.every((c) => typeof c.text === 'string')).toBe(true);
    const schema = { type: 'object', properties: { ok: { type: 'boolean' }, n: { type: 'integer', minimum: 0, maximum: 99 } }, required: ['ok', 'n'], additionalProperties: false };
    const json = (await (await post('chat/completions', chat({ n: 4, temperature: 1, seed: 8, max_tokens: 60, response_format: { type: 'json_schema', json_schema: { name: 'x', schema } } }))).json()) as Whole;
    for (const c of json.choices) {
      expect(c.finish_reason).toBe('stop');
      expect(Object.keys(JSON.parse(c.message!.content) as object)).toEqual(['ok', 'n']);
    }
    const client = new OpenAI({ baseURL: `${host.url}/v1`, apiKey: token, maxRetries: 0 });
    const sdk = await client.chat.completions.create({ model: 'tiny', messages: [{ role: 'user', content: 'hi' }], n: 2, max_tokens: 4, temperature: 1, seed: 1 });
    expect(sdk.choices).toHaveLength(2);
  });
});
