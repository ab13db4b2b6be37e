// Output constraints of a request, compiled for the instance that runs it: a grammar (from a
// response format or from tools) compiled once per model and kept in a small LRU cache keyed by
// the hash of what it was built from, so a client that sends the same schema on every request
// pays the compile once. Compiling is bounded (the schema compiler's size and time limits, the
// engine's item limit): an oversized or slow schema is a 400, never a hang.
import crypto from 'node:crypto';
import { invalidArgument } from '../../errors.js';
import type { LlmGrammar } from '../engine/index.js';
import type { LlmInstance } from '../library/instance.js';
import { encodeGrammar, type Grammar } from '../structured/grammar.js';
import { SchemaError } from '../structured/json-schema.js';

/** What the engine enforces on one generation. */
export interface OutputConstraint {
  readonly grammar: LlmGrammar;
  /** Set: the grammar applies only after the output contains this text (tool calls in "auto" mode). */
  readonly trigger?: string;
}

/** Compiled grammars kept per instance (the vocabulary they were compiled against). */
const CACHE_SIZE = 64;
const caches = new WeakMap<LlmInstance, Map<string, LlmGrammar>>();

/** Grammar compiles so far: cold (built) and cached (found). */
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

/**
 * The instance's compiled grammar for `source` (any JSON-serialisable description of what the
 * grammar is built from), building it with `build` on a miss. `field` names the request field a
 * refused schema is reported against.
 */
export function compiledGrammar(instance: LlmInstance, source: unknown, build: () => Grammar, field: string): LlmGrammar {
  let cache = caches.get(instance);
  if (!cache) {
    cache = new Map();
    caches.set(instance, cache);
  }
  const key = crypto.createHash('sha256').update(JSON.stringify(source)).digest('hex');
  const hit = cache.get(key);
  if (hit) {
    cache.delete(key); // most recently used last
    cache.set(key, hit);
    grammarCompiles.cached++;
    return hit;
  }
  let grammar: LlmGrammar;
  try {
    if (!instance.model.hasTokenBytes) instance.model.setTokenBytes(tokenBytes(instance));
    grammar = instance.model.compileGrammar(encodeGrammar(build()));
  } catch (err) {
    if (err instanceof SchemaError) throw invalidArgument(`${field}: ${err.message}`, field);
    if (err instanceof RangeError) throw invalidArgument(`${field}: the grammar it compiles to cannot be used: ${err.message}`, field);
    throw err;
  }
  grammarCompiles.cold++;
  cache.set(key, grammar);
  if (cache.size > CACHE_SIZE) cache.delete(cache.keys().next().value!);
  return grammar;
}
