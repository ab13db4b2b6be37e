// Small but real vocabularies for tokenizer tests, trained here (deterministically, from a fixed
// corpus) so the test suite and the llama.cpp oracle (scripts/oracle/record.mjs) build the very
// same GGUF files without any download:
//
// - byteLevelBpeVocab(pre): GPT-2-style byte-level BPE, 256 byte tokens + merges learned from the
//   corpus + control tokens (<|begin_of_text|>, <|im_start|> ...) + one user-defined token;
// - sentencePieceVocab(): SentencePiece-style, <unk> <s> </s>, the 256 <0xXX> byte tokens, the
//   corpus's characters and pieces learned by merging, scored so that earlier merges win.
//
// Characters outside the corpus (most emoji, most CJK) have no piece, so the byte fallback paths
// are exercised.

import crypto from 'node:crypto';
import { regexSplit } from '../../src/llm/tokenizer/regex-split.js';
import { GPT2_REGEX, LLAMA3_REGEX, preTokenizer, QWEN2_REGEX } from '../../src/llm/tokenizer/pre-tokenizers.js';
import { byteToChar, codePoints, utf8Bytes } from '../../src/llm/tokenizer/unicode.js';
import type { TinyVocab } from './gguf-writer.js';

export const CORPUS = `Once upon a time, there was a little girl named Lily. She loved to play outside in the park.
One day, she saw a big, red ball. "Can I play with it?" she asked her mom. Her mom said, "Yes, you can!"
Lily and her friend Tom played all day. They were very happy. The sun was warm and the sky was blue.
The year 2024 had 366 days; 1,000,000 people counted 3.14159 and 42. Call 555-0100 at 10:30.
I'm sure it's fine. Don't worry, we'll see. They've gone and you'd know. I'd say we're done.
def tokenize(text):
    return [t for t in text.split(" ") if t]
if (a && b) { return c; } else { x = y + 1; }
naïve café über façade résumé Ångström señor niño
日本語のテキスト 中文 こんにちは
Привет мир, как дела? Hola, ¿qué tal? Ça va bien, merci!
<p>Hello <b>world</b></p> email@example.com https://example.com/path?q=1&r=2
DON'T SHOUT, I'M HERE, WE'LL GO. IT'S 1234567890 OR 12345 OR 2024-01-01 $1,000,000.00!!
    indented line\r\n\tand a tab (parenthesis) "quotes" [brackets] 100% 3.14
Hello , world . How are you ? Fine !
`;

/**
 * Strings where pre-tokenizers disagree, asked of every vocabulary after scripts/oracle's TEXTS:
 * whitespace runs, digit runs of every length, CJK, emoji sequences, combining marks, case
 * changes inside words, code, and text that almost spells a special token.
 */
export const AWKWARD_TEXTS = [
  '   \t  \n \t\t\n\n   x',
  'a  \n  b\n \n \n',
  'x\r\r\ny\r\n\r\n',
  'tabs\t\t\tat the end\t\t',
  ' \u00a0 \u3000 x \u2003y',
  '1 12 123 1234 12345 123456 1234567 12345678',
  '12345678901234567890',
  'a1b22c333d4444e55555',
  '3.14e-10 0x1F 0b1010 1e9',
  '٣٤٥ ١٢ ①②③ Ⅻ ½ ²',
  '我爱北京天安门。你好！',
  'カタカナとひらがな、漢字',
  '日本語ABC混合テキスト123です',
  '👩🏽‍💻🧑‍🤝‍🧑',
  '🇯🇵🇺🇸 ❤️‍🔥 1️⃣ #️⃣',
  'n\u0303 a\u0308\u0301 \u0915\u094d\u0937',
  'हिन्दी भाषा ภาษาไทย',
  'for (int i = 0; i < n; ++i) {\n\tsum += a[i];\n}',
  'const x = {"key": [1, 2.5, -3]};',
  '    def __init__(self):\n        self._x = None\n',
  'SELECT * FROM t WHERE id=42; -- done',
  'x // comment\n/* block */ #include <stdio.h>',
  '.NET #include @user $var ~/path ./run.sh',
  'camelCaseWord PascalCase snake_case kebab-case SCREAMING_CASE',
  'HelloWorld ABCdef aBC Abc iPhone eBay McDonald',
  'ǅungla ǈ ǋ Ǳ',
  'ﬁnancial ﬀ µ ß ẞ Straße',
  "it's It'S IT's l'homme c'est we'RE",
  '’s curly ‘quotes’ “double” — dash… ellipsis',
  'Hello世界Привет abcαβγабв',
  'ÀÉÎÕÜ àéîõü',
  '\ufeffBOM at start, x\ufeffy',
  '<|im_start|',
  '<end_of_turn >',
  '< |im_end| >',
  '<|eot_id|><|eot_id|>',
  '<start_of_turn>user\nHi<end_of_turn>\n<start_of_turn>model\n',
  '<|start|>assistant<|channel|>final<|message|>Hi<|end|><|return|>',
  '<|im_start|><|im_end|>',
  '<|endoftext|>x<|endoftext|',
  '[INST][/INST]',
  '<|begin_of_text|><|start_header_id|>user<|end_header_id|>\n\nHi<|eot_id|>',
  '<|system|>\nBe brief.<|end|>\n<|user|>\n  Hi \n<|end|>\n<|assistant|>\n',
  'text  <|system|>  spaced \t\n<table> cell <unused0>\n\n',
];

