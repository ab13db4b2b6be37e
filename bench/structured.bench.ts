// Structured generation's cost: decode tokens/s of the TinyLlama-1.1B-shaped model of
// llm.bench.ts (Q4_K, random weights, the Llama 2 32k vocabulary) under a nested JSON Schema,
// against the same model without one, at 1 and at 16 concurrent sequences; and the compile time
// of a large schema, cold (schema -> grammar -> the engine's compiled grammar) and cached (the
// LRU of src/llm/chat/constraint.ts).
//
// The peer is our own unconstrained decoding: the goal is at least 90 % of its rate at both batch
// sizes. Runs alternate (free, constrained, free, constrained, ...) so that a change in machine
// load hits both sides of a ratio alike; every sequence generates exactly STRUCTURED_BENCH_TOKENS
// tokens (the schema needs more, so none ends early), greedy. The first constrained run also
// reports its "warm-up": the parser states and token masks that the engine meets for the first
// time are computed on the engine's thread and cached for every later step and request.
//
// Environment (defaults in brackets):
//   STRUCTURED_BENCH_TOKENS   tokens per sequence [48]
//   STRUCTURED_BENCH_BATCHES  concurrent sequences [1,16]
//   STRUCTURED_BENCH_ROUNDS   alternating rounds, the median counts [3]
//   LLM_BENCH_THREADS         engine threads [PLATFORM_THREADS or all cores]
import os from 'node:os';
import { loadModel, type LlmGrammar, type LlmModel } from '../src/llm/engine/index.js';
import { readGguf } from '../src/llm/gguf/index.js';
import { Tokenizer } from '../src/llm/tokenizer/index.js';
import { compiledGrammar } from '../src/llm/chat/constraint.js';
import { grammarCompiler } from '../src/llm/chat/grammar-compiler.js';
import type { LlmInstance } from '../src/llm/library/instance.js';
import { encodeGrammar } from '../src/llm/structured/grammar.js';
import { jsonSchemaGrammar } from '../src/llm/structured/json-schema.js';
import { ensureBenchModel } from './llm-model.js';
import { printTable } from './support/markdown-table.js';

const envInt = (name: string, def: number) => {
  const v = Number(process.env[name] ?? def);
  if (!Number.isInteger(v) || v < 1) throw new Error(`${name} must be a positive integer`);
  return v;
};

/** An order with a customer, an address, tags and line items: strings, enums, patterns, formats, ranges and nesting. */
export const NESTED_SCHEMA = {
  type: 'object',
  properties: {
    id: { type: 'string', format: 'uuid' },
    customer: {
      type: 'object',
      properties: {
        name: { type: 'string', minLength: 2, maxLength: 40 },
        email: { type: 'string', pattern: '^[a-z0-9.]+@[a-z0-9]+\\.[a-z]{2,4}$' },
        tier: { enum: ['free', 'pro', 'enterprise'] },
      },
      required: ['name', 'email', 'tier'],
      additionalProperties: false,
    },
    placed: { type: 'string', format: 'date' },
    address: {
      type: 'object',
      properties: { street: { type: 'string' }, city: { type: 'string' }, zip: { type: 'string', pattern: '^[0-9]{5}$' } },
      required: ['street', 'city', 'zip'],
      additionalProperties: false,
    },
    tags: { type: 'array', items: { type: 'string', maxLength: 16 }, minItems: 1, maxItems: 8 },
    lines: {
      type: 'array',
      minItems: 1,
      items: {
        type: 'object',
        properties: { sku: { type: 'string' }, quantity: { type: 'integer', minimum: 1, maximum: 999 }, price: { type: 'number', minimum: 0 } },
        required: ['sku', 'quantity', 'price'],
        additionalProperties: false,
      },
    },
  },
  required: ['id', 'customer', 'placed', 'address', 'tags', 'lines'],
  additionalProperties: false,
} as const;

