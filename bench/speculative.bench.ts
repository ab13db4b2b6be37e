// Speculative decoding by prompt lookup (--speculative ngram:k) against plain decoding of the same
// engine (the peer: the same requests without drafts), greedy, on two workloads:
//   - repeat: the prompt holds a text and asks for it again (a quote, an edit, a summary that
//     copies), so the answer repeats its input and drafts taken from the prompt are often right;
//   - fresh: the answer is new text; drafts are proposed wherever its last tokens occurred before,
//     and are mostly wrong, so this measures what verifying them costs.
// Models:
//   - stories260K.gguf (../shared/fixtures, a trained model): it retells a story it is given, and
//     writes new stories from other openings. Skipped without the fixtures.
//   - the TinyLlama-1.1B-shaped Q4_K model of llm.bench.ts (random weights), whose steps are bound
//     by reading 600 MB of weights: its "markov" variant (llm-model.ts) writes the same text again
//     from a token it has seen, so on the repeat workload every draft is right (the most drafting
//     can give at this shape); the random one never copies (fresh: drafts are rarely proposed).
// Drafting runs twice: with the adaptive draft length (the default: as many tokens as the engine's
// measured step costs repay) and drafting every proposal at full length (speculativeAdaptive:
// false). Each engine serves the same requests, `concurrency` at a time; runs alternate (plain,
// adaptive, every proposal, plain, ...) and the median of the rounds counts. The table counts the answers identical
// token for token to plain decoding's, beside how many of plain decoding's own answers repeat from
// one round to the next: with several sequences in a step, which kernel a matrix product takes
// depends on the step's token count, and on a random-weight model with near-tied logits that alone
// can change a greedy token (test/llm-speculative.test.ts checks identity where no ties are near).
//
// Environment (defaults in brackets):
//   SPEC_BENCH_K            draft tokens per step [4]
//   SPEC_BENCH_ROUNDS       rounds per workload, the median counts [3]
//   SPEC_BENCH_TOKENS       tokens per answer [128]
//   LLM_BENCH_THREADS       engine threads [PLATFORM_THREADS or all cores]
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { loadModel, type LlmModel } from '../src/llm/engine/index.js';
import { ensureBenchModel } from './llm-model.js';
import { printTable } from './support/markdown-table.js';

const envInt = (name: string, def: number) => {
  const v = Number(process.env[name] ?? def);
  if (!Number.isInteger(v) || v < 1) throw new Error(`${name} must be a positive integer`);
  return v;
};
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const STORIES = path.resolve(process.env['PLATFORM_FIXTURES_DIR'] ?? '../shared/fixtures', 'stories260K.gguf');

/** Deterministic token ids in [lo, lo + span), seeded. */
function tokens(seed: number, n: number, lo = 100, span = 31000): number[] {
  let x = seed >>> 0;
  return Array.from({ length: n }, () => {
    x = (Math.imul(x, 1664525) + 1013904223) >>> 0;
    return lo + (x % span);
  });
}

async function answer(model: LlmModel, prompt: number[], maxTokens: number): Promise<number[]> {
  const gen = model.generate(prompt, { maxTokens, temperature: 0 });
  const out: number[] = [];
  for await (const t of gen) out.push(t.token);
  await gen.result;
  return out;
}

/** All prompts, `concurrency` at a time: wall ms, tokens generated, the answers. */
async function serve(model: LlmModel, prompts: number[][], concurrency: number, maxTokens: number) {
  const started = performance.now();
  const answers: number[][] = [];
  for (let i = 0; i < prompts.length; i += concurrency) {
    answers.push(...(await Promise.all(prompts.slice(i, i + concurrency).map((p) => answer(model, p, maxTokens)))));
  }
  const wallMs = performance.now() - started;
  return { wallMs, generated: answers.reduce((n, a) => n + a.length, 0), answers };
}

interface Row extends Record<string, string | number> {}

/** Plain decoding against the adaptive draft length (the default) and drafting every proposal at full length. */
async function compare(name: string, plain: LlmModel, adaptive: LlmModel, always: LlmModel, prompts: number[][], concurrency: number, maxTokens: number, rounds: number): Promise<Row> {
  const ms = { plain: [] as number[], adaptive: [] as number[], always: [] as number[] };
  const before = { adaptive: adaptive.stats(), always: always.stats() };
  let generated = 0;
  let same = 0;
  let repeated = 0;
  let previous: number[][] | null = null;
  const equal = (x: number[], y: number[]) => x.length === y.length && x.every((t, i) => t === y[i]);
  for (let r = 0; r < rounds; r++) {
    const a = await serve(plain, prompts, concurrency, maxTokens);
    const b = await serve(adaptive, prompts, concurrency, maxTokens);
    const c = await serve(always, prompts, concurrency, maxTokens);
    same += a.answers.filter((x, i) => equal(x, b.answers[i]!) && equal(x, c.answers[i]!)).length;
    if (previous) repeated += a.answers.filter((x, i) => equal(x, previous![i]!)).length;
    previous = a.answers;
    ms.plain.push(a.wallMs);
    ms.adaptive.push(b.wallMs);
    ms.always.push(c.wallMs);
    generated = a.generated;
  }
  const rate = (xs: number[]) => (generated * 1000) / median(xs);
  const counts = (m: LlmModel, s0: { draftTokens: number; acceptedTokens: number }) => {
    const s = m.stats();
    return { drafted: s.draftTokens - s0.draftTokens, accepted: s.acceptedTokens - s0.acceptedTokens };
  };
  const ad = counts(adaptive, before.adaptive);
  const al = counts(always, before.always);
  return {
    workload: name,
    concurrency,
    'plain tok/s': rate(ms.plain),
    'adaptive tok/s': rate(ms.adaptive),
    'adaptive ratio': rate(ms.adaptive) / rate(ms.plain),
    'adaptive drafted/accepted': `${Math.round(ad.drafted / rounds)}/${Math.round(ad.accepted / rounds)}`,
    'every proposal tok/s': rate(ms.always),
    'every proposal ratio': rate(ms.always) / rate(ms.plain),
    'every proposal drafted/accepted': `${Math.round(al.drafted / rounds)}/${Math.round(al.accepted / rounds)}`,
    'identical to plain': `${same}/${rounds * prompts.length}`,
    'plain repeats itself': rounds > 1 ? `${repeated}/${(rounds - 1) * prompts.length}` : '-',
  };
}

