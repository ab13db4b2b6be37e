// Automatic prefix caching against the same engine with it off (the peer: what every request
// cost before), on the TinyLlama-1.1B-shaped Q4_K model of llm.bench.ts (random weights):
//   - time to first token of a chat request behind a 2,000-token system prompt that an earlier
//     request left in the cache, against the same request with the cache off (goal: >= 10x);
//   - a multi-turn chat workload (each request is the conversation so far plus one new turn,
//     several conversations at once): wall time and aggregate tokens/s, cache on and off.
// Both engines load the same file (its pages are shared), with the same options; runs alternate
// (off, on, off, on, ...) so that a change in machine load hits both sides of a ratio alike.
//
// Environment (defaults in brackets):
//   PREFIX_BENCH_SYSTEM_TOKENS    the long system prompt [2000]
//   PREFIX_BENCH_ROUNDS           TTFT rounds, the median counts [3]
//   PREFIX_BENCH_CONVERSATIONS    concurrent conversations [4]
//   PREFIX_BENCH_TURNS            turns per conversation [6]
//   LLM_BENCH_THREADS             engine threads [PLATFORM_THREADS or all cores]
import os from 'node:os';
import { loadModel, type LlmModel } from '../src/llm/engine/index.js';
import { ensureBenchModel } from './llm-model.js';
import { printTable } from './support/markdown-table.js';

const envInt = (name: string, def: number) => {
  const v = Number(process.env[name] ?? def);
  if (!Number.isInteger(v) || v < 1) throw new Error(`${name} must be a positive integer`);
  return v;
};
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

/** Deterministic token ids (no BOS/EOS), seeded. */
function tokens(seed: number, n: number): number[] {
  let x = seed >>> 0;
  return Array.from({ length: n }, () => {
    x = (Math.imul(x, 1664525) + 1013904223) >>> 0;
    return 100 + (x % 31000);
  });
}

async function firstToken(model: LlmModel, prompt: number[]): Promise<{ ttftMs: number; cached: number }> {
  const started = performance.now();
  const gen = model.generate(prompt, { maxTokens: 1, temperature: 0 });
  let ttft = 0;
  for await (const _ of gen) ttft = performance.now() - started;
  return { ttftMs: ttft, cached: (await gen.result).cachedTokens };
}

/** Conversations of `turns` requests each, all at once: wall ms, prompt and generated tokens, cached tokens. */
async function multiTurn(model: LlmModel, conversations: number, turns: number, seed: number) {
  const started = performance.now();
  let promptTokens = 0;
  let generated = 0;
  let cached = 0;
  await Promise.all(
    Array.from({ length: conversations }, async (_, c) => {
      let history = [1, ...tokens(seed + c, 300)];
      for (let t = 0; t < turns; t++) {
        history = [...history, ...tokens(seed * 100 + c * 10 + t, 40)];
        const gen = model.generate(history, { maxTokens: 16, temperature: 0 });
        const answer: number[] = [];
        for await (const tok of gen) answer.push(tok.token);
        const r = await gen.result;
        promptTokens += history.length;
        generated += answer.length;
        cached += r.cachedTokens;
        history = [...history, ...answer];
      }
    }),
  );
  return { wallMs: performance.now() - started, promptTokens, generated, cached };
}

export default async function prefixCacheBench(): Promise<void> {
  const systemTokens = envInt('PREFIX_BENCH_SYSTEM_TOKENS', 2000);
  const rounds = envInt('PREFIX_BENCH_ROUNDS', 3);
  const conversations = envInt('PREFIX_BENCH_CONVERSATIONS', 4);
  const turns = envInt('PREFIX_BENCH_TURNS', 6);
  const threads = process.env.LLM_BENCH_THREADS ? Number(process.env.LLM_BENCH_THREADS) : undefined;
  const file = await ensureBenchModel('Q4_K', (s) => console.log(s));
  const options = { contextLength: systemTokens + 512, maxRunningSequences: Math.max(4, conversations), maxBatchTokens: 512, ...(threads ? { threads } : {}) };
  const on = await loadModel(file, { ...options, prefixCache: true });
  const off = await loadModel(file, { ...options, prefixCache: false });
  try {
    const system = [1, ...tokens(1, systemTokens)];
    await firstToken(on, [...system, ...tokens(2, 20)]); // leaves the system prompt in the cache
    const ttft = { on: [] as number[], off: [] as number[] };
    let cachedTokens = 0;
    for (let r = 0; r < rounds; r++) {
      const question = [...system, ...tokens(10 + r, 20)];
      ttft.off.push((await firstToken(off, question)).ttftMs);
      const hit = await firstToken(on, question);
      ttft.on.push(hit.ttftMs);
      cachedTokens = hit.cached;
    }
    console.log(`time to first token behind a ${systemTokens}-token system prompt (+20 new tokens), ${rounds} rounds, ${threads ?? 'all'} threads`);
    printTable(
      [
        { cache: 'off', 'TTFT ms (median)': median(ttft.off), rounds: ttft.off.map((x) => x.toFixed(0)).join(', '), 'cached tokens': 0 },
        { cache: 'on', 'TTFT ms (median)': median(ttft.on), rounds: ttft.on.map((x) => x.toFixed(0)).join(', '), 'cached tokens': cachedTokens },
      ],
      (v) => v.toFixed(1),
    );
    console.log(`speed-up: ${(median(ttft.off) / median(ttft.on)).toFixed(1)}x`);

    const offRun = await multiTurn(off, conversations, turns, 7);
    const onRun = await multiTurn(on, conversations, turns, 7);
    console.log(`\nmulti-turn chat: ${conversations} conversations x ${turns} turns (300-token system prompt, 40-token turns, 16-token answers), greedy`);
    const row = (cache: string, r: typeof onRun) => ({
      cache,
      'wall s': r.wallMs / 1000,
      'requests/s': (conversations * turns * 1000) / r.wallMs,
      'prompt+generated tok/s': ((r.promptTokens + r.generated) * 1000) / r.wallMs,
      'prompt tokens': r.promptTokens,
      'cached tokens': r.cached,
    });
    printTable([row('off', offRun), row('on', onRun)], (v) => (Number.isInteger(v) ? String(v) : v.toFixed(2)));
    console.log(`throughput ratio (on / off): ${(offRun.wallMs / onRun.wallMs).toFixed(2)}x`);
    console.log(`load average ${os.loadavg().map((x) => x.toFixed(2)).join(' ')}`);
  } finally {
    await on.unload();
    await off.unload();
  }
}

if (import.meta.url === `file://${process.argv[1]}`) await prefixCacheBench();
