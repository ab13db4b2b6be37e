// A library deployment's speculative decoding setting, as the API and the CLI take it and the
// database stores it:
//   "ngram:<k>"  prompt lookup: up to k tokens guessed from the request's own text per step
//                (native/llm/prompt_lookup.h);
//   "draft:<k>"  a draft model: up to k tokens guessed by the greedy decoding of a smaller GGUF of
//                the same vocabulary (`draft_model`, a file of MODELS_DIR; native/llm/draft_model.h).
// Either way the engine verifies the guesses in the decoding step and the output is the one plain
// decoding gives; what changes is the tokens per step where the guesses are right.
import { invalidArgument } from '../../errors.js';

/** The largest k a deployment may ask for (the engine takes up to 32; past 16 a miss costs more than a hit gains). */
export const MAX_SPECULATIVE_TOKENS = 16;

/** The JSON Schema pattern of the setting: ngram:1 to ngram:16, draft:1 to draft:16. */
export const SPECULATIVE_PATTERN = '^(ngram|draft):([1-9]|1[0-6])$';
/** The same, as a RegExp (groups: the method, k). */
export const SPECULATIVE_SETTING = new RegExp(SPECULATIVE_PATTERN);

/** The draft length a deployment with a draft model and no `speculative` gets. */
export const DEFAULT_DRAFT_SETTING = 'draft:4';

/** The engine's speculativeTokens for a stored setting (0 for none). */
export function speculativeTokens(setting: string | null): number {
  if (setting === null) return 0;
  const m = SPECULATIVE_SETTING.exec(setting);
  if (!m) throw new Error(`speculative setting "${setting}" is not ngram:<k> or draft:<k> with k in 1..${MAX_SPECULATIVE_TOKENS}`);
  return Number(m[2]);
}

/**
 * The setting a deploy stores, given what it asked for: a draft model alone means draft:4; a
 * draft:<k> needs a draft model and ngram:<k> takes none (a 400 naming the field otherwise).
 */
export function speculativeSetting(speculative: string | null, draftModel: string | null): string | null {
  if (draftModel !== null) {
    if (speculative === null) return DEFAULT_DRAFT_SETTING;
    if (!speculative.startsWith('draft:')) throw invalidArgument(`speculative "${speculative}" drafts by prompt lookup and takes no draft_model; use draft:<k> with a draft model`, 'speculative');
    return speculative;
  }
  if (speculative !== null && speculative.startsWith('draft:')) throw invalidArgument(`speculative "${speculative}" needs draft_model: a GGUF file of MODELS_DIR with the model's vocabulary`, 'draft_model');
  return speculative;
}
