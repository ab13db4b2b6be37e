// Splits text around special tokens before tokenization (llama.cpp's tokenizer_st_partition):
// each special token, longest first, is cut out of every remaining text fragment wherever its text
// occurs. Control and unknown tokens (<s>, <|im_start|>) are only recognised with parseSpecial;
// user-defined tokens always are, as in Hugging Face tokenizers. A token with LSTRIP / RSTRIP (set
// by vocab.ts for Phi-3's and some BERTs' special tokens) also swallows the ASCII whitespace
// before / after it.

import { TokenAttr, type Vocab } from './vocab.js';

/** C's isspace in the C locale: space, \t, \n, \v, \f, \r. */
const isAsciiSpace = (c: number) => c === 0x20 || (c >= 0x09 && c <= 0x0d);

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
      const lstrip = (vocab.attrs[id]! & TokenAttr.LSTRIP) !== 0;
      const rstrip = (vocab.attrs[id]! & TokenAttr.RSTRIP) !== 0;
      let pos = f.start;
      for (;;) {
        const at = text.indexOf(special, pos);
        if (at < 0 || at + special.length > f.end) break;
        let leftEnd = at;
        if (lstrip) while (leftEnd > pos && isAsciiSpace(text.charCodeAt(leftEnd - 1))) leftEnd--;
        if (leftEnd > pos) nextFrags.push({ start: pos, end: leftEnd, token: -1 });
        nextFrags.push({ start: -1, end: -1, token: id });
        pos = at + special.length;
        if (rstrip) while (pos < f.end && isAsciiSpace(text.charCodeAt(pos))) pos++;
      }
      if (pos < f.end) nextFrags.push({ start: pos, end: f.end, token: -1 });
    }
    frags = nextFrags;
  }
  return frags.map((f) => (f.token >= 0 ? { token: f.token } : { text: text.slice(f.start, f.end) }));
}
