// Automatic prefix caching (native/llm/kv_cache.h): a prompt that starts with full blocks the
// cache holds skips their prefill, and the answer is the same. Checked on two engines over one
// model file, the cache on and off, under a workload of shared and unshared prompts, concurrency
// and eviction (a KV budget far smaller than the workload); salts never share; and through the
// host: usage.prompt_tokens_details.cached_tokens, the Prometheus counters, and two API keys that
// never share a prefix.
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadModel, type LlmModel } from '../src/llm/engine/index.js';
import { seededRandom } from './helpers/gguf-writer.js';
import { tokenFor, type TestHost } from './helpers/in-process-host.js';
import { libraryHost } from './helpers/library.js';
import { writeTinyChatModel } from './helpers/llm-models.js';
import { tempDir } from './helpers/paths.js';

const BLOCK = 16;
let file: string;
let cached: LlmModel;
let uncached: LlmModel;

beforeAll(async () => {
  const dir = tempDir();
  file = path.join(dir, writeTinyChatModel(dir, 'tiny', { nCtx: 1024 }));
  // 48 blocks of 16 positions: the workload below needs several times that, so blocks are evicted.
  const options = { contextLength: 1024, maxRunningSequences: 4, kvBlockSize: BLOCK, kvCacheBytes: 48 * 2 * 2 * BLOCK * 32 * 4 };
  cached = await loadModel(file, { ...options, prefixCache: true });
  uncached = await loadModel(file, { ...options, prefixCache: false });
});
afterAll(async () => {
  await cached?.unload();
  await uncached?.unload();
});

async function greedy(model: LlmModel, prompt: number[], options: { maxTokens?: number; cacheSalt?: string } = {}) {
  const gen = model.generate(prompt, { maxTokens: options.maxTokens ?? 12, temperature: 0, ...(options.cacheSalt !== undefined ? { cacheSalt: options.cacheSalt } : {}) });
  const tokens: number[] = [];
  for await (const t of gen) tokens.push(t.token);
  const result = await gen.result;
  return { tokens, cachedTokens: result.cachedTokens };
}

/** Token ids of the tiny vocabulary's word pieces and bytes (never BOS or EOS). */
const draw = (random: () => number, n: number) => Array.from({ length: n }, () => 3 + Math.floor(random() * 290));

describe('the prefix cache in the engine', () => {
  it('greedy outputs are identical with the cache on and off, over shared and unshared prompts, concurrency and eviction', async () => {
    const { uniform } = seededRandom(2026);
    const systems = [draw(uniform, 70), draw(uniform, 40), draw(uniform, 100)];
    const prompts: number[][] = [];
    for (let i = 0; i < 48; i++) {
      const kind = i % 4;
      if (kind === 3) prompts.push([1, ...draw(uniform, 20 + Math.floor(uniform() * 60))]); // unshared
      else prompts.push([1, ...systems[kind]!, ...draw(uniform, 5 + Math.floor(uniform() * 30))]);
    }
    // A conversation growing by one turn: each request is the previous one, its answer and a new message.
    let conversation = [1, ...systems[0]!];
    const turns: number[][] = [];
    for (let t = 0; t < 6; t++) {
      conversation = [...conversation, ...draw(uniform, 8)];
      turns.push(conversation);
      const answer = await greedy(cached, conversation, { maxTokens: 10 });
      conversation = [...conversation, ...answer.tokens];
    }
    let hits = 0;
    for (let i = 0; i < prompts.length; i += 6) {
      const batch = prompts.slice(i, i + 6);
      const [on, off] = await Promise.all([Promise.all(batch.map((p) => greedy(cached, p))), Promise.all(batch.map((p) => greedy(uncached, p)))]);
      for (let j = 0; j < batch.length; j++) {
        expect(on[j]!.tokens, `prompt ${i + j}`).toEqual(off[j]!.tokens);
        expect(off[j]!.cachedTokens).toBe(0);
        expect(on[j]!.cachedTokens % BLOCK).toBe(0);
        expect(on[j]!.cachedTokens).toBeLessThan(batch[j]!.length);
        hits += on[j]!.cachedTokens > 0 ? 1 : 0;
      }
    }
    for (const prompt of turns) {
      const [on, off] = await Promise.all([greedy(cached, prompt, { maxTokens: 10 }), greedy(uncached, prompt, { maxTokens: 10 })]);
      expect(on.tokens).toEqual(off.tokens);
      expect(on.cachedTokens).toBeGreaterThanOrEqual(Math.floor((prompt.length - 9) / BLOCK) * BLOCK - BLOCK);
    }
    expect(hits).toBeGreaterThan(20);
    const stats = cached.stats();
    expect(stats.prefixCacheHits).toBeGreaterThan(0);
    expect(stats.prefixCacheQueries).toBeGreaterThan(stats.prefixCacheHits);
    expect(stats.kvBlocksCached).toBeGreaterThan(0);
    expect(stats.kvBlocksCached + stats.kvBlocksUsed).toBeLessThanOrEqual(stats.kvBlocksTotal);
    expect(uncached.stats()).toMatchObject({ prefixCacheHits: 0, kvBlocksCached: 0 });
    // Every block a finished sequence held is back: cached (published) or free, none pinned.
    expect(stats).toMatchObject({ running: 0, kvBlocksUsed: 0, kvBlocksReserved: 0 });
    expect(uncached.stats()).toMatchObject({ kvBlocksUsed: 0, kvBlocksReserved: 0 });
  });

  it('a prompt identical to a cached one still computes its last token, and a longer one reuses every full block', async () => {
    const { uniform } = seededRandom(7);
    const prompt = [1, ...draw(uniform, 4 * BLOCK - 1)]; // exactly 4 blocks
    const first = await greedy(cached, prompt);
    const again = await greedy(cached, prompt);
    expect(again.tokens).toEqual(first.tokens);
    expect(again.cachedTokens).toBe(3 * BLOCK); // never the whole prompt
    const longer = await greedy(cached, [...prompt, ...draw(uniform, 5)]);
    expect(longer.cachedTokens).toBe(4 * BLOCK);
  });

  it('different salts never share a block; the same salt does', async () => {
    const { uniform } = seededRandom(11);
    const prompt = [1, ...draw(uniform, 5 * BLOCK)];
    expect((await greedy(cached, prompt, { cacheSalt: 'tenant-a' })).cachedTokens).toBe(0);
    expect((await greedy(cached, prompt, { cacheSalt: 'tenant-b' })).cachedTokens).toBe(0);
    expect((await greedy(cached, prompt)).cachedTokens).toBe(0);
    const a = await greedy(cached, prompt, { cacheSalt: 'tenant-a' });
    expect(a.cachedTokens).toBe(5 * BLOCK);
  });

  it('PLATFORM_PREFIX_CACHE=0 turns it off', async () => {
    process.env.PLATFORM_PREFIX_CACHE = '0';
    const off = await loadModel(file, { contextLength: 256 });
    delete process.env.PLATFORM_PREFIX_CACHE;
    try {
      const prompt = [1, ...draw(seededRandom(3).uniform, 3 * BLOCK)];
      await greedy(off, prompt);
      expect((await greedy(off, prompt)).cachedTokens).toBe(0);
      expect(off.stats().prefixCacheQueries).toBe(0);
    } finally {
      await off.unload();
    }
  });
});