export default async function speculativeBench(): Promise<void> {
  const k = envInt('SPEC_BENCH_K', 4);
  const rounds = envInt('SPEC_BENCH_ROUNDS', 3);
  const maxTokens = envInt('SPEC_BENCH_TOKENS', 128);
  const threads = process.env.LLM_BENCH_THREADS ? Number(process.env.LLM_BENCH_THREADS) : undefined;
  const options = { maxRunningSequences: 4, ...(threads ? { threads } : {}) };
  const rows: Row[] = [];

  if (fs.existsSync(STORIES)) {
    const plain = await loadModel(STORIES, options);
    const drafting = await loadModel(STORIES, { ...options, speculativeTokens: k });
    const always = await loadModel(STORIES, { ...options, speculativeTokens: k, speculativeAdaptive: false });
    try {
      // Openings: BOS and three tokens of the vocabulary's words; each model writes its own story.
      const openings = Array.from({ length: 8 }, (_, i) => [1, ...tokens(40 + i, 3, 300, 200)]);
      const stories = await Promise.all(openings.map((o) => answer(plain, o, 150)));
      // Repeat: the story, then BOS and its first ten tokens: the model tells it again.
      const repeat = stories.map((s, i) => [...openings[i]!, ...s, 1, ...openings[i]!.slice(1), ...s.slice(0, 10)]);
      for (const c of [1, 4]) {
        rows.push({ model: 'stories260K', ...(await compare('repeat', plain, drafting, always, repeat, c, maxTokens, rounds)) });
        rows.push({ model: 'stories260K', ...(await compare('fresh', plain, drafting, always, openings, c, maxTokens, rounds)) });
      }
    } finally {
      await Promise.all([plain.unload(), drafting.unload(), always.unload()]);
    }
  } else {
    console.log(`${STORIES} not found: the trained model's rows are skipped`);
  }

  // TinyLlama shape: the markov variant copies its input (llm-model.ts), the random one never does.
  for (const variant of ['markov', 'random'] as const) {
    const file = await ensureBenchModel('Q4_K', (s) => console.log(s), variant);
    const plain = await loadModel(file, { ...options, contextLength: 1024 });
    const drafting = await loadModel(file, { ...options, contextLength: 1024, speculativeTokens: k });
    const always = await loadModel(file, { ...options, contextLength: 1024, speculativeTokens: k, speculativeAdaptive: false });
    try {
      const tinyTokens = Math.min(maxTokens, 48);
      const starts = Array.from({ length: 4 }, (_, i) => tokens(70 + i, 1));
      let prompts: number[][];
      let name: string;
      if (variant === 'markov') {
        // The text the model writes from a start token, then the start token again: it writes the same text.
        const texts = await Promise.all(starts.map((x) => answer(plain, [1, ...x], 120)));
        prompts = texts.map((t, i) => [1, ...starts[i]!, ...t, 13, ...starts[i]!]);
        name = 'repeat';
      } else {
        prompts = starts.map((x, i) => [1, ...x, ...tokens(90 + i, 120)]);
        name = 'fresh';
      }
      for (const c of [1, 4]) rows.push({ model: `TinyLlama-shaped Q4_K, ${variant}`, ...(await compare(name, plain, drafting, always, prompts, c, tinyTokens, rounds)) });
    } finally {
      await Promise.all([plain.unload(), drafting.unload(), always.unload()]);
    }
  }

  console.log(`prompt-lookup speculative decoding, k = ${k}, greedy, ${maxTokens}-token answers (48 on the TinyLlama shape), median of ${rounds} rounds, ${threads ?? 'all'} threads`);
  printTable(rows, (v) => (Number.isInteger(v) ? String(v) : v.toFixed(2)));
  console.log(`load average ${os.loadavg().map((x) => x.toFixed(2)).join(' ')}`);
}

if (import.meta.url === `file://${process.argv[1]}`) await speculativeBench();
