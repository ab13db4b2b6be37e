// Tokenizer metadata that cannot be used is refused at load time with one TokenizerError naming
// the key: no tokenizer, no vocabulary, mistyped arrays, merges naming unknown tokens, a tokenizer
// model or pre-tokenizer we do not implement, BOS required but absent. Bad ids fail at decode.
import { describe, expect, it } from 'vitest';
import { parseGguf } from '../src/llm/gguf/index.js';
import { Tokenizer, TokenizerError } from '../src/llm/tokenizer/index.js';
import { encodeGguf, gv, vocabMetadata, type GgufWriteValue } from './helpers/gguf-writer.js';
import { byteLevelBpeVocab, sentencePieceVocab } from './helpers/tiny-vocab.js';

async function load(metadata: Record<string, GgufWriteValue>): Promise<Tokenizer> {
  return Tokenizer.fromGguf(await parseGguf(encodeGguf({ metadata })));
}

async function refusal(metadata: Record<string, GgufWriteValue>): Promise<string> {
  try {
    await load(metadata);
  } catch (e) {
    expect(e).toBeInstanceOf(TokenizerError);
    return (e as Error).message;
  }
  throw new Error('expected a TokenizerError');
}

const bpe = () => vocabMetadata(byteLevelBpeVocab('llama-bpe'));
const spm = () => vocabMetadata(sentencePieceVocab());
const without = (m: Record<string, GgufWriteValue>, key: string) => {
  const copy = { ...m };
  delete copy[key];
  return copy;
};

describe('refused tokenizer metadata', () => {
  it('no tokenizer.ggml.model', async () => {
    expect(await refusal({ 'general.architecture': 'llama' })).toBe('the GGUF has no tokenizer: tokenizer.ggml.model is missing');
  });

  it('a tokenizer model we do not implement', async () => {
    expect(await refusal({ ...spm(), 'tokenizer.ggml.model': 't5' })).toBe('unsupported tokenizer.ggml.model "t5" (supported: llama, gpt2, bert)');
    expect(await refusal({ ...spm(), 'tokenizer.ggml.model': gv.u32(1) })).toBe('metadata key "tokenizer.ggml.model" is UINT32, expected a string');
  });

  it('a WordPiece vocabulary without [CLS], [SEP] or [UNK] (ids out of range, no keys)', async () => {
    const wpm = { 'tokenizer.ggml.model': 'bert', 'tokenizer.ggml.tokens': ['[PAD]', 'a', 'b'] };
    expect(await refusal(wpm)).toBe('the WordPiece vocabulary has no [CLS]: tokenizer.ggml.bos_token_id is not set and id 101 is out of range');
    expect(await refusal({ ...wpm, 'tokenizer.ggml.bos_token_id': gv.u32(1) })).toBe(
      'the WordPiece vocabulary has no [SEP]: tokenizer.ggml.seperator_token_id is not set and id 102 is out of range',
    );
  });

  it('a pre-tokenizer we do not implement, naming the ones we do', async () => {
    const msg = await refusal({ ...bpe(), 'tokenizer.ggml.pre': 'kimi-k2' });
    expect(msg).toMatch(/^unsupported tokenizer\.ggml\.pre "kimi-k2" \(supported: .*\bllama-bpe\b.*\bqwen2\b.*\)$/);
  });

  it('no tokens, or tokens that are not strings', async () => {
    expect(await refusal(without(spm(), 'tokenizer.ggml.tokens'))).toBe('the GGUF has no vocabulary: tokenizer.ggml.tokens is missing');
    expect(await refusal({ ...spm(), 'tokenizer.ggml.tokens': new Int32Array([1, 2]) })).toBe(
      'metadata key "tokenizer.ggml.tokens" is an array of INT32, expected an array of strings',
    );
    expect(await refusal({ ...spm(), 'tokenizer.ggml.tokens': gv.arr('STRING', []) })).toBe('tokenizer.ggml.tokens is empty');
  });

  it('scores or token types that are too short or mistyped', async () => {
    expect(await refusal({ ...spm(), 'tokenizer.ggml.scores': new Float32Array(3) })).toMatch(/^tokenizer\.ggml\.scores has 3 entries for \d+ tokens$/);
    expect(await refusal({ ...spm(), 'tokenizer.ggml.token_type': new Int32Array(2) })).toMatch(/^tokenizer\.ggml\.token_type has 2 entries for \d+ tokens$/);
    expect(await refusal({ ...spm(), 'tokenizer.ggml.token_type': new Float32Array(700) })).toBe(
      'metadata key "tokenizer.ggml.token_type" is an array of FLOAT32, expected an array of INT32',
    );
  });

  it('a byte-level tokenizer without merges, or with merges naming unknown tokens', async () => {
    expect(await refusal(without(bpe(), 'tokenizer.ggml.merges'))).toBe('tokenizer.ggml.merges is missing (a gpt2 tokenizer needs its BPE merges)');
    expect(await refusal({ ...bpe(), 'tokenizer.ggml.merges': ['h e', 'he llo'] })).toBe(
      'tokenizer.ggml.merges[1] "he llo" names "llo", which is not in the vocabulary',
    );
    expect(await refusal({ ...bpe(), 'tokenizer.ggml.merges': ['Ġ e', 'nospace'] })).toBe(
      'tokenizer.ggml.merges[1] "nospace" is not two tokens separated by a space',
    );
  });

  it('add_bos_token without a usable BOS id', async () => {
    // a byte-level vocabulary smaller than llama.cpp's default BOS id (11), with no BOS key
    const tiny = { 'tokenizer.ggml.model': 'gpt2', 'tokenizer.ggml.pre': 'qwen2', 'tokenizer.ggml.tokens': ['a', 'b'], 'tokenizer.ggml.merges': ['a b'] };
    expect(await refusal({ ...tiny, 'tokenizer.ggml.add_bos_token': true })).toBe(
      'tokenizer.ggml.add_bos_token is true, but tokenizer.ggml.bos_token_id is not set',
    );
    expect(await refusal({ ...tiny, 'tokenizer.ggml.add_eos_token': true })).toBe(
      'tokenizer.ggml.add_eos_token is true, but tokenizer.ggml.eos_token_id is not set',
    );
    // without add_bos it loads, and there is simply no BOS
    const tok = await load(tiny);
    expect(tok.bos).toBeNull();
    expect(tok.encode('ab')).toEqual([0, 1]); // the merge makes "ab", not a token: its bytes' entries instead
    expect(tok.encode('abc')).toEqual([0, 1]); // "c" has no entry at all and is dropped, as llama.cpp drops it
  });
});

describe('bad ids', () => {
  it('decode refuses ids outside the vocabulary', async () => {
    const tok = await load(spm());
    expect(() => tok.decode([5, tok.vocabSize])).toThrow(new TokenizerError(`token id ${tok.vocabSize} is out of range (vocabulary of ${tok.vocabSize})`));
    expect(() => tok.decode([-1])).toThrow(TokenizerError);
    expect(() => tok.tokenText(1e9)).toThrow(TokenizerError);
  });
});
