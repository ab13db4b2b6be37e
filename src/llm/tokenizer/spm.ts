// SentencePiece-style tokenization (tokenizer.ggml.model = "llama"), llama.cpp's
// llm_tokenizer_spm_session: start from single code points, repeatedly merge the adjacent pair
// whose concatenation is the vocabulary entry with the highest score (leftmost on ties), and spell
// any piece left outside the vocabulary as its UTF-8 bytes with the <0xXX> byte tokens. The caller
// has already replaced spaces with U+2581 and added the leading space.

import { Heap } from './heap.js';
import { utf8Bytes } from './unicode.js';
import type { Vocab } from './vocab.js';

interface Bigram {
  left: number;
  right: number;
  score: number;
  /** Length of the merged text when the pair was queued; a mismatch later means it is stale. */
  size: number;
}

const higherScoreFirst = (a: Bigram, b: Bigram) => a.score > b.score || (a.score === b.score && a.left < b.left);

/** Appends the ids of `text` to `out`. `byteToken` maps a byte to its fallback token. */
export function spmTokenize(vocab: Vocab, byteToken: (b: number) => number, text: string, out: number[]): void {
  // Symbols are code points, held as [start, length] ranges of `text` in a linked list.
  const n = text.length;
  const start = new Int32Array(n);
  const len = new Int32Array(n);
  const prev = new Int32Array(n);
  const next = new Int32Array(n);
  let count = 0;
  for (let i = 0; i < n; count++) {
    const c = text.charCodeAt(i);
    const w = c >= 0xd800 && c <= 0xdbff && i + 1 < n ? 2 : 1;
    start[count] = i;
    len[count] = w;
    prev[count] = count - 1;
    i += w;
    next[count] = i === n ? -1 : count + 1;
  }
  if (count === 0) return;

  const queue = new Heap<Bigram>(higherScoreFirst);
  const tryAdd = (left: number, right: number) => {
    if (left === -1 || right === -1) return;
    const size = len[left]! + len[right]!;
    const id = vocab.tokenToId.get(text.substr(start[left]!, size));
    if (id === undefined) return;
    queue.push({ left, right, score: vocab.scores[id]!, size });
  };
  for (let i = 1; i < count; i++) tryAdd(i - 1, i);

  for (let b = queue.pop(); b !== undefined; b = queue.pop()) {
    const l = b.left;
    const r = b.right;
    if (len[l] === 0 || len[r] === 0 || len[l]! + len[r]! !== b.size) continue;
    len[l] = len[l]! + len[r]!;
    len[r] = 0;
    next[l] = next[r]!;
    if (next[r]! >= 0) prev[next[r]!] = l;
    tryAdd(prev[l]!, l);
    tryAdd(l, next[l]!);
  }

  for (let i = 0; i !== -1; i = next[i]!) {
    const piece = text.substr(start[i]!, len[i]!);
    const id = vocab.tokenToId.get(piece);
    if (id !== undefined) {
      out.push(id);
      continue;
    }
    for (const byte of utf8Bytes(piece)) out.push(byteToken(byte));
  }
}
