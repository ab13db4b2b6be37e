// The vocabulary as llama.cpp's llama_vocab::impl::load builds it from `tokenizer.ggml.*`: token
// texts, scores and attributes, the special token ids with llama.cpp's per-model defaults, the
// add-BOS/EOS and space-prefix flags, BPE merge ranks, the end-of-generation set, and the list of
// special tokens that `parseSpecial` looks for in text. Every rule here changes token ids or
// decoded text somewhere, so each one follows llama.cpp (named in the comments), including its
// text-based detection of control tokens.

import { GgufError } from '../gguf/errors.js';
import type { GgufMetadata } from '../gguf/metadata.js';
import { TokenizerError } from './errors.js';
import { preTokenizer, supportedPreTokenizers, type PreTokenizer } from './pre-tokenizers.js';
import { utf8Length } from './unicode.js';

/** llama_token_attr bits. */
export const TokenAttr = {
  UNDEFINED: 0,
  UNKNOWN: 1 << 0,
  UNUSED: 1 << 1,
  NORMAL: 1 << 2,
  CONTROL: 1 << 3,
  USER_DEFINED: 1 << 4,
  BYTE: 1 << 5,
  /** Swallows the whitespace before it when cut out of text. */
  LSTRIP: 1 << 7,
  /** Swallows the whitespace after it when cut out of text. */
  RSTRIP: 1 << 8,
} as const;

/** GGUF token types (tokenizer.ggml.token_type) to attributes. */
const TYPE_TO_ATTR: Record<number, number> = {
  0: TokenAttr.UNDEFINED,
  1: TokenAttr.NORMAL,
  2: TokenAttr.UNKNOWN,
  3: TokenAttr.CONTROL,
  4: TokenAttr.USER_DEFINED,
  5: TokenAttr.UNUSED,
  6: TokenAttr.BYTE,
};

/** No token (LLAMA_TOKEN_NULL). */
export const NO_TOKEN = -1;

/** llama: SentencePiece; gpt2: byte-level BPE; bert: WordPiece. */
export type TokenizerModel = 'llama' | 'gpt2' | 'bert';

export interface Vocab {
  model: TokenizerModel;
  /** `tokenizer.ggml.pre` as written ('' when absent). */
  preName: string;
  /** The byte-level BPE pre-tokenizer (gpt2 only). */
  pre: PreTokenizer | null;
  tokens: readonly string[];
  scores: Float32Array;
  attrs: Uint16Array;
  tokenToId: ReadonlyMap<string, number>;
  /** BPE merge ranks: bpeRanks.get(left)?.get(right) (gpt2 only). */
  bpeRanks: ReadonlyMap<string, ReadonlyMap<string, number>>;
  bos: number;
  eos: number;
  eot: number;
  unk: number;
  pad: number;
  /** WordPiece: [SEP], added after the text with addSpecial (tokenizer.ggml.seperator_token_id, default 102). */
  sep: number;
  eog: ReadonlySet<number>;
  addBos: boolean;
  addEos: boolean;
  /** WordPiece: add [SEP] at the end (tokenizer.ggml.add_sep_token, default true). */
  addSep: boolean;
  /** WordPiece normalizer (tokenizer.ggml.normalizer.lowercase / .strip_accents, default true / as lowercase). */
  lowercase: boolean;
  stripAccents: boolean;
  /** SentencePiece: a space is put before the text (and removed again when decoding). */
  addSpacePrefix: boolean;
  /** Decoding removes spaces before punctuation (llama.cpp's clean_spaces). */
  cleanSpaces: boolean;
  ignoreMerges: boolean;
  /** Control, user-defined and unknown tokens, longest text first: what special-token parsing looks for. */
  specialTokens: readonly number[];
}

const K = (name: string) => `tokenizer.ggml.${name}`;

