// The grammar constraint inside the native engine, checked against an independent Earley
// recognizer (test/helpers/grammar-oracle.ts) on a random-weight model that would otherwise emit
// garbage: sampled outputs always match; greedy decoding under a grammar picks, at every step,
// the best token among exactly the tokens the grammar allows (so it equals unconstrained greedy
// decoding wherever that token was allowed); EOS only where the grammar can end; a lazy grammar
// starts at its trigger; other sequences of the batch are untouched; malformed grammars are
// refused without a crash.
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadModel, type LlmGrammar, type LlmModel } from '../src/llm/engine/index.js';
import { encodeGrammar, GrammarBuilder, grammarMatches, type Grammar } from '../src/llm/structured/grammar.js';
import { Tokenizer } from '../src/llm/tokenizer/index.js';
import { readGguf } from '../src/llm/gguf/index.js';
import { GrammarOracle } from './helpers/grammar-oracle.js';
import { writeTinyChatModel } from './helpers/llm-models.js';
import { tempDir } from './helpers/paths.js';
import { seededRandom } from './helpers/gguf-writer.js';

let model: LlmModel;
let tokenizer: Tokenizer;
/** Token bytes as the host gives them to the engine (constraint.ts): control tokens as text, EOS and BOS as nothing. */
let pieces: Uint8Array[];

beforeAll(async () => {
  const dir = tempDir();
  const file = writeTinyChatModel(dir, 'tiny');
  model = await loadModel(path.join(dir, file), { contextLength: 512, maxRunningSequences: 8 });
  tokenizer = Tokenizer.fromGguf(await readGguf(path.join(dir, file)));
  pieces = tokenizer.vocab.tokens.map((_, id) => (tokenizer.isEog(id) || id === tokenizer.bos ? new Uint8Array(0) : tokenizer.piece(id, true)));
  model.setTokenBytes(pieces);
});
afterAll(async () => {
  await model?.unload();
});

const EOS = 2;
const PROMPT = [1, 280, 281, 282];

async function run(grammar: LlmGrammar | undefined, options: Record<string, unknown>): Promise<{ ids: number[]; finish: string }> {
  const gen = model.generate(PROMPT, { maxTokens: 200, ...(grammar ? { grammar: grammar.handle } : {}), ...options });
  const ids: number[] = [];
  for await (const t of gen) ids.push(t.token);
  return { ids, finish: (await gen.result).finishReason };
}

const bytesOf = (ids: number[]) => Buffer.concat(ids.map((id) => pieces[id]!));

/** A JSON-like record: {"name": "<1-8 chars>", "tags": [<0-3 short words>], "n": <1-3 digits>}. */
function recordGrammar(): Grammar {
  const b = new GrammarBuilder();
  const char = b.chars([[0x22, 0x22], [0x5c, 0x5c], [0, 0x1f]], true);
  const word = [...b.literal('"'), ...b.repeat(b.bytes([[0x61, 0x7a]]), 1, 5), ...b.literal('"')];
  const ws = b.optional(b.literal(' '));
  return b.build([
    ...b.literal('{"name":'), ...ws, ...b.literal('"'), ...b.repeat(char, 1, 8), ...b.literal('",'), ...ws,
    ...b.literal('"tags":'), ...ws, ...b.literal('['), ...b.separated(word, [...b.literal(','), ...ws], 0, 3), ...b.literal('],'), ...ws,
    ...b.literal('"n":'), ...ws, ...b.repeat(b.bytes([[0x30, 0x39]]), 1, 3), ...b.literal('}'),
  ]);
}