const TRAIN_TEXT = CORPUS.repeat(3) + 'the the the and and and ing ing ed ed er er ';


/** Most frequent adjacent pair of `words` (weighted by count); ties by the pair's text. */
function bestPair(words: Map<string[], number>): [string, string] | undefined {
  const counts = new Map<string, number>();
  for (const [syms, count] of words) {
    for (let i = 1; i < syms.length; i++) {
      const k = `${syms[i - 1]}\u0000${syms[i]}`;
      counts.set(k, (counts.get(k) ?? 0) + count);
    }
  }
  let best: string | undefined;
  let bestCount = 1; // a pair seen once is not worth a token
  for (const [k, c] of counts) {
    if (c > bestCount || (c === bestCount && best !== undefined && k < best)) {
      best = k;
      bestCount = c;
    }
  }
  if (best === undefined) return undefined;
  const [a, b] = best.split('\u0000') as [string, string];
  return [a, b];
}

function applyMerge(words: Map<string[], number>, a: string, b: string): void {
  for (const syms of words.keys()) {
    for (let i = 1; i < syms.length; i++) {
      if (syms[i - 1] === a && syms[i] === b) {
        syms.splice(i - 1, 2, a + b);
      }
    }
  }
}

function countWords(words: string[][]): Map<string[], number> {
  const byText = new Map<string, { syms: string[]; count: number }>();
  for (const syms of words) {
    const k = syms.join('\u0001');
    const e = byText.get(k);
    if (e) e.count++;
    else byText.set(k, { syms, count: 1 });
  }
  return new Map([...byText.values()].map((e) => [e.syms, e.count]));
}

function train(words: string[][], nMerges: number): [string, string][] {
  const counted = countWords(words);
  const merges: [string, string][] = [];
  for (let i = 0; i < nMerges; i++) {
    const pair = bestPair(counted);
    if (!pair) break;
    merges.push(pair);
    applyMerge(counted, pair[0], pair[1]);
  }
  return merges;
}

const TOKEN_TYPE = { normal: 1, unknown: 2, control: 3, userDefined: 4, byte: 6 } as const;

/** A string's UTF-8 bytes spelled in GPT-2's byte alphabet, as byte-level BPE vocabularies write tokens. */
function byteEncode(text: string): string {
  let out = '';
  for (const b of utf8Bytes(text)) out += byteToChar(b);
  return out;
}

/**
 * Control tokens of the chat formats of gpt-oss (harmony: <|end|> ends a message, <|return|> /
 * <|call|> the turn), Gemma and Llama 3, for the vocabularies of the newer pre-tokenizers.
 */
export const CHAT_CONTROL_TOKENS = ['<|start|>', '<|channel|>', '<|message|>', '<|end|>', '<|return|>', '<|call|>', '<start_of_turn>', '<end_of_turn>', '<|eot_id|>'];

/**
 * A byte-level BPE vocabulary for `tokenizer.ggml.pre` = `pre` (undefined: no key). `wide`: the
 * newer pre-tokenizers' vocabularies, trained also on AWKWARD_TEXTS and on the words gpt-4o,
 * tekken, deepseek-v3 and qwen35 cut, with CHAT_CONTROL_TOKENS after the usual control tokens.
 */
