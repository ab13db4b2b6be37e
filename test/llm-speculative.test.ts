// Speculative decoding by prompt lookup (native/llm/prompt_lookup.h): each decoding step also
// feeds up to k tokens drafted from the sequence's own context and keeps the longest prefix that
// sampling agrees with. The output must be the one plain decoding gives, token for token: checked
// on two engines over one model file (drafting on and off), greedy at 1, 2 and 4 concurrent
// sequences (as llama.cpp tests its speculative server), seeded sampling at temperature 1,
// log-probabilities, penalties, max_tokens and context limits, a grammar (which does not draft),
// and the prefix cache fed by drafting steps. The engine's counters must show that drafts were
// accepted, or these tests would prove nothing.
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadModel, type GenerateOptions, type LlmModel } from '../src/llm/engine/index.js';
import { readGguf } from '../src/llm/gguf/index.js';
import { encodeGrammar, GrammarBuilder } from '../src/llm/structured/grammar.js';
import { Tokenizer } from '../src/llm/tokenizer/index.js';
import { seededRandom, tinyModel, writeGguf } from './helpers/gguf-writer.js';
import { apiClient, type Api } from './helpers/api.js';
import type { TestHost } from './helpers/in-process-host.js';
import { libraryHost, waitForDeployment } from './helpers/library.js';
import { spmVocab } from './helpers/llm-models.js';
import { plainVocab, referenceModel } from './helpers/llm-reference.js';
import { tempDir } from './helpers/paths.js';
import { loadTestingAddon } from './helpers/testing-addon.js';

const LOOPY = { arch: 'llama', vocab: spmVocab(), nEmbd: 64, nLayer: 2, nHead: 4, nHeadKv: 2, nFf: 128, nCtx: 512, seed: 3, weightScale: 0.1 } as const;
const STORIES = path.resolve(process.env['PLATFORM_FIXTURES_DIR'] ?? '../shared/fixtures', 'stories260K.gguf');
let file: string;
let plain: LlmModel;
let drafting: LlmModel;
/** Token bytes as the host gives them to the engine, for the grammar test. */
let pieces: Uint8Array[];

beforeAll(async () => {
  const dir = tempDir();
  // Small weights: greedy output drifts into short cycles now and then, so that drafts are both
  // accepted and rejected (at the chat models' larger scale almost no draft is ever right).
  file = path.join(dir, 'tiny.gguf');
  writeGguf(file, tinyModel({ ...LOOPY, name: 'tiny' }).spec);
  const options = { contextLength: 512, maxRunningSequences: 4, threads: 1 };
  plain = await loadModel(file, options);
  // Every proposal at full length, so that these tests see the machinery at work whatever the
  // machine's step timings (the adaptive policy is checked on its own below).
  drafting = await loadModel(file, { ...options, speculativeTokens: 4, speculativeAdaptive: false });
  const tokenizer = Tokenizer.fromGguf(await readGguf(file));
  pieces = tokenizer.vocab.tokens.map((_, id) => (tokenizer.isEog(id) || id === tokenizer.bos ? new Uint8Array(0) : tokenizer.piece(id, true)));
});
afterAll(async () => {
  await plain?.unload();
  await drafting?.unload();
});

interface Answer {
  tokens: number[];
  logprobs: Array<number | undefined>;
  finishReason: string;
  /** Prompt tokens from the prefix cache (not compared by expectSame). */
  cachedTokens?: number;
}

async function run(model: LlmModel, prompt: number[], options: GenerateOptions): Promise<Answer> {
  const gen = model.generate(prompt, options);
  const tokens: number[] = [];
  const logprobs: Array<number | undefined> = [];
  for await (const t of gen) {
    tokens.push(t.token);
    logprobs.push(t.logprob);
  }
  const result = await gen.result;
  return { tokens, logprobs, finishReason: result.finishReason, cachedTokens: result.cachedTokens };
}

/** Token ids of the tiny vocabulary's word pieces and bytes (never BOS or EOS). */
const draw = (random: () => number, n: number) => Array.from({ length: n }, () => 3 + Math.floor(random() * 290));

