// WordPiece tokenization (tokenizer.ggml.model = "bert"), llama.cpp's llm_tokenizer_wpm_session:
//
// 1. Normalize (BertNormalizer as llama.cpp does it): with strip_accents, each code point is
//    replaced by the FIRST code point of its NFD decomposition (llama.cpp's table keeps only that
//    one: "é" -> "e", a Hangul syllable -> its leading jamo) and accent marks (\p{M}) are dropped;
//    with lowercase, each code point takes its simple (one code point) lowercase mapping.
// 2. Split: whitespace ends a word; NUL, U+FFFD and control characters (Cc, Cf, Co, Cs) vanish;
//    punctuation, ASCII symbols and CJK ideographs are words of their own.
// 3. Each word, prefixed with U+2581 (the converter stores word-initial pieces as "▁piece" and
//    "##piece" continuations as "piece"), is cut greedily into the longest vocabulary entries from
//    the left, comparing UTF-8 bytes; a word with a part that matches nothing becomes one [UNK].
// llama.cpp's tables come from Python's unicodedata; ours from the JavaScript engine's Unicode
// data, so a code point new in one Unicode version and not the other may differ.

import { codePoints } from './unicode.js';
import type { Vocab } from './vocab.js';

const WHITE_SPACE = /\p{White_Space}/u;
const CONTROL = /[\p{Cc}\p{Cf}\p{Co}\p{Cs}]/u;
const MARK = /\p{M}/u;
const PUNCTUATION = /\p{P}/u;
const SYMBOL = /\p{S}/u;

// Per code point: 0 not computed; else 1 + bits below.
const K_WS = 1, K_CTRL = 2, K_MARK = 4, K_PUNCT = 8, K_SYM = 16;
const classCache = new Uint8Array(0x110000);
function classOf(cpt: number): number {
  const c = classCache[cpt]!;
  if (c !== 0) return c - 1;
  const ch = String.fromCodePoint(cpt);
  const bits =
    (WHITE_SPACE.test(ch) ? K_WS : 0) | (CONTROL.test(ch) ? K_CTRL : 0) | (MARK.test(ch) ? K_MARK : 0) |
    (PUNCTUATION.test(ch) ? K_PUNCT : 0) | (SYMBOL.test(ch) ? K_SYM : 0);
  classCache[cpt] = bits + 1;
  return bits;
}

const nfdCache = new Map<number, number>();
/** llama.cpp's unicode_cpts_normalize_nfd for one code point: the first of its NFD decomposition. */
function nfdFirst(cpt: number): number {
  if (cpt < 0xc0) return cpt;
  let v = nfdCache.get(cpt);
  if (v === undefined) {
    v = String.fromCodePoint(cpt).normalize('NFD').codePointAt(0)!;
    nfdCache.set(cpt, v);
  }
  return v;
}

const lowerCache = new Map<number, number>();
/** UnicodeData's simple lowercase mapping (one code point), as llama.cpp's unicode_tolower. */
function toLower(cpt: number): number {
  if (cpt < 0x80) return cpt >= 0x41 && cpt <= 0x5a ? cpt + 32 : cpt;
  let v = lowerCache.get(cpt);
  if (v === undefined) {
    const lower = [...String.fromCodePoint(cpt).toLowerCase()];
    // Full mappings of more than one code point (U+0130 -> "i̇") start with the simple one.
    v = lower.length >= 1 ? lower[0]!.codePointAt(0)! : cpt;
    lowerCache.set(cpt, v);
  }
  return v;
}

function isChineseChar(c: number): boolean {
  return (
    (c >= 0x4e00 && c <= 0x9fff) ||
    (c >= 0x3400 && c <= 0x4dbf) ||
    (c >= 0x20000 && c <= 0x2a6df) ||
    (c >= 0x2a700 && c <= 0x2b73f) ||
    (c >= 0x2b740 && c <= 0x2b81f) ||
    (c >= 0x2b920 && c <= 0x2ceaf) || // llama.cpp (and HF's Rust code) start this block at 0x2B920
    (c >= 0xf900 && c <= 0xfaff) ||
    (c >= 0x2f800 && c <= 0x2fa1f)
  );
}

export interface WordPieceOptions {
  lowercase: boolean;
  stripAccents: boolean;
}

/** Step 1 and 2: the words of `text`, normalized. */
export function wordPieceWords(text: string, opts: WordPieceOptions): string[] {
  const words: string[] = [];
  let word = '';
  const finish = () => {
    if (word.length > 0) words.push(word);
    word = '';
  };
  for (let cpt of codePoints(text)) {
    if (opts.stripAccents) cpt = nfdFirst(cpt);
    const k = classOf(cpt);
    if (k & K_WS) {
      finish();
      continue;
    }
    if (cpt === 0 || cpt === 0xfffd || k & K_CTRL) continue;
    if (opts.stripAccents && k & K_MARK) continue;
    const s = String.fromCodePoint(opts.lowercase ? toLower(cpt) : cpt);
    if (k & K_PUNCT || (cpt < 0x7f && k & K_SYM) || isChineseChar(cpt)) {
      finish();
      words.push(s);
    } else {
      word += s;
    }
  }
  finish();
  return words;
}

/**
 * The vocabulary keyed by each entry's UTF-8 bytes as a Latin-1 string (one char per byte), so the
 * greedy match cuts at byte offsets exactly as llama.cpp's std::string substr does.
 */
export class WordPieceTable {
  readonly byBytes = new Map<string, number>();
  readonly maxLen: number;

  constructor(vocab: Vocab) {
    let max = 0;
    for (const [text, id] of vocab.tokenToId) {
      const key = Buffer.from(text, 'utf8').toString('latin1');
      this.byBytes.set(key, id);
      if (key.length > max) max = key.length;
    }
    this.maxLen = max;
  }
}

/** Appends the ids of `text` (a fragment without special tokens) to `out`. */
export function wpmTokenize(vocab: Vocab, table: WordPieceTable, opts: WordPieceOptions, text: string, out: number[]): void {
  for (const word of wordPieceWords(text, opts)) {
    const bytes = Buffer.from('\u2581' + word, 'utf8').toString('latin1');
    const n = bytes.length;
    const start = out.length;
    for (let i = 0; i < n; i++) {
      let matched = false;
      for (let j = Math.min(n, i + table.maxLen + 1); j > i; j--) {
        const id = table.byBytes.get(bytes.slice(i, j));
        if (id !== undefined) {
          out.push(id);
          matched = true;
          i = j - 1;
          break;
        }
      }
      if (!matched) {
        out.length = start; // the whole word becomes [UNK]
        break;
      }
    }
    if (out.length === start) out.push(vocab.unk);
  }
}
