// What a request's grammar is built from, as plain data: a worker thread builds it
// (grammar-worker.ts), and its JSON is the key of the compiled grammar in the cache
// (constraint.ts). Building runs the JSON Schema compiler, which may take up to its deadline:
// off the event loop, other requests are not held up by it.
import { encodeGrammar } from '../structured/grammar.js';
import { jsonObjectGrammar, JsonSchemaCompiler, jsonSchemaGrammar, SchemaError } from '../structured/json-schema.js';
import { GrammarBuilder, GrammarTooLargeError } from '../structured/grammar.js';
import type { ToolFamily } from './tool-formats.js';
import { eagerToolGrammar, lazyToolGrammar } from './tool-grammar.js';
import { argumentsSchema, type ToolDefinition } from './tool-params.js';

export type GrammarJob =
  | { readonly kind: 'json_object' }
  | { readonly kind: 'json_schema'; readonly schema: unknown }
  | {
      readonly kind: 'tools';
      readonly family: ToolFamily;
      readonly tools: readonly ToolDefinition[];
      readonly choice: 'auto' | 'required' | { readonly name: string };
      readonly parallel: boolean;
    };

/** Why a job's grammar cannot be built; `tool` is the index of the tool whose parameters are at fault. */
export interface GrammarJobFailure {
  readonly message: string;
  readonly tool?: number;
}

/** Milliseconds the schemas of one job may take to compile, all of them together. */
export const JOB_BUDGET_MS = 2000;

/** The grammar of `job`, encoded for the addon; throws a GrammarJobFailure-shaped error. */
export function buildGrammar(job: GrammarJob): Int32Array {
  try {
    if (job.kind === 'json_object') return encodeGrammar(jsonObjectGrammar());
    if (job.kind === 'json_schema') return encodeGrammar(jsonSchemaGrammar(job.schema, { deadlineMs: JOB_BUDGET_MS }));
  } catch (err) {
    throw failure(err);
  }
  // Each tool's parameters first, so that a bad one is named by its index.
  const deadline = Date.now() + JOB_BUDGET_MS;
  job.tools.forEach((tool, i) => {
    try {
      new JsonSchemaCompiler(new GrammarBuilder(), argumentsSchema(tool), { deadlineMs: Math.max(1, deadline - Date.now()) }).value();
    } catch (err) {
      throw { ...failure(err), tool: i };
    }
  });
  try {
    const grammar = job.choice === 'auto' ? lazyToolGrammar(job.family, job.tools, job.parallel).grammar : eagerToolGrammar(job.family, job.tools, job.choice, job.parallel);
    return encodeGrammar(grammar);
  } catch (err) {
    throw failure(err);
  }
}

function failure(err: unknown): GrammarJobFailure {
  if (err instanceof SchemaError) return { message: err.path ? `${err.message}` : err.message };
  if (err instanceof GrammarTooLargeError) return { message: `too large to enforce: ${err.message}` };
  throw err;
}
