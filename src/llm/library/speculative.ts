// A library deployment's speculative decoding setting, as the API and the CLI take it and the
// database stores it: "ngram:<k>", prompt lookup with up to k draft tokens verified per step
// (native/llm/prompt_lookup.h). The output is the one plain decoding gives; what it changes is
// the tokens per step where the answer repeats its input. A draft model is not offered yet.

/** The largest k a deployment may ask for (the engine takes up to 32; past 16 a miss costs more than a hit gains). */
export const MAX_SPECULATIVE_TOKENS = 16;

/** The JSON Schema pattern of the setting: ngram:1 to ngram:16. */
export const SPECULATIVE_PATTERN = '^ngram:([1-9]|1[0-6])$';

/** The engine's speculativeTokens for a stored setting (0 for none). */
export function speculativeTokens(setting: string | null): number {
  if (setting === null) return 0;
  const m = new RegExp(SPECULATIVE_PATTERN).exec(setting);
  if (!m) throw new Error(`speculative setting "${setting}" is not ngram:<k> with k in 1..${MAX_SPECULATIVE_TOKENS}`);
  return Number(m[1]);
}
