// Output constraints of a request, compiled for the instance that runs it: a grammar (from a
// response format or from tools) built by the grammar worker off the event loop
// (grammar-compiler.ts), compiled by the engine against the model's vocabulary, and kept in a
// small LRU cache keyed by the hash of what it was built from, so a client that sends the same
// schema on every request pays the build once (two requests with one new schema share one build).
// Building is bounded (the schema compiler's size and time limits, the engine's item limit): an
// oversized or slow schema is a 400, never a hang.
import crypto from 'node:crypto';
import { invalidArgument } from '../../errors.js';
import type { LlmGrammar } from '../engine/index.js';
import type { LlmInstance } from '../library/instance.js';
import { grammarCompiler, GrammarRefused } from './grammar-compiler.js';
import type { GrammarJob } from './grammar-job.js';

/** What the engine enforces on one generation. */
export interface OutputConstraint {
  readonly grammar: LlmGrammar;
  /** Set: the grammar applies only after the output contains this text (tool calls in "auto" mode). */
  readonly trigger?: string;
}

/** Compiled grammars kept per instance (the vocabulary they were compiled against). */
const CACHE_SIZE = 64;
const caches = new WeakMap<LlmInstance, Map<string, Promise<LlmGrammar>>>();

/** Grammar compiles so far: cold (built) and cached (found, or joined while being built). */
export const grammarCompiles = { cold: 0, cached: 0 };

/** The bytes each token stands for, as the grammar sees them: special tokens as their text, the end and start of text as nothing. */
function tokenBytes(instance: LlmInstance): Uint8Array[] {
  const t = instance.tokenizer;
  const out: Uint8Array[] = [];
  for (let id = 0; id < t.vocab.tokens.length; id++) {
    out.push(t.isEog(id) || id === t.bos ? new Uint8Array(0) : t.piece(id, true));
  }
  return out;
}

/** The request field a refused job is reported against. */
function fieldOf(job: GrammarJob, tool: number | undefined): string {
  if (job.kind === 'json_object') return 'response_format';
  if (job.kind === 'json_schema') return 'response_format.json_schema.schema';
  return tool === undefined ? 'tools' : `tools[${tool}].function.parameters`;
}

async function build(instance: LlmInstance, job: GrammarJob): Promise<LlmGrammar> {
  let encoded: Int32Array;
  try {
    encoded = await grammarCompiler.compile(job);
  } catch (err) {
    if (!(err instanceof GrammarRefused)) throw err;
    const field = fieldOf(job, err.failure.tool);
    throw invalidArgument(`${field}: ${err.message}`, field);
  }
  try {
    if (!instance.model.hasTokenBytes) instance.model.setTokenBytes(tokenBytes(instance));
    return instance.model.compileGrammar(encoded);
  } catch (err) {
    const field = fieldOf(job, undefined);
    if (err instanceof RangeError) throw invalidArgument(`${field}: the grammar it compiles to cannot be used: ${err.message}`, field);
    throw err;
  }
}

/** The instance's compiled grammar for `job`, built on a miss. */
export async function compiledGrammar(instance: LlmInstance, job: GrammarJob): Promise<LlmGrammar> {
  let cache = caches.get(instance);
  if (!cache) {
    cache = new Map();
    caches.set(instance, cache);
  }
  const key = crypto.createHash('sha256').update(JSON.stringify(job)).digest('hex');
  const hit = cache.get(key);
  if (hit) {
    cache.delete(key); // most recently used last
    cache.set(key, hit);
    grammarCompiles.cached++;
    return hit;
  }
  grammarCompiles.cold++;
  const pending = build(instance, job);
  cache.set(key, pending);
  if (cache.size > CACHE_SIZE) cache.delete(cache.keys().next().value!);
  pending.catch(() => cache.delete(key)); // a refused job is not remembered
  return pending;
}