/** Prompts that repeat themselves (a passage, then the passage again, cut short), as an edit or a quote does. */
function repeatingPrompts(seed: number, n: number): number[][] {
  const { uniform } = seededRandom(seed);
  return Array.from({ length: n }, () => {
    const passage = draw(uniform, 20 + Math.floor(uniform() * 30));
    return [1, ...passage, ...draw(uniform, 3), ...passage.slice(0, 6 + Math.floor(uniform() * 6))];
  });
}

/**
 * The same tokens and finish; log-probabilities within 1e-4 (a verifying step multiplies several
 * rows at once, whose f32 sums may round differently from a one-row step's in the last bits).
 */
function expectSame(got: Answer, want: Answer, what: string) {
  expect(got.tokens, what).toEqual(want.tokens);
  expect(got.finishReason, what).toBe(want.finishReason);
  expect(got.logprobs.length, what).toBe(want.logprobs.length);
  got.logprobs.forEach((lp, k) => (lp === undefined ? expect(want.logprobs[k]).toBeUndefined() : expect(lp, what).toBeCloseTo(want.logprobs[k]!, 4)));
}

/** Runs every prompt on both engines, `concurrency` at a time, and compares each answer. */
async function compare(prompts: number[][], concurrency: number, options: (i: number) => GenerateOptions) {
  const before = drafting.stats();
  for (let i = 0; i < prompts.length; i += concurrency) {
    const batch = prompts.slice(i, i + concurrency);
    const [want, got] = await Promise.all([
      Promise.all(batch.map((p, j) => run(plain, p, options(i + j)))),
      Promise.all(batch.map((p, j) => run(drafting, p, options(i + j)))),
    ]);
    for (let j = 0; j < batch.length; j++) expectSame(got[j]!, want[j]!, `prompt ${i + j}`);
  }
  const after = drafting.stats();
  return { drafted: after.draftTokens - before.draftTokens, accepted: after.acceptedTokens - before.acceptedTokens };
}