// Texts llama.cpp treats as control tokens whatever the file says (llama-vocab.cpp: "auto-detect
// special tokens by text"), and those that also end generation.
const EOT_TEXTS = ['<|eot_id|>', '<|im_end|>', '<|end|>', '<end_of_turn>', '<|endoftext|>', '<|end_of_text|>', '<EOT>', '_<EOT>', '[EOT]', '<｜end▁of▁sentence｜>', '<end_of_utterance>'];
const EOM_TEXTS = ['<|eom_id|>'];
const FIM_TEXTS = {
  pre: ['<|fim_prefix|>', '<fim-prefix>', '<fim_prefix>', '<｜fim▁begin｜>', '<PRE>', '▁<PRE>', '<|code_prefix|>', '<|prefix|>'],
  suf: ['<|fim_suffix|>', '<fim-suffix>', '<fim_suffix>', '<｜fim▁hole｜>', '<SUF>', '▁<SUF>', '<|code_suffix|>', '<|suffix|>'],
  mid: ['<|fim_middle|>', '<fim-middle>', '<fim_middle>', '<｜fim▁end｜>', '<MID>', '▁<MID>', '<|code_middle|>', '<|middle|>'],
  pad: ['<|fim_pad|>', '<fim-pad>', '<fim_pad>', '<PAD>', '[PAD]'],
  rep: ['<|fim_repo|>', '<|repo_name|>', '<fim-repo>', '<REPO>', '<reponame>'],
  sep: ['<|file_sep|>'],
};
const EOG_TEXTS = [
  '<|eot_id|>', '<|im_end|>', '<|end|>', '<|return|>', '<|call|>', '<|flush|>', '<|calls|>', '<end_of_turn>', '<|endoftext|>',
  '</s>', '<|eom_id|>', '<EOT>', '_<EOT>', '[EOT]', '[EOS]', '<|end_of_text|>', '<end_of_utterance>', '<eos>', '<turn|>',
  '<|tool_response>', '<｜end▁of▁sentence｜>', '[e~[',
];
/** gpt-oss channel markers that llama.cpp always renders (forced to user-defined). */
const ALWAYS_RENDERED = ['<|channel|>', '<|message|>', '<|start|>', '<|constrain|>'];

/**
 * llama.cpp's two corrections of the text-based EOG set: gpt-oss (o200k_harmony) and solar-open
 * end a message, not the turn, with <|end|> when <|return|> / <|call|> (or <|calls|> / <|flush|>)
 * exist, so <|end|> is dropped and becomes user-defined (rendered); Gemma 4 has <|tool_response>
 * and its </s> is an ordinary token.
 */
function dropFalseEog(eog: Set<number>, tokens: readonly string[], attrs: Uint16Array): void {
  const byText = new Map<string, number>();
  for (const id of eog) if (id >= 0 && id < tokens.length) byText.set(tokens[id]!, id);
  const has = (t: string) => byText.has(t);
  const end = byText.get('<|end|>');
  if (end !== undefined && ((has('<|return|>') && (has('<|call|>') || has('<|calls|>'))) || ((has('<|call|>') || has('<|calls|>')) && has('<|flush|>')))) {
    eog.delete(end);
    attrs[end] = TokenAttr.USER_DEFINED;
  }
  const s = byText.get('</s>');
  if (s !== undefined && has('<|tool_response>')) {
    eog.delete(s);
    attrs[s] = TokenAttr.NORMAL;
  }
}

/**
 * llama.cpp's whitespace-stripping special tokens, chosen by name as it does: Phi-3's special
 * tokens eat the whitespace after them (<|end|>\n<|assistant|> is two tokens), except <unk>,
 * <s> and <|endoftext|>; some BERTs' mask token eats the whitespace before it.
 */
