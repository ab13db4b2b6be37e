// What the forward-pass tests share (llm-engine-forward, llm-tensor-types, llm-architectures,
// llm-moe): a seeded prompt, the engine's logits at every position of it, and their distance from
// an f64 reference.
import { loadModel, type LoadModelOptions } from '../../src/llm/engine/index.js';
import { relativeError } from './llm-reference.js';

/**
 * n token ids in [0, vocab) from a seed. The products pass 2^53, so this is not the LCG it looks
 * like, but it is deterministic, and the tests' seeds were chosen with it: keep it as it is.
 */
export function seededPrompt(n: number, vocab: number, seed: number): number[] {
  let s = seed;
  return Array.from({ length: n }, () => (s = (s * 1103515245 + 12345) % 2147483648) % vocab);
}

/** Loads `file` (2 threads unless `options` says), takes the logits of every position of `tokens` ([n][vocab]), unloads. */
export async function engineLogits(file: string, tokens: number[], options: LoadModelOptions = {}) {
  const model = await loadModel(file, { threads: 2, ...options });
  try {
    return { logits: await model.logits(tokens, { allPositions: true }), info: model.info() };
  } finally {
    await model.unload();
  }
}

/** The largest relativeError of a position's logits (rows of `all`, [positions][vocab]) against the reference's. */
export function worstRelativeError(all: Float32Array, expected: Float64Array[], vocab: number): number {
  let worst = 0;
  expected.forEach((row, p) => {
    worst = Math.max(worst, relativeError(all.subarray(p * vocab, (p + 1) * vocab), row));
  });
  return worst;
}
