// Byte-level BPE (tokenizer.ggml.model = "gpt2"), llama.cpp's llm_tokenizer_bpe_session: split the
// text into words with the pre-tokenizer, spell each word's UTF-8 bytes in GPT-2's byte alphabet,
// then repeatedly merge the adjacent pair with the lowest merge rank (leftmost on ties). A final
// piece missing from the vocabulary falls back to its single-byte entries, and bytes that have
// none are dropped, as llama.cpp drops them.

import { Heap } from './heap.js';
import { regexSplit } from './regex-split.js';
import { byteToChar, codePoints } from './unicode.js';
import type { Vocab } from './vocab.js';

interface Bigram {
  left: number;
  right: number;
  rank: number;
  /** The merged text when queued; a different concatenation later means it is stale. */
  text: string;
}

const lowerRankFirst = (a: Bigram, b: Bigram) => a.rank < b.rank || (a.rank === b.rank && a.left < b.left);

/** A code point range's UTF-8 bytes in the byte alphabet. */
function encodeWord(cpts: Uint32Array, from: number, to: number): string {
  let s = '';
  for (let i = from; i < to; i++) {
    const c = cpts[i]!;
    if (c < 0x80) s += byteToChar(c);
    else if (c < 0x800) s += byteToChar(0xc0 | (c >> 6)) + byteToChar(0x80 | (c & 0x3f));
    else if (c < 0x10000) s += byteToChar(0xe0 | (c >> 12)) + byteToChar(0x80 | ((c >> 6) & 0x3f)) + byteToChar(0x80 | (c & 0x3f));
    else {
      s +=
        byteToChar(0xf0 | (c >> 18)) +
        byteToChar(0x80 | ((c >> 12) & 0x3f)) +
        byteToChar(0x80 | ((c >> 6) & 0x3f)) +
        byteToChar(0x80 | (c & 0x3f));
    }
  }
  return s;
}

/** Appends the ids of `text` to `out`. */
export function bpeTokenize(vocab: Vocab, text: string, out: number[]): void {
  const pre = vocab.pre!;
  const cpts = codePoints(text);
  let from = 0;
  for (const length of regexSplit(cpts, pre.regexes)) {
    const word = encodeWord(cpts, from, from + length);
    from += length;
    mergeWord(vocab, word, out);
  }
}

function mergeWord(vocab: Vocab, word: string, out: number[]): void {
  if (vocab.ignoreMerges) {
    const whole = vocab.tokenToId.get(word);
    if (whole !== undefined) {
      out.push(whole);
      return;
    }
  }
  // Every character of an encoded word is one byte and one UTF-16 unit.
  const n = word.length;
  const sym = Array.from(word);
  const prev = new Int32Array(n);
  const next = new Int32Array(n);
  for (let i = 0; i < n; i++) {
    prev[i] = i - 1;
    next[i] = i + 1 === n ? -1 : i + 1;
  }
  const queue = new Heap<Bigram>(lowerRankFirst);
  const tryAdd = (left: number, right: number) => {
    if (left === -1 || right === -1) return;
    const rank = vocab.bpeRanks.get(sym[left]!)?.get(sym[right]!);
    if (rank === undefined) return;
    queue.push({ left, right, rank, text: sym[left]! + sym[right]! });
  };
  for (let i = 1; i < n; i++) tryAdd(i - 1, i);

  for (let b = queue.pop(); b !== undefined; b = queue.pop()) {
    const l = b.left;
    const r = b.right;
    if (sym[l] === '' || sym[r] === '' || sym[l]! + sym[r]! !== b.text) continue;
    sym[l] = b.text;
    sym[r] = '';
    next[l] = next[r]!;
    if (next[r]! >= 0) prev[next[r]!] = l;
    tryAdd(prev[l]!, l);
    tryAdd(l, next[l]!);
  }

  for (let i = 0; i !== -1; i = next[i]!) {
    const piece = sym[i]!;
    const id = vocab.tokenToId.get(piece);
    if (id !== undefined) {
      out.push(id);
      continue;
    }
    // llama.cpp looks each raw byte of the piece up as a one-byte string: only ASCII can match.
    for (const ch of piece) {
      const code = ch.charCodeAt(0);
      if (code >= 0x80) continue;
      const single = vocab.tokenToId.get(ch);
      if (single !== undefined) out.push(single);
    }
  }
}
