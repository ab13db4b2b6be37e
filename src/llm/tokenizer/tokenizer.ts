// Tokenizer: text <-> token ids for a GGUF model, with the ids llama.cpp produces for the same
// file and text (llama_tokenize(add_special, parse_special) and llama_detokenize). Built from the
// file's metadata alone; the engine only ever sees ids.
//
//   const tok = await Tokenizer.fromFile(path);       // or Tokenizer.fromGguf(ggufFile)
//   tok.encode('Hello', { addSpecial: true });       // [1, 15043] for Llama 2
//   tok.encode('<|im_start|>user', { parseSpecial: true });
//   tok.decode(ids);                                  // control tokens render as nothing

import { GgufMetadata } from '../gguf/metadata.js';
import { readGguf } from '../gguf/reader.js';
import type { GgufFile } from '../gguf/types.js';
import { bpeTokenize } from './bpe.js';
import { cleanSpaces } from './clean-spaces.js';
import { TokenizerError } from './errors.js';
import { PieceTable } from './pieces.js';
import { partition } from './special-tokens.js';
import { spmTokenize } from './spm.js';
import { wellFormed } from './unicode.js';
import { WordPieceTable, wpmTokenize } from './wpm.js';
import { loadVocab, NO_TOKEN, TokenAttr, type TokenizerModel, type Vocab } from './vocab.js';

export interface EncodeOptions {
  /** Add BOS / EOS as the model's add_bos_token / add_eos_token say. Default true. */
  addSpecial?: boolean;
  /** Turn the text of control tokens (<s>, <|im_start|>) into those tokens. Default false. */
  parseSpecial?: boolean;
}

export interface DecodeOptions {
  /** Render control and unknown tokens as their text. Default false (they render as nothing). */
  special?: boolean;
  /**
   * The ids start the text, so the space a SentencePiece vocabulary puts before the first word is
   * removed, as llama.cpp's detokenizer does. Default true; pass false for a continuation (the
   * completion after a prompt), whose first word keeps its space.
   */
  startOfText?: boolean;
}

const utf8 = new TextDecoder('utf-8', { fatal: false, ignoreBOM: true });

export class Tokenizer {
  private readonly pieces: PieceTable;
  private readonly byteTokens = new Int32Array(256).fill(-2); // -2: not looked up yet
  private wordPieces: WordPieceTable | null = null;

  constructor(readonly vocab: Vocab) {
    this.pieces = new PieceTable(vocab);
  }

  /** The tokenizer described by a GGUF file's `tokenizer.ggml.*` metadata. */
  static fromGguf(file: GgufFile | GgufMetadata): Tokenizer {
    return new Tokenizer(loadVocab(GgufMetadata.of(file)));
  }

  /** Reads the GGUF file's metadata (GgufError) and builds its tokenizer (TokenizerError). */
  static async fromFile(path: string): Promise<Tokenizer> {
    return Tokenizer.fromGguf(await readGguf(path));
  }

  get model(): TokenizerModel {
    return this.vocab.model;
  }

  get vocabSize(): number {
    return this.vocab.tokens.length;
  }

  get bos(): number | null {
    return orNull(this.vocab.bos);
  }

  get eos(): number | null {
    return orNull(this.vocab.eos);
  }

  /** End of turn (<|eot_id|>, <|im_end|>, ...), when the vocabulary has one. */
  get eot(): number | null {
    return orNull(this.vocab.eot);
  }

  get unk(): number | null {
    return orNull(this.vocab.unk);
  }

  get pad(): number | null {
    return orNull(this.vocab.pad);
  }

  get addBos(): boolean {
    return this.vocab.addBos;
  }

  get addEos(): boolean {
    return this.vocab.addEos;
  }

  /** Whether generating `id` ends generation (EOS, EOT and the other end-of-generation tokens). */
  isEog(id: number): boolean {
    return this.vocab.eog.has(id);
  }

  isControl(id: number): boolean {
    return (this.vocab.attrs[id] ?? 0) & TokenAttr.CONTROL ? true : false;
  }