describe('speculative decoding by prompt lookup', () => {
  it('reports its setting; a model without it drafts nothing', () => {
    expect(drafting.info().speculativeTokens).toBe(4);
    expect(plain.info().speculativeTokens).toBe(0);
    expect(plain.stats().draftTokens).toBe(0);
  });

  for (const concurrency of [1, 2, 4]) {
    it(`gives greedy output identical to plain decoding at ${concurrency} concurrent sequence(s), accepting drafts`, async () => {
      const prompts = repeatingPrompts(100 + concurrency, 8);
      const { drafted, accepted } = await compare(prompts, concurrency, () => ({ maxTokens: 48, temperature: 0 }));
      expect(drafted).toBeGreaterThan(0);
      expect(accepted).toBeGreaterThan(0);
      expect(accepted).toBeLessThan(drafted); // and some were rejected
    });
  }

  it('gives seeded samples identical to plain decoding (one draw per emitted token)', async () => {
    const prompts = repeatingPrompts(7, 8);
    const { accepted } = await compare(prompts, 4, (i) => ({ maxTokens: 40, temperature: i % 2 === 0 ? 0.3 : 1, topK: 16, seed: 1000 + i }));
    expect(accepted).toBeGreaterThan(0);
  });

  it('keeps log-probabilities, penalties and top-p exactly as plain decoding computes them', async () => {
    const { accepted } = await compare(repeatingPrompts(8, 6), 3, (i) => ({ maxTokens: 48, temperature: 0.3, topP: 0.9, seed: 50 + i, logprobs: 3 }));
    expect(accepted).toBeGreaterThan(0);
    // Penalties count every token emitted before a position, accepted draft tokens included.
    const penalized = await compare(repeatingPrompts(18, 6), 3, (i) => ({ maxTokens: 48, temperature: 0, frequencyPenalty: 0.05, presencePenalty: 0.02, logprobs: i % 2 }));
    expect(penalized.accepted).toBeGreaterThan(0);
  });

  it('stops at max_tokens and at the context limit where plain decoding does', async () => {
    const prompts = repeatingPrompts(9, 6);
    for (const maxTokens of [1, 2, 3, 5, 9]) await compare(prompts, 3, () => ({ maxTokens, temperature: 0 }));
    // A prompt near the end of the 512-position context: the drafts must stop at its last position.
    const { uniform } = seededRandom(10);
    const long = [1, ...draw(uniform, 240)];
    const nearEnd = [...long, ...long.slice(1, 250)].slice(0, 500);
    const [want, got] = await Promise.all([run(plain, nearEnd, { maxTokens: 64, temperature: 0 }), run(drafting, nearEnd, { maxTokens: 64, temperature: 0 })]);
    expectSame(got, want, 'near the end of the context');
    expect(got.finishReason).toBe('length');
    expect(got.tokens.length).toBe(512 - nearEnd.length + 1); // the last token is sampled, never fed
  });

  it('publishes only accepted tokens to the prefix cache: a continuation built on drafted output reads the right KV', async () => {
    const prompts = repeatingPrompts(11, 4);
    let beyondPrompt = 0;
    for (const prompt of prompts) {
      const first = await run(drafting, prompt, { maxTokens: 60, temperature: 0 });
      // The next turn: the whole conversation so far, whose full blocks the drafting run published.
      const next = [...prompt, ...first.tokens, ...prompt.slice(1, 9)];
      const [want, got] = await Promise.all([run(plain, next, { maxTokens: 30, temperature: 0 }), run(drafting, next, { maxTokens: 30, temperature: 0 })]);
      expectSame(got, want, 'the next turn');
      // Blocks holding generated tokens came from the cache: the drafting steps published them.
      if (got.cachedTokens! > Math.floor(prompt.length / 16) * 16) beyondPrompt++;
    }
    expect(beyondPrompt).toBeGreaterThan(0);
  });

  it('with adaptive draft lengths (the default), still gives plain decoding\'s output', async () => {
    const adaptive = await loadModel(file, { contextLength: 512, maxRunningSequences: 4, threads: 1, speculativeTokens: 4 });
    try {
      const prompts = repeatingPrompts(13, 8);
      for (let i = 0; i < prompts.length; i += 4) {
        const batch = prompts.slice(i, i + 4);
        const [want, got] = await Promise.all([
          Promise.all(batch.map((p) => run(plain, p, { maxTokens: 48, temperature: 0 }))),
          Promise.all(batch.map((p) => run(adaptive, p, { maxTokens: 48, temperature: 0 }))),
        ]);
        batch.forEach((_, j) => expectSame(got[j]!, want[j]!, `prompt ${i + j}`));
      }
      // How much it drafts depends on this machine's step timings; it never accepts more than it drafts.
      const s = adaptive.stats();
      expect(s.acceptedTokens).toBeLessThanOrEqual(s.draftTokens);
    } finally {
      await adaptive.unload();
    }
  });

  it('does not draft for a request under a grammar, and its output is unchanged', async () => {
    // A grammar whose language is any run of lowercase letters and spaces: a constrained sequence never drafts.
    const lowercase = () => {
      const b = new GrammarBuilder();
      return encodeGrammar(b.build(b.repeat(b.bytes([[0x61, 0x7a], [0x20, 0x20]]), 1, 200)));
    };
    for (const m of [plain, drafting]) m.setTokenBytes(pieces);
    const before = drafting.stats().draftTokens;
    const prompt = repeatingPrompts(12, 1)[0]!;
    const [want, got] = await Promise.all([
      run(plain, prompt, { maxTokens: 30, temperature: 0, grammar: plain.compileGrammar(lowercase()).handle }),
      run(drafting, prompt, { maxTokens: 30, temperature: 0, grammar: drafting.compileGrammar(lowercase()).handle }),
    ]);
    expectSame(got, want, 'the grammar request');
    expect(got.tokens.length).toBeGreaterThan(0);
    expect(drafting.stats().draftTokens).toBe(before);
  });

  it.skipIf(!fs.existsSync(STORIES))('accepts most drafts on a trained model asked to repeat a passage (stories260K fixture)', async () => {
    const [a, b] = await Promise.all([loadModel(STORIES, { threads: 1 }), loadModel(STORIES, { threads: 1, speculativeTokens: 4, speculativeAdaptive: false })]);
    try {
      // Greedy decoding from BOS, then that story as the prompt twice over: the model goes on retelling it.
      const story = (await run(a, [1], { maxTokens: 120, temperature: 0 })).tokens;
      const prompt = [1, ...story, 1, ...story.slice(0, 10)];
      const stepsBefore = a.stats().steps;
      const [want, got] = await Promise.all([run(a, prompt, { maxTokens: 100, temperature: 0 }), run(b, prompt, { maxTokens: 100, temperature: 0 })]);
      expectSame(got, want, 'the retold story');
      const s = b.stats();
      expect(s.acceptedTokens / s.draftTokens).toBeGreaterThan(0.5);
      expect(s.steps).toBeLessThan(a.stats().steps - stepsBefore); // the same 100 tokens in fewer steps
    } finally {
      await Promise.all([a.unload(), b.unload()]);
    }
  });
});

