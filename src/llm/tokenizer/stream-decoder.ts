// Incremental decoding for token streaming: push ids as they are generated and get text that
// never splits a UTF-8 character (a byte-fallback emoji arrives as four <0xXX> tokens, and only
// the fourth produces text) and never emits a space that the space cleaning would later remove.
// The concatenation of every push() and flush() equals tokenizer.decode(allIds, options).

import { SpaceCleaner } from './clean-spaces.js';
import type { DecodeOptions, Tokenizer } from './tokenizer.js';

export class StreamDecoder {
  // TextDecoder's stream mode holds incomplete sequences back and decodes exactly as one call would.
  private readonly utf8 = new TextDecoder('utf-8', { fatal: false, ignoreBOM: true });
  private readonly cleaner: SpaceCleaner | null;
  private first = true;

  constructor(
    private readonly tokenizer: Tokenizer,
    private readonly options: DecodeOptions = {},
  ) {
    this.cleaner = tokenizer.vocab.cleanSpaces ? new SpaceCleaner() : null;
  }

  /** The text that token `id` completes (often '', sometimes several characters). */
  push(id: number): string {
    let piece = this.tokenizer.piece(id, this.options.special ?? false);
    if (this.first) {
      piece = this.tokenizer.stripLeadingSpace(piece, this.options.startOfText ?? true);
      this.first = false;
    }
    const text = this.utf8.decode(piece, { stream: true });
    return this.cleaner ? this.cleaner.push(text) : text;
  }

  /** Whatever is still held back (an unfinished character becomes U+FFFD). */
  flush(): string {
    const text = this.utf8.decode();
    return this.cleaner ? this.cleaner.push(text) + this.cleaner.end() : text;
  }
}
