// The tokenizer's one error: a GGUF whose tokenizer metadata cannot be used (missing or mistyped
// keys, merges naming unknown tokens, a tokenizer model or pre-tokenizer we do not implement), or
// a token id out of range. One line, naming the key.

export class TokenizerError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'TokenizerError';
  }
}
