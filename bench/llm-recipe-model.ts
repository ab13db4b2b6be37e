// Mixed-recipe files of the TinyLlama-shaped bench model, as people download them: llama-quantize
// (from the native llama.cpp build, bench/support/native-llama-cpp.ts) applied to the F16 file of
// bench/llm-model.ts. A recipe mixes types per tensor (Q4_K_M: Q4_K with Q6_K for the output and
// some attn_v / ffn_down; Q5_K_M: Q5_K + Q6_K; Q3_K_M: Q3_K with Q4_K / Q5_K / Q6_K), which the
// all-one-type files of llm-model.ts cannot show. Written once into bench/out/llm/.
import { existsSync, renameSync, rmSync, statSync } from 'node:fs';
import path from 'node:path';

import { benchModelPath, ensureBenchModel, LLM_OUT_DIR } from './llm-model.js';
import { llamaQuantize, type NativeLlamaCpp } from './support/native-llama-cpp.js';

export const RECIPES = ['Q4_K_M', 'Q5_K_M', 'Q3_K_M'] as const;
export type Recipe = (typeof RECIPES)[number];

export function isRecipe(t: string): t is Recipe {
  return (RECIPES as readonly string[]).includes(t);
}

export function recipeModelPath(recipe: Recipe): string {
  // Named after the F16 source, so a new generator version makes new recipe files too.
  const f16 = path.basename(benchModelPath('F16'), '.gguf');
  return path.join(LLM_OUT_DIR, `${f16.replace('-f16.', `-${recipe.toLowerCase()}.`)}.gguf`);
}

/** The `recipe` file, made first (F16 source, then llama-quantize) if it is not cached yet. */
export async function ensureRecipeModel(recipe: Recipe, native: NativeLlamaCpp | null, threads: number, log: (s: string) => void = () => {}): Promise<string> {
  const file = recipeModelPath(recipe);
  if (existsSync(file)) return file;
  if (!native) throw new Error(`no native llama.cpp build to make ${recipe} with (npm run bench:llama-cpp -- build, or LLAMA_CPP_BIN_DIR)`);
  const source = await ensureBenchModel('F16', log);
  const started = performance.now();
  const tmp = `${file}.tmp-${process.pid}`;
  try {
    await llamaQuantize(native, source, tmp, recipe, threads);
    renameSync(tmp, file);
  } finally {
    rmSync(tmp, { force: true });
  }
  log(
    `llama-quantize ${recipe}: ${path.relative(process.cwd(), file)} (${(statSync(file).size / 2 ** 30).toFixed(2)} GiB) ` +
      `in ${((performance.now() - started) / 1000).toFixed(1)} s`,
  );
  return file;
}