function setStripAttributes(m: GgufMetadata, preName: string, tokenToId: ReadonlyMap<string, number>, specialTokens: readonly number[], attrs: Uint16Array): void {
  const name = (meta(() => m.optString('general.name')) ?? '').replace(/[A-Z]/g, (c) => c.toLowerCase());
  const arch = meta(() => m.optString('general.architecture')) ?? '';
  const set = (text: string, attr: number, on: boolean) => {
    const id = tokenToId.get(text);
    if (id !== undefined) attrs[id] = on ? attrs[id]! | attr : attrs[id]! & ~attr;
  };
  if (['jina-v2-de', 'jina-v2-es', 'jina-v2-code'].some((p) => preName.includes(p)) || ['nomic-bert-moe', 'jina-bert-v3'].some((a) => arch.includes(a))) {
    set('<mask>', TokenAttr.LSTRIP, true);
  } else if (name.includes('phi-3') || name.includes('phi3')) {
    for (const id of specialTokens) attrs[id] = attrs[id]! | TokenAttr.RSTRIP;
    set('</s>', TokenAttr.RSTRIP, true);
    for (const t of ['<unk>', '<s>', '<|endoftext|>']) set(t, TokenAttr.RSTRIP, false);
  } else if (name.includes('modern-bert')) {
    set('[MASK]', TokenAttr.LSTRIP, true);
  }
}

/** Converts metadata type errors into tokenizer errors (the caller sees one error class). */
function meta<T>(read: () => T): T {
  try {
    return read();
  } catch (e) {
    if (e instanceof GgufError) throw new TokenizerError(e.message);
    throw e;
  }
}

