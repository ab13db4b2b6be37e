// Splits text around special tokens before tokenization (llama.cpp's tokenizer_st_partition):
// each special token, longest first, is cut out of every remaining text fragment wherever its text
// occurs. Control and unknown tokens (<s>, <|im_start|>) are only recognised with parseSpecial;
// user-defined tokens always are, as in Hugging Face tokenizers.

import { TokenAttr, type Vocab } from './vocab.js';

export type Fragment = { text: string } | { token: number };

export function partition(vocab: Vocab, text: string, parseSpecial: boolean): Fragment[] {
  if (text.length === 0) return [];
  // Fragments as [start, end) ranges of `text`, or token ids (start = -1).
  let frags: { start: number; end: number; token: number }[] = [{ start: 0, end: text.length, token: -1 }];
  for (const id of vocab.specialTokens) {
    if (!parseSpecial && vocab.attrs[id]! & (TokenAttr.CONTROL | TokenAttr.UNKNOWN)) continue;
    const special = vocab.tokens[id]!;
    if (!text.includes(special)) continue; // fragments are substrings: no match anywhere then
    const nextFrags: typeof frags = [];
    for (const f of frags) {
      if (f.token >= 0) {
        nextFrags.push(f);
        continue;
      }
      let pos = f.start;
      for (;;) {
        const at = text.indexOf(special, pos);
        if (at < 0 || at + special.length > f.end) break;
        if (at > pos) nextFrags.push({ start: pos, end: at, token: -1 });
        nextFrags.push({ start: -1, end: -1, token: id });
        pos = at + special.length;
      }
      if (pos < f.end) nextFrags.push({ start: pos, end: f.end, token: -1 });
    }
    frags = nextFrags;
  }
  return frags.map((f) => (f.token >= 0 ? { token: f.token } : { text: text.slice(f.start, f.end) }));
}