describe('a grammar in the sampler', () => {
  it('every output sampled at temperature 1 matches the grammar and ends where it may', async () => {
    const g = recordGrammar();
    const compiled = model.compileGrammar(encodeGrammar(g));
    const runs = await Promise.all(Array.from({ length: 24 }, (_, seed) => run(compiled, { temperature: 1, seed })));
    for (const { ids, finish } of runs) {
      const text = bytesOf(ids);
      expect(finish).toBe('stop');
      expect(grammarMatches(g, text), text.toString()).toBe(true);
      expect(() => JSON.parse(text.toString())).not.toThrow();
    }
    // Without the grammar the same model writes no JSON at all.
    const free = await run(undefined, { temperature: 1, seed: 0, maxTokens: 40 });
    expect(() => JSON.parse(bytesOf(free.ids).toString())).toThrow();
    expect(compiled.states()).toBeGreaterThan(10);
  });

  it('greedy decoding picks the best allowed token at every step, which is the free choice wherever that was allowed', async () => {
    const g = recordGrammar();
    const compiled = model.compileGrammar(encodeGrammar(g));
    const { ids, finish } = await run(compiled, { temperature: 0 });
    expect(finish).toBe('stop');
    const oracle = new GrammarOracle(g);
    let agreedWithFree = 0;
    let overruled = 0;
    for (let step = 0; step <= ids.length; step++) {
      const logits = await model.logits([...PROMPT, ...ids.slice(0, step)]);
      // The allowed set, from the oracle: tokens whose bytes keep a parse alive; EOS where it can end.
      const allowed = pieces.map((p, id) => (id === EOS ? oracle.complete : p.length > 0 && oracle.try(p).alive));
      let best = -1;
      for (let id = 0; id < pieces.length; id++) if (allowed[id] && (best < 0 || logits[id]! > logits[best]!)) best = id;
      let free = 0;
      for (let id = 1; id < logits.length; id++) if (logits[id]! > logits[free]!) free = id;
      const chosen = step < ids.length ? ids[step]! : EOS;
      if (step === ids.length && oracle.complete && allowed.filter(Boolean).length === 1) break; // ended without a step: nothing else was allowed
      expect(chosen, `step ${step}`).toBe(best);
      if (allowed[free]) {
        expect(chosen).toBe(free);
        agreedWithFree++;
      } else overruled++;
      if (step < ids.length) oracle.feed(pieces[chosen]!);
    }
    expect(agreedWithFree + overruled).toBeGreaterThan(5);
    expect(overruled).toBeGreaterThan(0); // the random model needed correcting
  });

  it('the penalties do not let a token outside the grammar back in', async () => {
    const g = recordGrammar();
    const compiled = model.compileGrammar(encodeGrammar(g));
    const runs = await Promise.all(Array.from({ length: 8 }, (_, seed) => run(compiled, { temperature: 1, seed, frequencyPenalty: 2, presencePenalty: 2 })));
    for (const { ids, finish } of runs) {
      expect(finish).toBe('stop');
      expect(grammarMatches(g, bytesOf(ids))).toBe(true);
    }
  });

  it('output that would nest deeper than 256 levels ends with an error that says so', async () => {
    const b = new GrammarBuilder();
    let inner = b.literal('x');
    for (let k = 0; k < 300; k++) inner = b.rule([[...b.literal('['), ...inner, ...b.literal(']')]]);
    const compiled = model.compileGrammar(encodeGrammar(b.build(inner)));
    const gen = model.generate(PROMPT, { maxTokens: 400, temperature: 1, seed: 1, grammar: compiled.handle });
    await expect(gen.result).rejects.toThrow(/nests more than 256 levels/);
  });

  it('a grammar compiled for another model is refused', async () => {
    const dir = tempDir();
    const other = await loadModel(path.join(dir, writeTinyChatModel(dir, 'other', { seed: 9 })), { contextLength: 128 });
    try {
      other.setTokenBytes(pieces);
      const foreign = other.compileGrammar(encodeGrammar(recordGrammar()));
      expect(() => model.generate(PROMPT, { grammar: foreign.handle })).toThrow(/compiled for another model/);
    } finally {
      await other.unload();
    }
  });

  it('a value cut short by max_tokens ends with "length", never with "stop"', async () => {
    const b = new GrammarBuilder();
    const g = b.build([...b.literal('['), ...b.repeat(b.literal('1,'), 30, 30), ...b.literal('1]')]);
    const compiled = model.compileGrammar(encodeGrammar(g));
    const { ids, finish } = await run(compiled, { temperature: 1, seed: 3, maxTokens: 10 });
    expect(finish).toBe('length');
    expect(ids).toHaveLength(10);
    expect(new GrammarOracle(g).feed(bytesOf(ids))).toBe(true);
  });

  it('a grammar with one possible text ends as soon as it is written, without another step', async () => {
    const b = new GrammarBuilder();
    const g = b.build(b.literal('{"ok": true}'));
    const compiled = model.compileGrammar(encodeGrammar(g));
    const { ids, finish } = await run(compiled, { temperature: 1, seed: 5 });
    expect(finish).toBe('stop');
    expect(bytesOf(ids).toString()).toBe('{"ok": true}');
  });

  it('a lazy grammar lets the model write freely until the trigger, then holds what follows to the grammar', async () => {
    const b = new GrammarBuilder();
    const g = b.build([...b.repeat(b.bytes([[0x30, 0x39]]), 2, 4), ...b.literal('!')]);
    const compiled = model.compileGrammar(encodeGrammar(g));
    let triggered = 0;
    for (let seed = 0; seed < 16; seed++) {
      const gen = model.generate(PROMPT, { maxTokens: 120, temperature: 1, seed, grammar: compiled.handle, grammarTrigger: 'e' });
      const ids: number[] = [];
      for await (const t of gen) ids.push(t.token);
      const finish = (await gen.result).finishReason;
      const text = bytesOf(ids).toString('latin1');
      const at = text.indexOf('e');
      if (at < 0) continue;
      triggered++;
      const after = Buffer.from(text.slice(at + 1), 'latin1');
      expect(finish).toBe('stop');
      expect(grammarMatches(g, after), JSON.stringify(text)).toBe(true);
    }
    expect(triggered).toBeGreaterThan(4);
  });

  it('sequences without a grammar in the same batch generate exactly what they generate alone', async () => {
    const alone = await run(undefined, { temperature: 1, seed: 42, maxTokens: 30 });
    const compiled = model.compileGrammar(encodeGrammar(recordGrammar()));
    const [mixed] = await Promise.all([
      run(undefined, { temperature: 1, seed: 42, maxTokens: 30 }),
      ...Array.from({ length: 5 }, (_, i) => run(compiled, { temperature: 1, seed: i })),
    ]);
    expect(mixed!.ids).toEqual(alone.ids);
  });
});

