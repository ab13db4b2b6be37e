// The bytes each token stands for when decoding (llama.cpp's token_to_piece): SentencePiece pieces
// with U+2581 turned back into spaces, byte-level BPE pieces mapped back through GPT-2's byte
// alphabet, <0xXX> byte tokens as their byte, and control / unknown tokens as nothing unless the
// caller asks for special tokens to be rendered. Computed once per token and cached.

import { TokenizerError } from './errors.js';
import { charToByte, utf8Bytes } from './unicode.js';
import { TokenAttr, type Vocab } from './vocab.js';

const EMPTY = new Uint8Array(0);

export class PieceTable {
  private readonly cache: (Uint8Array | undefined)[];

  constructor(private readonly vocab: Vocab) {
    this.cache = new Array<Uint8Array | undefined>(vocab.tokens.length);
  }

  /** The bytes of token `id`; control and unknown tokens are empty unless `special`. */
  piece(id: number, special: boolean): Uint8Array {
    const v = this.vocab;
    if (!Number.isInteger(id) || id < 0 || id >= v.tokens.length) {
      throw new TokenizerError(`token id ${id} is out of range (vocabulary of ${v.tokens.length})`);
    }
    if (!special && v.attrs[id]! & (TokenAttr.CONTROL | TokenAttr.UNKNOWN)) return EMPTY;
    let p = this.cache[id];
    if (p === undefined) {
      p = this.compute(id);
      this.cache[id] = p;
    }
    return p;
  }

  private compute(id: number): Uint8Array {
    const v = this.vocab;
    const attr = v.attrs[id]!;
    const text = v.tokens[id]!;
    if (attr & (TokenAttr.CONTROL | TokenAttr.UNKNOWN | TokenAttr.USER_DEFINED)) return utf8Bytes(text);
    if (attr & TokenAttr.NORMAL) {
      return v.model !== 'gpt2' ? utf8Bytes(text.replaceAll('\u2581', ' ')) : decodeByteLevel(text);
    }
    if (attr & TokenAttr.BYTE) return Uint8Array.of(parseInt(text.slice(3, 5), 16) || 0);
    return EMPTY; // unused / undefined tokens render as nothing, as in llama.cpp
  }
}

/** llama_decode_text: each character is one byte; a character outside the alphabet is flagged. */
function decodeByteLevel(text: string): Uint8Array {
  const out: number[] = [];
  for (const ch of text) {
    const b = charToByte(ch);
    if (b !== undefined) {
      out.push(b);
      continue;
    }
    const hex = Array.from(utf8Bytes(ch), (x) => x.toString(16).padStart(2, '0')).join('');
    out.push(...utf8Bytes(`[UNK_BYTE_0x${hex}${text}]`));
  }
  return Uint8Array.from(out);
}
