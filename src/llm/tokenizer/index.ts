// The host-side tokenizer: llama.cpp-compatible token ids from a GGUF file's tokenizer metadata.
// See README.md.

export { Tokenizer, type DecodeOptions, type EncodeOptions } from './tokenizer.js';
export { StreamDecoder } from './stream-decoder.js';
export { TokenizerError } from './errors.js';
export { loadVocab, NO_TOKEN, TokenAttr, type TokenizerModel, type Vocab } from './vocab.js';
export { preTokenizer, supportedPreTokenizers, type PreTokenizer } from './pre-tokenizers.js';
export { cleanSpaces, SpaceCleaner } from './clean-spaces.js';