export function byteLevelBpeVocab(pre: string | undefined, flags: Partial<TinyVocab> = {}, specialIds = true, wide = false): TinyVocab {
  // Words as several pre-tokenizers cut them, so that some merges (digit runs, a space before a
  // bracket, uppercase contractions, camelCase) are reachable under one pre-tokenizer and not another.
  // (not the near-special strings: a learned token must not spell a control token)
  const awkward = AWKWARD_TEXTS.filter((t) => !/<[|a-z_]/.test(t)).join('\n');
  const cpts = codePoints(wide ? TRAIN_TEXT + awkward.repeat(2) : TRAIN_TEXT);
  const words: string[][] = [];
  const families = [[GPT2_REGEX], [LLAMA3_REGEX], [QWEN2_REGEX], preTokenizer(undefined)!.regexes];
  if (wide) families.push(...['gpt-4o', 'tekken', 'deepseek-v3', 'qwen35'].map((p) => preTokenizer(p)!.regexes));
  for (const regexes of families) {
    let from = 0;
    for (const n of regexSplit(cpts, regexes)) {
      words.push(Array.from(byteEncode(String.fromCodePoint(...cpts.subarray(from, from + n)))));
      from += n;
    }
  }
  const merges = train(words, wide ? 1500 : 600);
  const tokens: string[] = [];
  for (let b = 0; b < 256; b++) tokens.push(byteToChar(b));
  for (const [a, b] of merges) tokens.push(a + b);
  const types: number[] = tokens.map(() => TOKEN_TYPE.normal);
  const special = ['<|begin_of_text|>', '<|end_of_text|>', '<|im_start|>', '<|im_end|>', '<|endoftext|>', ...(wide ? CHAT_CONTROL_TOKENS : [])];
  for (const s of special) {
    tokens.push(s);
    types.push(TOKEN_TYPE.control);
  }
  tokens.push('<think>');
  types.push(TOKEN_TYPE.userDefined);
  const id = (t: string) => tokens.indexOf(t);
  return {
    model: 'gpt2',
    tokens,
    tokenTypes: Int32Array.from(types),
    merges: merges.map(([a, b]) => `${a} ${b}`),
    ...(pre !== undefined ? { pre } : {}),
    ...(specialIds ? { bosId: id('<|begin_of_text|>'), eosId: id('<|end_of_text|>') } : {}),
    ...flags,
  };
}

/** A SentencePiece-style vocabulary (scores = -merge order, characters below every merge). */
export function sentencePieceVocab(flags: Partial<TinyVocab> = {}, style: 'llama' | 'gemma' | 'phi3' = 'llama'): TinyVocab {
  const words: string[][] = TRAIN_TEXT.split(/\s+/)
    .filter((w) => w.length > 0)
    .map((w) => Array.from('\u2581' + w));
  const chars = [...new Set(words.flat())].sort();
  const merges = train(words, 300);

  // Gemma: <pad> <eos> <bos> <unk> first, whitespace runs as pieces, no leading space
  const gemma = style === 'gemma';
  const tokens = gemma ? ['<pad>', '<eos>', '<bos>', '<unk>'] : ['<unk>', '<s>', '</s>'];
  const types: number[] = gemma
    ? [TOKEN_TYPE.control, TOKEN_TYPE.control, TOKEN_TYPE.control, TOKEN_TYPE.unknown]
    : [TOKEN_TYPE.unknown, TOKEN_TYPE.control, TOKEN_TYPE.control];
  const scores: number[] = tokens.map(() => 0);
  for (let b = 0; b < 256; b++) {
    tokens.push(`<0x${b.toString(16).toUpperCase().padStart(2, '0')}>`);
    types.push(TOKEN_TYPE.byte);
    scores.push(0);
  }
  const seen = new Set(tokens);
  merges.forEach(([a, b], i) => {
    if (seen.has(a + b)) return;
    seen.add(a + b);
    tokens.push(a + b);
    types.push(TOKEN_TYPE.normal);
    scores.push(-i);
  });
  chars.forEach((c, i) => {
    if (seen.has(c)) return;
    seen.add(c);
    tokens.push(c);
    types.push(TOKEN_TYPE.normal);
    scores.push(-1000 - i);
  });
  const add = (text: string, type: number, score = 0) => {
    tokens.push(text);
    types.push(type);
    scores.push(score);
  };
  add('<|im_start|>', TOKEN_TYPE.control);
  add('<|im_end|>', TOKEN_TYPE.control);
  add('<extra>', TOKEN_TYPE.userDefined);
  if (gemma) {
    for (const ws of ['\n', '\n\n', '\t', '\u2581\u2581', '\u2581\u2581\u2581\u2581']) add(ws, TOKEN_TYPE.normal, -1);
    add('<start_of_turn>', TOKEN_TYPE.control);
    add('<end_of_turn>', TOKEN_TYPE.control);
    add('<unused0>', TOKEN_TYPE.userDefined);
    add('<table>', TOKEN_TYPE.userDefined);
  }
  if (style === 'phi3') {
    for (const t of ['<|endoftext|>', '<|assistant|>', '<|end|>', '<|user|>']) add(t, TOKEN_TYPE.control);
    add('<|system|>', TOKEN_TYPE.userDefined);
  }
  return {
    model: 'llama',
    tokens,
    scores: Float32Array.from(scores),
    tokenTypes: Int32Array.from(types),
    bosId: gemma ? 2 : 1,
    eosId: gemma ? 1 : 2,
    unknownId: gemma ? 3 : 0,
    ...(gemma ? { paddingId: 0, addSpacePrefix: false } : {}),
    ...flags,
  };
}