describe('the prefix cache through the host', () => {
  let host: TestHost;
  let token: string;

  beforeAll(async () => {
    ({ host, token } = await libraryHost((dir) => ({ tiny: writeTinyChatModel(dir, 'tiny-chat', { nCtx: 1024 }) }), { LLM_CONTEXT_LENGTH: '1024' }));
  }, 60_000);
  afterAll(async () => {
    await host?.close();
  });

  const system = 'You are a careful assistant who answers in one short sentence. '.repeat(6);
  const ask = async (bearer: string, content: string, extra: Record<string, unknown> = {}) => {
    const res = await fetch(`${host.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${bearer}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'tiny', messages: [{ role: 'system', content: system }, { role: 'user', content }], max_tokens: 4, temperature: 0, ...extra }),
    });
    expect(res.status).toBe(200);
    return (await res.json()) as { choices: Array<{ message: { content: string } }>; usage: { prompt_tokens: number; prompt_tokens_details: { cached_tokens: number } } };
  };

  it('reports cached prompt tokens in usage, counts them for Prometheus, and never shares between two keys', async () => {
    const first = await ask(token, 'Hello');
    expect(first.usage.prompt_tokens_details.cached_tokens).toBe(0);
    const second = await ask(token, 'Hello again');
    expect(second.usage.prompt_tokens_details.cached_tokens).toBeGreaterThan(100);
    expect(second.usage.prompt_tokens_details.cached_tokens).toBeLessThan(second.usage.prompt_tokens);
    // Another key is another tenant of the cache.
    const other = await tokenFor(host, 'second');
    expect((await ask(other.token, 'Hello again')).usage.prompt_tokens_details.cached_tokens).toBe(0);
    // cache_salt separates requests of one key.
    expect((await ask(token, 'Hello again', { cache_salt: 'project-x' })).usage.prompt_tokens_details.cached_tokens).toBe(0);
    // Streaming usage carries it too.
    const res = await fetch(`${host.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'tiny', messages: [{ role: 'system', content: system }, { role: 'user', content: 'Hi' }], max_tokens: 3, stream: true, stream_options: { include_usage: true } }),
    });
    const events = (await res.text()).split('\n\n').filter((e) => e.startsWith('data: {'));
    const usage = (JSON.parse(events[events.length - 1]!.slice(6)) as { usage: { prompt_tokens_details: { cached_tokens: number } } }).usage;
    expect(usage.prompt_tokens_details.cached_tokens).toBeGreaterThan(100);
    const metrics = await (await fetch(`${host.url}/metrics`, { headers: { authorization: `Bearer ${token}` } })).text();
    const read = (name: string) => Number(new RegExp(`^${name}\\{model="tiny"\\} (\\d+)`, 'm').exec(metrics)?.[1]);
    expect(read('platform:prefix_cache_hits')).toBeGreaterThan(200);
    expect(read('platform:prefix_cache_queries')).toBeGreaterThan(read('platform:prefix_cache_hits'));
  });

  it('cache_salt must be a short string', async () => {
    const res = await fetch(`${host.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'tiny', messages: [{ role: 'user', content: 'x' }], cache_salt: 5 }),
    });
    expect(res.status).toBe(400);
    expect(((await res.json()) as { error: { param: string } }).error.param).toBe('cache_salt');
  });
});