describe('a grammar the engine cannot use', () => {
  const refusal = (encoded: Int32Array) => {
    try {
      model.compileGrammar(encoded);
    } catch (err) {
      expect(err).toBeInstanceOf(RangeError);
      return (err as Error).message;
    }
    return null;
  };

  it('malformed encodings are refused by name', () => {
    expect(refusal(Int32Array.of())).toMatch(/ends early/);
    expect(refusal(Int32Array.of(2, 1, 0))).toMatch(/version must be 1/);
    expect(refusal(Int32Array.of(1, 0, 0))).toMatch(/no rules/);
    expect(refusal(Int32Array.of(1, 1, 5, 1, 0))).toMatch(/root is out of range/);
    expect(refusal(Int32Array.of(1, 1, 0, 0))).toMatch(/no alternatives/);
    expect(refusal(Int32Array.of(1, 1, 0, 1, 1, 0, 7))).toMatch(/rule reference is out of range/);
    expect(refusal(Int32Array.of(1, 1, 0, 1, 1, 9))).toMatch(/unknown item tag 9/);
    expect(refusal(Int32Array.of(1, 1, 0, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0))).toMatch(/empty byte set/);
    expect(refusal(Int32Array.of(1, 1, 0, 1, 0, 99))).toMatch(/bytes after its last rule/);
    expect(refusal(Int32Array.of(1, 1, 0, 1, -3))).toMatch(/item count is out of range/);
  });

  it('left recursion is refused instead of looping', () => {
    // A -> A "x" | "y", and the indirect A -> B, B -> C? A (C nullable)
    expect(refusal(Int32Array.of(1, 1, 0, 2, 2, 0, 0, 1, 0, 0, 0, 1 << 24, 0, 0, 0, 0, 1, 1, 0, 0, 0, 1 << 25, 0, 0, 0, 0))).toMatch(/left-recursive/);
    const b = new GrammarBuilder();
    const a = b.declare();
    const c = b.optional(b.literal('c'));
    b.define(a, [[...c, { rule: a }, ...b.literal('x')], b.literal('y')]);
    expect(refusal(encodeGrammar(b.build(b.ref(a))))).toMatch(/left-recursive/);
  });

  it('thousands of random and mutated encodings never crash the process', async () => {
    const random = seededRandom(20261125);
    const valid = encodeGrammar(recordGrammar());
    let refused = 0;
    const accepted: LlmGrammar[] = [];
    for (let i = 0; i < 3000; i++) {
      let encoded: Int32Array;
      if (i % 2 === 0) {
        encoded = valid.slice(0, Math.floor(random.uniform() * valid.length) + 1);
        for (let k = 0; k < 3; k++) encoded[Math.floor(random.uniform() * encoded.length)] = Math.floor(random.uniform() * 40) - 5;
      } else {
        encoded = Int32Array.from({ length: 3 + Math.floor(random.uniform() * 30) }, () => Math.floor(random.uniform() * 8) - 1);
        encoded[0] = 1;
      }
      const message = refusal(encoded);
      if (message !== null) refused++;
      else if (accepted.length < 40) accepted.push(model.compileGrammar(encoded));
    }
    expect(refused).toBeGreaterThan(2000);
    // An accepted mutant generates (or ends with a clear error) without crashing.
    for (const grammar of accepted) {
      const gen = model.generate(PROMPT, { maxTokens: 8, temperature: 1, seed: 1, grammar: grammar.handle });
      try {
        for await (const _ of gen) void _;
        expect(['stop', 'length']).toContain((await gen.result).finishReason);
      } catch (err) {
        expect((err as Error).message).toMatch(/structured output/);
      }
    }
  });

  it('bad arguments are type errors', () => {
    expect(() => model.compileGrammar([1, 2, 3] as unknown as Int32Array)).toThrow(TypeError);
    expect(() => model.generate(PROMPT, { grammar: {} as never })).toThrow(TypeError);
  });
});