/** A stable fingerprint of a vocabulary, recorded with the oracle data to catch drift. */
export function vocabFingerprint(v: TinyVocab): string {
  const plain = {
    ...v,
    scores: v.scores ? Array.from(v.scores) : undefined,
    tokenTypes: v.tokenTypes ? Array.from(v.tokenTypes) : undefined,
  };
  return crypto.createHash('sha256').update(JSON.stringify(plain)).digest('hex');
}

/** The generated models the oracle records and the tests rebuild, by name. */
export const GENERATED_VOCABS: Record<string, () => TinyVocab> = {
  'bpe-llama-bpe': () => byteLevelBpeVocab('llama-bpe'),
  'bpe-qwen2': () => byteLevelBpeVocab('qwen2', { addBos: false }),
  'bpe-default': () => byteLevelBpeVocab(undefined, { addBos: true, addEos: true }),
  // no bos/eos keys: llama.cpp's byte-level defaults (id 11) apply
  'bpe-gpt-2': () => byteLevelBpeVocab('gpt-2', {}, false),
  'spm-tiny': () => sentencePieceVocab(),
  // the pre-tokenizers of gpt-oss, Mistral Nemo / Small 3, DeepSeek, Falcon, Seed-Coder, SmolLM2, Qwen 3.5
  'bpe-gpt-4o': () => byteLevelBpeVocab('gpt-4o', {}, true, true),
  'bpe-tekken': () => byteLevelBpeVocab('tekken', {}, true, true),
  'bpe-deepseek-llm': () => byteLevelBpeVocab('deepseek-llm', { addBos: true }, true, true),
  'bpe-deepseek-v3': () => byteLevelBpeVocab('deepseek-v3', { addBos: true }, true, true),
  'bpe-deepseek-coder': () => byteLevelBpeVocab('deepseek-coder', {}, true, true),
  'bpe-falcon': () => byteLevelBpeVocab('falcon', {}, true, true),
  'bpe-seed-coder': () => byteLevelBpeVocab('seed-coder', {}, true, true),
  'bpe-smollm': () => byteLevelBpeVocab('smollm', {}, true, true),
  'bpe-qwen35': () => byteLevelBpeVocab('qwen35', {}, true, true),
  // SentencePiece as Gemma 2 / 3 and Phi-3 / 3.5 ship it
  'spm-gemma': () => sentencePieceVocab({}, 'gemma'),
  'spm-phi3': () => sentencePieceVocab({}, 'phi3'),
};

/**
 * general.name of the generated models whose name llama.cpp reads (Phi-3's special tokens strip
 * the whitespace after them by name); the others get the writer's default.
 */
export const GENERATED_MODEL_NAMES: Record<string, string> = { 'spm-phi3': 'Phi-3 Mini Tiny' };