export function loadVocab(m: GgufMetadata): Vocab {
  const modelName = meta(() => m.optString(K('model')));
  if (modelName === undefined) throw new TokenizerError('the GGUF has no tokenizer: tokenizer.ggml.model is missing');
  if (modelName !== 'llama' && modelName !== 'gpt2' && modelName !== 'bert') {
    throw new TokenizerError(`unsupported tokenizer.ggml.model "${modelName}" (supported: llama, gpt2, bert)`);
  }
  const model: TokenizerModel = modelName;
  const preName = meta(() => m.optString(K('pre'))) ?? '';

  // Per-model defaults (impl::load), before the file's keys override them.
  let bos: number, eos: number, unk: number;
  let addBos: boolean, addSpacePrefix: boolean, cleanSpaces: boolean, ignoreMerges: boolean;
  let pre: PreTokenizer | null = null;
  let sep = NO_TOKEN;
  let pad = NO_TOKEN;
  let addSep = false;
  if (model === 'bert') {
    // llama.cpp's WPM defaults: BERT's [CLS] 101, [UNK] 100, [SEP] 102, [PAD] 0.
    [bos, eos, unk, sep, pad] = [101, NO_TOKEN, 100, 102, 0];
    addBos = true;
    addSep = true;
    addSpacePrefix = false;
    cleanSpaces = true;
    ignoreMerges = false;
  } else if (model === 'llama') {
    [bos, eos, unk] = [1, 2, 0];
    addBos = true;
    addSpacePrefix = true;
    cleanSpaces = false;
    ignoreMerges = false;
  } else {
    [bos, eos, unk] = [11, 11, NO_TOKEN];
    pre = preTokenizer(preName) ?? null;
    if (!pre) {
      throw new TokenizerError(
        `unsupported tokenizer.ggml.pre "${preName}" (supported: ${supportedPreTokenizers().join(', ')})`,
      );
    }
    addBos = pre.addBos;
    addSpacePrefix = false;
    cleanSpaces = pre.cleanSpaces;
    ignoreMerges = pre.ignoreMerges;
  }
  let addEos = false;
  addSpacePrefix = meta(() => m.optBool(K('add_space_prefix'))) ?? addSpacePrefix;

  const tokensIn = meta(() => m.optStringArray(K('tokens')));
  if (!tokensIn) throw new TokenizerError('the GGUF has no vocabulary: tokenizer.ggml.tokens is missing');
  const n = tokensIn.length;
  if (n === 0) throw new TokenizerError('tokenizer.ggml.tokens is empty');

  const scoresIn = meta(() => m.optArray<Float32Array | Int32Array>(K('scores'), ['FLOAT32', 'INT32']));
  if (scoresIn && scoresIn.length < n) throw new TokenizerError(`tokenizer.ggml.scores has ${scoresIn.length} entries for ${n} tokens`);
  const typesIn = meta(() => m.optArray<Int32Array>(K('token_type'), ['INT32']));
  if (typesIn && typesIn.length < n) throw new TokenizerError(`tokenizer.ggml.token_type has ${typesIn.length} entries for ${n} tokens`);

  const tokens: string[] = new Array<string>(n);
  const scores = new Float32Array(n);
  const attrs = new Uint16Array(n);
  const tokenToId = new Map<string, number>();
  for (let i = 0; i < n; i++) {
    // An empty entry would be unreachable and ambiguous; llama.cpp renames it the same way.
    const text = tokensIn[i] === '' ? `[EMPTY_${i}]` : tokensIn[i]!;
    tokens[i] = text;
    tokenToId.set(text, i); // a duplicate text maps to its last id, as in llama.cpp
    scores[i] = scoresIn ? scoresIn[i]! : 0;
    attrs[i] = typesIn ? (TYPE_TO_ATTR[typesIn[i]!] ?? TokenAttr.UNDEFINED) : TokenAttr.NORMAL;
  }

  const bpeRanks = new Map<string, Map<string, number>>();
  if (model === 'gpt2') {
    const merges = meta(() => m.optStringArray(K('merges')));
    if (!merges) throw new TokenizerError('tokenizer.ggml.merges is missing (a gpt2 tokenizer needs its BPE merges)');
    for (let i = 0; i < merges.length; i++) {
      const merge = merges[i]!;
      const space = merge.indexOf(' ', 1);
      if (space < 0) throw new TokenizerError(`tokenizer.ggml.merges[${i}] "${merge}" is not two tokens separated by a space`);
      const left = merge.slice(0, space);
      const right = merge.slice(space + 1);
      for (const part of [left, right]) {
        if (!tokenToId.has(part)) throw new TokenizerError(`tokenizer.ggml.merges[${i}] "${merge}" names "${part}", which is not in the vocabulary`);
      }
      let byRight = bpeRanks.get(left);
      if (!byRight) bpeRanks.set(left, (byRight = new Map()));
      if (!byRight.has(right)) byRight.set(right, i); // the first rank wins (unordered_map::emplace)
    }
  }

  // Special ids: defaults out of range are disabled; a key in range replaces the default.
  const idKey = (name: string, fallback: number): number => {
    let id = fallback >= n ? NO_TOKEN : fallback;
    const v = meta(() => m.optInteger(K(name)));
    if (v !== undefined && v >= 0 && v < n) id = v;
    return id;
  };
  bos = idKey('bos_token_id', bos);
  eos = idKey('eos_token_id', eos);
  let eot = idKey('eot_token_id', NO_TOKEN);
  let eom = idKey('eom_token_id', NO_TOKEN);
  unk = idKey('unknown_token_id', unk);
  pad = idKey('padding_token_id', pad);
  sep = idKey('seperator_token_id', sep); // llama.cpp's key, spelled as it spells it
  const fim = {
    // the deprecated keys come later in llama.cpp's list, so they win
    pre: idKey('prefix_token_id', idKey('fim_pre_token_id', NO_TOKEN)),
    suf: idKey('suffix_token_id', idKey('fim_suf_token_id', NO_TOKEN)),
    mid: idKey('middle_token_id', idKey('fim_mid_token_id', NO_TOKEN)),
    pad: idKey('fim_pad_token_id', NO_TOKEN),
    rep: idKey('fim_rep_token_id', NO_TOKEN),
    sep: idKey('fim_sep_token_id', NO_TOKEN),
  };

  addBos = meta(() => m.optBool(K('add_bos_token'))) ?? addBos;
  addEos = meta(() => m.optBool(K('add_eos_token'))) ?? addEos;
  addSep = meta(() => m.optBool(K('add_sep_token'))) ?? addSep;
  const lowercase = meta(() => m.optBool(K('normalizer.lowercase'))) ?? true;
  const stripAccents = meta(() => m.optBool(K('normalizer.strip_accents'))) ?? lowercase;
  if (model === 'bert') {
    // llama.cpp asserts these when adding special tokens; a clear refusal here instead.
    if (bos === NO_TOKEN) throw new TokenizerError('the WordPiece vocabulary has no [CLS]: tokenizer.ggml.bos_token_id is not set and id 101 is out of range');
    if (sep === NO_TOKEN) throw new TokenizerError('the WordPiece vocabulary has no [SEP]: tokenizer.ggml.seperator_token_id is not set and id 102 is out of range');
    if (unk === NO_TOKEN) throw new TokenizerError('the WordPiece vocabulary has no [UNK]: tokenizer.ggml.unknown_token_id is not set and id 100 is out of range');
  }
  if (addBos && bos === NO_TOKEN) throw new TokenizerError('tokenizer.ggml.add_bos_token is true, but tokenizer.ggml.bos_token_id is not set');
  if (addEos && eos === NO_TOKEN) throw new TokenizerError('tokenizer.ggml.add_eos_token is true, but tokenizer.ggml.eos_token_id is not set');

  // Text-based detection. When several texts qualify llama.cpp takes the first in its hash map's
  // order, which cannot be reproduced; we take the first in list order (<|im_end|> before
  // <|endoftext|>). Either way every candidate is control and end-of-generation below.
  const find = (texts: readonly string[]): number => {
    for (const t of texts) {
      const id = tokenToId.get(t);
      if (id !== undefined) return id;
    }
    return NO_TOKEN;
  };
  const markControl = (id: number) => {
    if (id !== NO_TOKEN) attrs[id]! |= TokenAttr.CONTROL;
  };
  if (eot === NO_TOKEN) markControl((eot = find(EOT_TEXTS)));
  if (eom === NO_TOKEN) markControl((eom = find(EOM_TEXTS)));
  for (const k of ['pre', 'suf', 'mid', 'pad', 'rep', 'sep'] as const) {
    if (fim[k] === NO_TOKEN) markControl((fim[k] = find(FIM_TEXTS[k])));
  }

  const eog = new Set<number>();
  for (const id of [fim.pad, fim.rep, fim.sep]) if (id !== NO_TOKEN) eog.add(id);
  for (const t of EOG_TEXTS) {
    const id = tokenToId.get(t);
    if (id !== undefined) {
      eog.add(id);
      markControl(id);
    }
  }
  for (const t of ALWAYS_RENDERED) {
    const id = tokenToId.get(t);
    if (id !== undefined) attrs[id] = TokenAttr.USER_DEFINED;
  }
  for (const id of [eos, eot, eom]) if (id !== NO_TOKEN) eog.add(id);
  dropFalseEog(eog, tokens, attrs);

  const specialTokens: number[] = [];
  for (let i = 0; i < n; i++) {
    if (attrs[i]! & (TokenAttr.CONTROL | TokenAttr.USER_DEFINED | TokenAttr.UNKNOWN)) specialTokens.push(i);
  }
  const bytes = new Map(specialTokens.map((id) => [id, utf8Length(tokens[id]!)]));
  specialTokens.sort((a, b) => bytes.get(b)! - bytes.get(a)! || a - b);
  setStripAttributes(m, preName, tokenToId, specialTokens, attrs);

  return {
    model,
    preName,
    pre,
    tokens,
    scores,
    attrs,
    tokenToId,
    bpeRanks,
    bos,
    eos,
    eot,
    unk,
    pad,
    sep,
    eog,
    addBos,
    addEos,
    addSep,
    lowercase,
    stripAccents,
    addSpacePrefix,
    cleanSpaces,
    ignoreMerges,
    specialTokens,
  };
}