describe('speculative decoding through the host', () => {
  let host: TestHost;
  let token: string;
  let api: Api;

  const adaptiveEnv = process.env['PLATFORM_SPECULATIVE_ADAPTIVE'];
  beforeAll(async () => {
    // Every proposal drafted, so that the counters below do not hang on this machine's timings.
    process.env['PLATFORM_SPECULATIVE_ADAPTIVE'] = '0';
    ({ host, token } = await libraryHost((dir) => {
      writeGguf(path.join(dir, 'loopy.gguf'), tinyModel({ arch: 'llama', vocab: spmVocab(), nEmbd: 64, nLayer: 2, nHead: 4, nHeadKv: 2, nFf: 128, nCtx: 512, seed: 3, name: 'loopy', weightScale: 0.1 }).spec);
      return { plain: 'loopy.gguf' };
    }));
    api = apiClient(host.url, token);
    const res = await api('POST', '/api/v1/library/deployments', { file: 'loopy.gguf', name: 'loopy-fast', model_id: 'fast', speculative: 'ngram:4' });
    expect(res.status).toBe(202);
    expect((res.body as { speculative: string }).speculative).toBe('ngram:4');
    expect((await waitForDeployment(api, 'fast')).status).toBe('LIVE');
  }, 60_000);
  afterAll(async () => {
    await host?.close();
    if (adaptiveEnv === undefined) delete process.env['PLATFORM_SPECULATIVE_ADAPTIVE'];
    else process.env['PLATFORM_SPECULATIVE_ADAPTIVE'] = adaptiveEnv;
  });

  const complete = async (model: string, prompt: string, extra: Record<string, unknown> = {}) => {
    const res = await api<{ choices: Array<{ text: string; finish_reason: string }>; usage: { completion_tokens: number } }>('POST', `/v1/${model}/completions`, {
      model,
      prompt,
      max_tokens: 40,
      temperature: 0,
      ...extra,
    });
    expect(res.status).toBe(200);
    return res.body;
  };

  it('answers as the deployment without it does, whole and streamed, and counts its drafts in /metrics', async () => {
    const prompts = ['Once upon a time there was a little girl. Once upon a time', 'Hello world, hello world, hello', 'the end of the end of the', 'It is, it is, and it is'];
    for (const prompt of prompts) {
      const [want, got] = await Promise.all([complete('plain', prompt), complete('fast', prompt)]);
      expect(got.choices[0]!.text).toBe(want.choices[0]!.text);
      expect(got.usage).toEqual(want.usage);
    }
    const stream = await fetch(`${host.url}/v1/fast/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'fast', prompt: prompts[1], max_tokens: 40, temperature: 0, stream: true }),
    });
    const text = (await stream.text())
      .split('\n\n')
      .filter((e) => e.startsWith('data: {'))
      .map((e) => (JSON.parse(e.slice(6)) as { choices: Array<{ text: string }> }).choices[0]?.text ?? '')
      .join('');
    expect(text).toBe((await complete('plain', prompts[1]!)).choices[0]!.text);
    const metrics = await (await fetch(`${host.url}/metrics`, { headers: { authorization: `Bearer ${token}` } })).text();
    const counter = (name: string, model: string) => Number(new RegExp(`^${name}\\{model="${model}"\\} (\\S+)$`, 'm').exec(metrics)?.[1]);
    expect(counter('platform:spec_decode_num_draft_tokens', 'fast')).toBeGreaterThan(0);
    expect(counter('platform:spec_decode_num_accepted_tokens', 'fast')).toBeGreaterThan(0);
    expect(counter('platform:spec_decode_num_draft_tokens', 'plain')).toBe(0);
  });

  it('drafts with a draft model of MODELS_DIR (draft_model): the same answers, and its drafts counted', async () => {
    // The deployment's own file as its draft model: every guess right.
    const res = await api('POST', '/api/v1/library/deployments', { file: 'loopy.gguf', name: 'loopy-drafted', model_id: 'drafted', draft_model: 'loopy.gguf' });
    expect(res.status).toBe(202);
    expect(res.body).toMatchObject({ speculative: 'draft:4', draft_model: 'loopy.gguf' });
    const deployed = await waitForDeployment(api, 'drafted');
    expect(deployed.status, String(deployed.reason)).toBe('LIVE');
    for (const prompt of ['Once upon a time there was a little girl.', 'the end of the end of the']) {
      const [want, got] = await Promise.all([complete('plain', prompt), complete('drafted', prompt)]);
      expect(got.choices[0]!.text).toBe(want.choices[0]!.text);
    }
    const metrics = await (await fetch(`${host.url}/metrics`, { headers: { authorization: `Bearer ${token}` } })).text();
    const accepted = Number(/^platform:spec_decode_num_accepted_tokens\{model="drafted"\} (\S+)$/m.exec(metrics)?.[1]);
    expect(accepted).toBeGreaterThan(10);
    expect((await api('DELETE', '/api/v1/library/deployments/drafted')).status).toBeLessThan(300);
  });

  it('refuses a draft setting without its model, a missing draft model, and a draft model with ngram, by field', async () => {
    const refusal = async (body: Record<string, unknown>) => {
      const res = await api<{ error: { message: string; param?: string } }>('POST', '/api/v1/library/deployments', { file: 'loopy.gguf', name: 'other', model_id: 'other', ...body });
      return { status: res.status, ...res.body.error };
    };
    expect(await refusal({ speculative: 'draft:4' })).toMatchObject({ status: 400, param: 'draft_model', message: 'speculative "draft:4" needs draft_model: a GGUF file of MODELS_DIR with the model\'s vocabulary' });
    expect(await refusal({ draft_model: 'nowhere.gguf' })).toMatchObject({ status: 404, param: 'draft_model' });
    expect(await refusal({ speculative: 'ngram:4', draft_model: 'loopy.gguf' })).toMatchObject({ status: 400, param: 'speculative' });
  });

  it('lists the setting with the deployment, and refuses one it does not know by name', async () => {
    const list = await api<{ deployments: Array<{ model_id: string; speculative: string | null }> }>('GET', '/api/v1/library/deployments');
    expect(Object.fromEntries(list.body.deployments.map((d) => [d.model_id, d.speculative]))).toEqual({ plain: null, fast: 'ngram:4' });
    for (const speculative of ['ngram:0', 'ngram:17', 'draft:tiny.gguf', 'ngram', 4]) {
      const res = await api<{ error: { message: string; param?: string } }>('POST', '/api/v1/library/deployments', { file: 'loopy.gguf', name: 'other', model_id: 'other', speculative });
      expect(res.status, String(speculative)).toBe(400);
      expect(JSON.stringify(res.body.error), String(speculative)).toMatch(/speculative/);
    }
  });
});

describe('the parts of speculative decoding, alone (platform_testing.node)', () => {
  const t = loadTestingAddon();
  const opt = { maxTokens: 4, ngramMax: 3, ngramMin: 2 };

  it('drafts what followed the latest earlier occurrence of the last 3, else 2, tokens', () => {
    // "5 6 7" occurs twice before the end: the later one (followed by 20 21 22 23) wins.
    expect(t.ngramDraft([1, 5, 6, 7, 8, 9, 10, 11, 5, 6, 7, 20, 21, 22, 23, 24], [3, 5, 6, 7], opt, 16)).toEqual([20, 21, 22, 23]);
    // No 3-gram match: the 2-gram "6 9" is found, and the draft stops at the history's end.
    expect(t.ngramDraft([1, 6, 9, 4, 2], [6, 9], opt, 16)).toEqual([4, 2, 6, 9]);
    // Nothing to match (ngramMin 2): no draft, even though the last token occurred before.
    expect(t.ngramDraft([1, 5, 6, 7], [8, 5], opt, 16)).toEqual([]);
    // The limit and k bound it.
    expect(t.ngramDraft([1, 5, 6, 7, 8, 9, 10], [5, 6], opt, 2)).toEqual([7, 8]);
    expect(t.ngramDraft([1, 5, 6, 7, 8, 9, 10], [5, 6], { ...opt, maxTokens: 1 }, 16)).toEqual([7]);
    expect(t.ngramDraft([1, 5, 6, 7, 8, 9, 10], [5, 6], opt, 0)).toEqual([]);
  });

  it('repeats a cycle shorter than the draft through the draft itself', () => {
    // "a b a b": the latest earlier "a b" is two back, followed by "a b" and then the draft goes on cycling.
    expect(t.ngramDraft([1, 7, 8, 7, 8], [], { ...opt, maxTokens: 5 }, 16)).toEqual([7, 8, 7, 8, 7]);
    expect(t.ngramDraft([1, 4, 4, 4], [], { ...opt, maxTokens: 3 }, 16)).toEqual([4, 4, 4]);
  });

  it('prices a step of n tokens from the steps it saw, and guesses optimistically before', () => {
    // Nothing seen: each extra token costs 5% of a one-token step.
    expect(t.stepCostRatios([], [[5, 1]])[0]).toBeCloseTo(1.2, 10);
    // Seen 1 (10 ms) and 5 (30 ms): 3 is interpolated (20 ms), 9 extrapolated with that slope (50 ms).
    const [r3, r9, r51] = t.stepCostRatios([[1, 10], [5, 30]], [[3, 1], [9, 1], [5, 1]]);
    expect(r3).toBeCloseTo(2, 10);
    expect(r9).toBeCloseTo(5, 10);
    expect(r51).toBeCloseTo(3, 10);
    // Only 1 seen: the prior slope from it; a moving average of each size (weight 0.1 for a new step).
    expect(t.stepCostRatios([[1, 10]], [[3, 1]])[0]).toBeCloseTo(1.1, 10);
    expect(t.stepCostRatios([[1, 10], [2, 20], [2, 30]], [[2, 1]])[0]).toBeCloseTo(2.1, 10);
    // Sizes outside 1..64 and negative times are ignored.
    expect(t.stepCostRatios([[1, 10], [0, 99], [65, 99], [2, -1]], [[2, 1]])[0]).toBeCloseTo(1.05, 10);
  });

  it('expects p + p^2 + ... + p^k accepted tokens', () => {
    expect(t.expectedAccepted(0.5, 3)).toBeCloseTo(0.875, 12);
    expect(t.expectedAccepted(1, 4)).toBe(4);
    expect(t.expectedAccepted(0.9, 0)).toBe(0);
  });
});

describe('speculative decoding with a draft model', () => {
  let dir: string;
  let small: string;
  const models: LlmModel[] = [];
  const load = async (options: Parameters<typeof loadModel>[1]) => {
    const m = await loadModel(file, { contextLength: 512, maxRunningSequences: 4, threads: 1, ...options });
    models.push(m);
    return m;
  };

  beforeAll(() => {
    dir = tempDir();
    // The model's own weights in 4 bits, as one drafts with a smaller quantization of a model: its
    // guesses are mostly right, not always.
    small = path.join(dir, 'small.gguf');
    writeGguf(small, tinyModel({ ...LOOPY, weightType: 'Q4_0', name: 'small' }).spec);
  });
  afterAll(async () => {
    await Promise.all(models.map((m) => m.unload()));
  });

  it('with itself as the draft model: every guess is right, and the output is plain decoding\'s', async () => {
    const self = await load({ speculativeTokens: 4, speculativeAdaptive: false, draftModel: file });
    expect(self.info().draftModel).toBe(file);
    const prompts = repeatingPrompts(30, 6);
    for (const concurrency of [1, 2, 4]) {
      for (let i = 0; i < prompts.length; i += concurrency) {
        const batch = prompts.slice(i, i + concurrency);
        const [want, got] = await Promise.all([
          Promise.all(batch.map((p) => run(plain, p, { maxTokens: 40, temperature: 0 }))),
          Promise.all(batch.map((p) => run(self, p, { maxTokens: 40, temperature: 0 }))),
        ]);
        batch.forEach((_, j) => expectSame(got[j]!, want[j]!, `concurrency ${concurrency}, prompt ${i + j}`));
      }
    }
    const s = self.stats();
    expect(s.draftTokens).toBeGreaterThan(200);
    expect(s.acceptedTokens / s.draftTokens).toBeGreaterThan(0.95);
  });

  it('with a smaller model: plain decoding\'s output, greedy and seeded, some guesses rejected; its cache is given back', async () => {
    const drafted = await load({ speculativeTokens: 3, speculativeAdaptive: false, draftModel: small });
    const prompts = repeatingPrompts(31, 24);
    for (let i = 0; i < prompts.length; i += 4) {
      const batch = prompts.slice(i, i + 4);
      const options = (j: number): GenerateOptions => (j % 2 === 0 ? { maxTokens: 40, temperature: 0 } : { maxTokens: 40, temperature: 0.5, seed: 70 + i + j, logprobs: 2 });
      const [want, got] = await Promise.all([
        Promise.all(batch.map((p, j) => run(plain, p, options(j)))),
        Promise.all(batch.map((p, j) => run(drafted, p, options(j)))),
      ]);
      batch.forEach((_, j) => expectSame(got[j]!, want[j]!, `prompt ${i + j}`));
    }
    const s = drafted.stats();
    expect(s.acceptedTokens).toBeGreaterThan(0);
    expect(s.acceptedTokens).toBeLessThan(s.draftTokens);
    // 24 requests of up to ~100 positions each have come and gone: were the draft model's blocks
    // not given back, its cache (4 contexts) would be full and nothing more drafted.
    const before = drafted.stats().draftTokens;
    await run(drafted, prompts[0]!, { maxTokens: 40, temperature: 0 });
    expect(drafted.stats().draftTokens).toBeGreaterThan(before);
  });

  it('refuses a draft model of another vocabulary, a missing file, and no draft length, by name', async () => {
    const other = path.join(dir, 'other.gguf');
    writeGguf(other, referenceModel({ arch: 'llama', vocab: plainVocab(96), nEmbd: 32, nLayer: 1, nHead: 2, nFf: 48, seed: 4 }).model.spec);
    await expect(loadModel(file, { speculativeTokens: 4, draftModel: other })).rejects.toThrow(/the draft model's vocabulary has 96 tokens, the model's \d+: a draft model must share the model's vocabulary/);
    await expect(loadModel(file, { speculativeTokens: 4, draftModel: path.join(dir, 'missing.gguf') })).rejects.toThrow(/missing\.gguf/);
    await expect(loadModel(file, { draftModel: small })).rejects.toThrow(/a draft model needs speculativeTokens of at least 1/);
    await expect(loadModel(file, { speculativeTokens: 4, draftModel: '' })).rejects.toThrow(/options\.draftModel must be the path of a GGUF file/);
  });
});
