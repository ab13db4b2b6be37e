// A real host serving small random models of arch-models.ts over the chat API, for the tests that
// show an architecture answers end to end (llm-architectures, llm-moe): each model written as
// <id>.gguf with one chat template and seed, deployed, and asked one question at temperature 0.
import path from 'node:path';
import { afterAll, beforeAll, expect } from 'vitest';
import { archModel, type ArchModel, type ArchModelOptions } from './arch-models.js';
import { writeGguf } from './gguf-writer.js';
import type { TestHost } from './in-process-host.js';
import { libraryHost } from './library.js';
import { spmVocab } from './llm-models.js';

/** The served models' chat template: role markers, then the assistant's turn. */
export const SERVED_TEMPLATE = "{% for m in messages %}<|{{ m['role'] }}|>{{ m['content'] }}\n{% endfor %}<|assistant|>";
/** The one user message every test sends (longer than the gemma models' window of 8). */
export const SERVED_QUESTION = 'Once upon a time there was a little girl.';

/** Model `id`'s file, as the host serves it. */
export function servedModel(o: Omit<ArchModelOptions, 'vocab'>): ArchModel {
  return archModel({ ...o, vocab: spmVocab(SERVED_TEMPLATE), seed: 7, nCtx: 256 });
}

export interface ServedCompletion {
  model: string;
  choices: Array<{ message: { role: string; content: string }; finish_reason: string }>;
  usage: { prompt_tokens: number; completion_tokens: number };
}

/**
 * Starts a host serving `models` (id -> options) for the enclosing describe block (beforeAll /
 * afterAll) and returns chat(id): SERVED_QUESTION answered by model `id`, 10 tokens at most,
 * greedy, checked to be a 200.
 */
export function serveArchModels(models: Record<string, Omit<ArchModelOptions, 'vocab'>>): (id: string) => Promise<ServedCompletion> {
  let host: TestHost;
  let token: string;
  beforeAll(async () => {
    ({ host, token } = await libraryHost((modelsDir) => {
      const files: Record<string, string> = {};
      for (const [id, o] of Object.entries(models)) {
        writeGguf(path.join(modelsDir, `${id}.gguf`), servedModel(o).spec);
        files[id] = `${id}.gguf`;
      }
      return files;
    }, { LLM_CONTEXT_LENGTH: '256' }));
  }, 120_000);
  afterAll(async () => {
    await host?.close();
  });
  return async (model) => {
    const res = await fetch(`${host.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model, messages: [{ role: 'user', content: SERVED_QUESTION }], max_tokens: 10, temperature: 0 }),
    });
    expect(res.status).toBe(200);
    return (await res.json()) as ServedCompletion;
  };
}