  /** The vocabulary entry of `id`, as stored (SentencePiece "▁Hello", byte-level "ĠHello"). */
  tokenText(id: number): string {
    const t = this.vocab.tokens[id];
    if (t === undefined) throw new TokenizerError(`token id ${id} is out of range (vocabulary of ${this.vocabSize})`);
    return t;
  }

  /** The id of a vocabulary entry, or undefined. */
  tokenId(text: string): number | undefined {
    return this.vocab.tokenToId.get(text);
  }

  encode(text: string, options: EncodeOptions = {}): number[] {
    const addSpecial = options.addSpecial ?? true;
    const v = this.vocab;
    const out: number[] = [];
    const frags = partition(v, wellFormed(text), options.parseSpecial ?? false);
    if (v.model === 'bert') {
      // llama.cpp's WPM path: [CLS] and [SEP] around the text whenever special tokens are added.
      if (addSpecial) out.push(v.bos);
      const table = (this.wordPieces ??= new WordPieceTable(v));
      const opts = { lowercase: v.lowercase, stripAccents: v.stripAccents };
      for (const f of frags) {
        if ('token' in f) out.push(f.token);
        else wpmTokenize(v, table, opts, f.text, out);
      }
      if (addSpecial) out.push(v.sep);
      return out;
    }
    if (addSpecial && v.addBos) out.push(v.bos);
    if (v.model === 'llama') {
      // A space goes before the text and before any text that follows a special token.
      let prevSpecial = true;
      for (const f of frags) {
        if ('token' in f) {
          out.push(f.token);
          prevSpecial = true;
          continue;
        }
        const spaced = v.addSpacePrefix && prevSpecial ? ` ${f.text}` : f.text;
        spmTokenize(v, this.byteToken, spaced.replaceAll(' ', '\u2581'), out);
        prevSpecial = false;
      }
    } else {
      for (const f of frags) {
        if ('token' in f) out.push(f.token);
        else bpeTokenize(v, f.text, out);
      }
    }
    if (addSpecial && v.addEos) out.push(v.eos);
    return out;
  }

  /** The bytes token `id` decodes to (empty for control tokens unless `special`). */
  piece(id: number, special = false): Uint8Array {
    return this.pieces.piece(id, special);
  }

  decode(ids: readonly number[], options: DecodeOptions = {}): string {
    const special = options.special ?? false;
    const chunks: Uint8Array[] = [];
    let total = 0;
    for (let i = 0; i < ids.length; i++) {
      let p = this.pieces.piece(ids[i]!, special);
      if (i === 0) p = this.stripLeadingSpace(p, options.startOfText ?? true);
      chunks.push(p);
      total += p.length;
    }
    const bytes = new Uint8Array(total);
    let at = 0;
    for (const c of chunks) {
      bytes.set(c, at);
      at += c.length;
    }
    const text = utf8.decode(bytes);
    return this.vocab.cleanSpaces ? cleanSpaces(text) : text;
  }

  /** llama_detokenize's lstrip: one leading space of the first piece goes (SentencePiece only). */
  stripLeadingSpace(piece: Uint8Array, startOfText: boolean): Uint8Array {
    return startOfText && this.vocab.addSpacePrefix && piece[0] === 0x20 ? piece.subarray(1) : piece;
  }

  /** The fallback token of a byte: <0xXX>, else the one-character entry, else <unk>. */
  private readonly byteToken = (b: number): number => {
    let id = this.byteTokens[b]!;
    if (id === -2) {
      const hex = b.toString(16).toUpperCase().padStart(2, '0');
      id =
        this.vocab.tokenToId.get(`<0x${hex}>`) ??
        (b < 0x80 ? this.vocab.tokenToId.get(String.fromCharCode(b)) : undefined) ??
        this.vocab.unk;
      if (id === NO_TOKEN) throw new TokenizerError(`the vocabulary has no token for byte 0x${hex} and no <unk>`);
      this.byteTokens[b] = id;
    }
    return id;
  };
}

const orNull = (id: number) => (id === NO_TOKEN ? null : id);
