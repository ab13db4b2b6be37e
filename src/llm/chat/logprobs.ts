// Token log-probabilities in the OpenAI shapes. The engine gives, per generated token, ln p of the
// token and of its most likely alternatives, computed from the logits after the frequency and
// presence penalties and before the grammar's mask, the temperature and the other filters (the
// model's own distribution, as vLLM reports it by default). Chat answers carry
// `choices[].logprobs.content[]` ({token, logprob, bytes, top_logprobs}); legacy completions the
// `{tokens, token_logprobs, top_logprobs, text_offset}` form.
import type { Tokenizer } from '../tokenizer/index.js';

/** One generated token with its log-probability and the top alternatives [token, logprob]. */
export interface TokenLogprob {
  readonly token: number;
  readonly logprob: number;
  readonly top: ReadonlyArray<readonly [number, number]>;
}

const utf8 = new TextDecoder('utf-8', { fatal: false, ignoreBOM: true });

/** A token's text as the answer shows it (special tokens as their text), and its bytes. */
function pieceOf(tokenizer: Tokenizer, token: number): { text: string; bytes: number[] } {
  const bytes = tokenizer.piece(token, true);
  return { text: utf8.decode(bytes), bytes: Array.from(bytes) };
}

/** `choices[].logprobs` of a chat answer or chunk. */
export function chatLogprobs(tokenizer: Tokenizer, entries: readonly TokenLogprob[]): { content: Array<Record<string, unknown>> } {
  return {
    content: entries.map((e) => {
      const { text, bytes } = pieceOf(tokenizer, e.token);
      return {
        token: text,
        logprob: e.logprob,
        bytes,
        top_logprobs: e.top.map(([id, lp]) => {
          const alt = pieceOf(tokenizer, id);
          return { token: alt.text, logprob: lp, bytes: alt.bytes };
        }),
      };
    }),
  };
}

/** The legacy completions form; `offset` is where the first token's text starts in the answer. */
export function textLogprobs(tokenizer: Tokenizer, entries: readonly TokenLogprob[], offset: number): { value: Record<string, unknown>; end: number } {
  const tokens: string[] = [];
  const textOffset: number[] = [];
  let at = offset;
  for (const e of entries) {
    const { text } = pieceOf(tokenizer, e.token);
    tokens.push(text);
    textOffset.push(at);
    at += text.length;
  }
  return {
    value: {
      tokens,
      token_logprobs: entries.map((e) => e.logprob),
      // Keyed by text: two tokens with one text keep the likelier one (alternatives come sorted).
      top_logprobs: entries.map((e) => {
        const top: Record<string, number> = {};
        for (const [id, lp] of e.top) top[pieceOf(tokenizer, id).text] ??= lp;
        return top;
      }),
      text_offset: textOffset,
    },
    end: at,
  };
}