/** A large schema: 120 objects of 8 typed properties each, with enums and patterns, under $defs. */
export function largeSchema(): Record<string, unknown> {
  const defs: Record<string, unknown> = {};
  const properties: Record<string, unknown> = {};
  for (let i = 0; i < 120; i++) {
    defs[`thing${i}`] = {
      type: 'object',
      properties: {
        name: { type: 'string', maxLength: 32 },
        code: { type: 'string', pattern: `^[A-Z]{2}-[0-9]{${1 + (i % 5)}}$` },
        count: { type: 'integer', minimum: -i, maximum: 1000 + i },
        ratio: { type: 'number' },
        kind: { enum: [`a${i}`, `b${i}`, `c${i}`, null] },
        flags: { type: 'array', items: { type: 'boolean' }, maxItems: 4 },
        when: { type: 'string', format: 'date' },
        next: { anyOf: [{ type: 'null' }, { type: 'string', format: 'uuid' }] },
      },
      required: ['name', 'code', 'count'],
      additionalProperties: false,
    };
    properties[`field${i}`] = { $ref: `#/$defs/thing${i}` };
  }
  return { type: 'object', properties, $defs: defs, additionalProperties: false };
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

/** Aggregate decode tokens/s of `batch` sequences generating `tokens` each (after their first token). */
async function decodeRate(model: LlmModel, batch: number, tokens: number, grammar: LlmGrammar | undefined): Promise<number> {
  const prompt = [1, 450, 1797, 338, 263, 4086, 29901]; // 7 tokens
  const firsts: number[] = [];
  let last = 0;
  let generated = 0;
  await Promise.all(
    Array.from({ length: batch }, async (_, i) => {
      const gen = model.generate([...prompt, 100 + i], { maxTokens: tokens, temperature: 0, ...(grammar ? { grammar: grammar.handle } : {}) });
      let n = 0;
      for await (const _t of gen) {
        const now = performance.now();
        if (n === 0) firsts.push(now);
        n++;
        last = Math.max(last, now);
      }
      const r = await gen.result;
      if (r.finishReason !== 'length') throw new Error(`a sequence ended early (${r.finishReason} after ${n} tokens): the schema must need more tokens`);
      generated += n - 1;
    }),
  );
  return (generated * 1000) / (last - Math.max(...firsts));
}

export default async function structuredBench(): Promise<void> {
  const tokens = envInt('STRUCTURED_BENCH_TOKENS', 48);
  const rounds = envInt('STRUCTURED_BENCH_ROUNDS', 3);
  const batches = (process.env.STRUCTURED_BENCH_BATCHES ?? '1,16').split(',').map(Number);
  const threads = process.env.LLM_BENCH_THREADS ? Number(process.env.LLM_BENCH_THREADS) : undefined;
  const file = await ensureBenchModel('Q4_K', (s) => console.log(s));
  const tokenizer = Tokenizer.fromGguf(await readGguf(file));
  const model = await loadModel(file, {
    contextLength: 512,
    maxRunningSequences: Math.max(...batches),
    ...(threads ? { threads } : {}),
  });
  const instance = { model, tokenizer } as unknown as LlmInstance;
  try {
    // Compile: cold (every step) and cached (the LRU), for the large schema; then the nested one.
    const large = largeSchema();
    const t0 = performance.now();
    const grammar = jsonSchemaGrammar(large);
    const t1 = performance.now();
    model.setTokenBytes(tokenizer.vocab.tokens.map((_, id) => (tokenizer.isEog(id) || id === tokenizer.bos ? new Uint8Array(0) : tokenizer.piece(id, true))));
    const t2 = performance.now();
    model.compileGrammar(encodeGrammar(grammar));
    const t3 = performance.now();
    // Through the cache: the first call builds it in the grammar worker, the next ones find it.
    const viaWorker = performance.now();
    await compiledGrammar(instance, { kind: 'json_schema', schema: large });
    const workerMs = performance.now() - viaWorker;
    const cached: number[] = [];
    for (let i = 0; i < 20; i++) {
      const s = performance.now();
      await compiledGrammar(instance, { kind: 'json_schema', schema: large });
      cached.push(performance.now() - s);
    }
    const items = grammar.rules.reduce((n, alts) => n + alts.reduce((m, seq) => m + seq.length + 1, 0), 0);
    console.log(`large schema: ${JSON.stringify(large).length} bytes of JSON, ${grammar.rules.length} rules, ${items} items`);
    printTable(
      [
        { 'compile step': 'schema -> grammar (TypeScript)', ms: t1 - t0 },
        { 'compile step': 'engine compile (parse, checks, first state)', ms: t3 - t2 },
        { 'compile step': 'cold total', ms: t1 - t0 + t3 - t2 },
        { 'compile step': 'first request, built in the grammar worker (event loop free)', ms: workerMs },
        { 'compile step': 'cached (LRU hit, median of 20)', ms: median(cached) },
        { 'compile step': 'vocabulary trie, once per model', ms: t2 - t1 },
      ],
      (v) => v.toFixed(3),
    );

    const nested = await compiledGrammar(instance, { kind: 'json_schema', schema: NESTED_SCHEMA });
    // Warm-up: the first constrained run meets its states for the first time.
    const w0 = performance.now();
    const warmRate = await decodeRate(model, 1, tokens, nested);
    const warmMs = performance.now() - w0;
    console.log(`\nfirst constrained run (cold state cache): ${warmRate.toFixed(2)} tok/s, ${warmMs.toFixed(0)} ms, ${nested.states()} parser states met`);
    const rows: Array<Record<string, string | number>> = [];
    for (const batch of batches) {
      const free: number[] = [];
      const constrained: number[] = [];
      for (let r = 0; r < rounds; r++) {
        free.push(await decodeRate(model, batch, tokens, undefined));
        constrained.push(await decodeRate(model, batch, tokens, nested));
      }
      const f = median(free);
      const c = median(constrained);
      rows.push({
        sequences: String(batch),
        'free tok/s': f,
        'JSON Schema tok/s': c,
        ratio: `${((c / f) * 100).toFixed(1)} %`,
        'rounds (free / schema)': `${free.map((x) => x.toFixed(1)).join(', ')} / ${constrained.map((x) => x.toFixed(1)).join(', ')}`,
      });
    }
    console.log(`\ndecode, ${tokens} tokens per sequence, greedy, ${threads ?? 'all'} threads, ${rounds} rounds, ${nested.states()} parser states cached`);
    printTable(rows, (v) => v.toFixed(2));
    console.log(`load average ${os.loadavg().map((x) => x.toFixed(2)).join(' ')}`);
  } finally {
    await model.unload();
    await grammarCompiler.close();
  }
}

if (import.meta.url === `file://${process.argv[1]}`) await structuredBench();
