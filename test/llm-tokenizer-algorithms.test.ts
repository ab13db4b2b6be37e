// The tokenizer algorithms on vocabularies small enough to reason about by hand, so each rule is
// pinned down on its own (the oracle tests then show the combination equals llama.cpp):
// SentencePiece merging by score with byte fallback and the space prefix, BPE merging by rank and
// llama3's ignore_merges, the pre-tokenizer word splits, special-token parsing, and speed.
import { describe, expect, it } from 'vitest';
import { parseGguf } from '../src/llm/gguf/index.js';
import { Tokenizer } from '../src/llm/tokenizer/index.js';
import { regexSplit } from '../src/llm/tokenizer/regex-split.js';
import { preTokenizer } from '../src/llm/tokenizer/pre-tokenizers.js';
import { byteToChar, codePoints } from '../src/llm/tokenizer/unicode.js';
import { encodeGguf, vocabMetadata, type TinyVocab } from './helpers/gguf-writer.js';
import { byteLevelBpeVocab, CORPUS, sentencePieceVocab } from './helpers/tiny-vocab.js';

const load = async (v: TinyVocab) => Tokenizer.fromGguf(await parseGguf(encodeGguf({ metadata: vocabMetadata(v) })));

/** A SentencePiece vocabulary: <unk> <s> </s>, optional byte tokens, then scored pieces. */
function spm(pieces: Record<string, number>, options: { bytes?: boolean; extra?: [string, number][] } & Partial<TinyVocab> = {}): TinyVocab {
  const tokens = ['<unk>', '<s>', '</s>'];
  const types = [2, 3, 3];
  const scores = [0, 0, 0];
  if (options.bytes ?? true) {
    for (let b = 0; b < 256; b++) {
      tokens.push(`<0x${b.toString(16).toUpperCase().padStart(2, '0')}>`);
      types.push(6);
      scores.push(0);
    }
  }
  for (const [p, s] of Object.entries(pieces)) {
    tokens.push(p);
    types.push(1);
    scores.push(s);
  }
  for (const [p, t] of options.extra ?? []) {
    tokens.push(p);
    types.push(t);
    scores.push(0);
  }
  const { bytes: _b, extra: _e, ...flags } = options;
  return { model: 'llama', tokens, scores: Float32Array.from(scores), tokenTypes: Int32Array.from(types), bosId: 1, eosId: 2, unknownId: 0, ...flags };
}

describe('SentencePiece (llama)', () => {
  const pieces = (tok: Tokenizer, text: string, parseSpecial = false) =>
    tok.encode(text, { addSpecial: false, parseSpecial }).map((id) => tok.tokenText(id));

  it('merges the adjacent pair with the highest score first', async () => {
    const base = { '▁': -10, a: -10, b: -10, c: -10, '▁a': -5 };
    expect(pieces(await load(spm({ ...base, ab: -1, bc: -2 })), 'abc')).toEqual(['▁', 'ab', 'c']);
    expect(pieces(await load(spm({ ...base, ab: -1, bc: -0.5 })), 'abc')).toEqual(['▁a', 'bc']);
  });

  it('breaks score ties leftmost', async () => {
    expect(pieces(await load(spm({ '▁': -1, a: -1, aa: -1 })), 'aaa')).toEqual(['▁', 'aa', 'a']);
  });

  it('puts a space before the text (U+2581 for every space) unless add_space_prefix is false', async () => {
    const v = { '▁': -1, a: -1, b: -1, '▁a': -0.5, '▁b': -0.5 };
    expect(pieces(await load(spm(v)), 'a b')).toEqual(['▁a', '▁b']);
    expect(pieces(await load(spm(v, { addSpacePrefix: false })), 'a b')).toEqual(['a', '▁b']);
    expect(pieces(await load(spm(v)), '  a')).toEqual(['▁', '▁', '▁a']);
  });

  it('spells a character outside the vocabulary as <0xXX> byte tokens, or <unk> without them', async () => {
    expect(pieces(await load(spm({ '▁': -1 })), 'é')).toEqual(['▁', '<0xC3>', '<0xA9>']);
    expect(pieces(await load(spm({ '▁': -1 }, { bytes: false })), 'é')).toEqual(['▁', '<unk>', '<unk>']);
  });

  it('parses control tokens only with parseSpecial, and spaces the text after a special token', async () => {
    const tok = await load(spm({ '▁': -1, x: -1, '▁x': -0.5, '<': -1, '>': -1, s: -1 }));
    expect(pieces(tok, '<s>x', true)).toEqual(['<s>', '▁x']);
    expect(pieces(tok, '<s>x')).toEqual(['▁', '<', 's', '>', 'x']);
    expect(tok.encode('x', { addSpecial: true })).toEqual([1, tok.tokenId('▁x')]);
  });

  it('always splits out user-defined tokens, longest first', async () => {
    const tok = await load(spm({ '▁': -1, x: -1, '▁x': -0.5 }, { extra: [['<u>', 4], ['<u>x', 4]] }));
    expect(pieces(tok, 'x<u>xx<u>')).toEqual(['▁x', '<u>x', '▁x', '<u>']);
  });

  it('decodes pieces with spaces restored, bytes joined, control tokens hidden, the first space removed', async () => {
    const tok = await load(spm({ '▁': -1, hi: -1, '▁hi': -0.5 }));
    const ids = tok.encode('hi é', { addSpecial: true });
    expect(tok.decode(ids)).toBe(' hi é'); // llama.cpp strips the first token's space, and BOS is first
    expect(tok.decode(ids.slice(1))).toBe('hi é');
    expect(tok.decode(ids, { special: true })).toBe('<s> hi é');
  });
});

describe('byte-level BPE (gpt2)', () => {
  /** The 256-byte alphabet, some merged tokens and the merges, in rank order. */
  function bpe(merges: string[], pre = 'qwen2', extraTokens: string[] = []): TinyVocab {
    const tokens = Array.from({ length: 256 }, (_, b) => byteToChar(b));
    for (const m of merges) tokens.push(m.replace(' ', ''));
    tokens.push(...extraTokens, '<|endoftext|>');
    const types = tokens.map((t) => (t === '<|endoftext|>' ? 3 : 1));
    return { model: 'gpt2', pre, tokens, tokenTypes: Int32Array.from(types), merges, eosId: tokens.length - 1 };
  }
  const pieces = (tok: Tokenizer, text: string) => tok.encode(text, { addSpecial: false }).map((id) => tok.tokenText(id));

  it('merges the pair with the lowest rank first, leftmost on ties', async () => {
    expect(pieces(await load(bpe(['b c', 'a b'])), 'abc')).toEqual(['a', 'bc']);
    expect(pieces(await load(bpe(['a b', 'b c'])), 'abc')).toEqual(['ab', 'c']);
    expect(pieces(await load(bpe(['a a'])), 'aaa')).toEqual(['aa', 'a']);
  });

  it('spells text in the byte alphabet: a space is Ġ, a newline Ċ, é two byte characters', async () => {
    expect(pieces(await load(bpe(['Ġ h', 'Ġh i'])), ' hi\né')).toEqual(['Ġhi', 'Ċ', 'Ã', '©']);
  });

  it('llama3 pre-tokenizers take a word that is a token whole, ignoring merges', async () => {
    const v = (pre: string) => bpe([], pre, ['xyz']);
    expect(pieces(await load(v('llama-bpe')), 'xyz')).toEqual(['xyz']);
    expect(pieces(await load(v('qwen2')), 'xyz')).toEqual(['x', 'y', 'z']);
  });

  it('decodes byte characters back to UTF-8 and control tokens to nothing', async () => {
    const tok = await load(bpe(['Ġ h', 'Ġh i']));
    const ids = tok.encode(' hi\né<|endoftext|>', { addSpecial: false, parseSpecial: true });
    expect(ids.at(-1)).toBe(tok.eos);
    expect(tok.decode(ids)).toBe(' hi\né');
    expect(tok.decode(ids, { special: true })).toBe(' hi\né<|endoftext|>');
    expect(tok.isEog(tok.eos!)).toBe(true);
  });
});

describe('pre-tokenizer words', () => {
  const words = (pre: string | undefined, text: string) => {
    const cpts = codePoints(text);
    let at = 0;
    return regexSplit(cpts, preTokenizer(pre)!.regexes).map((n) => String.fromCodePoint(...cpts.subarray(at, (at += n))));
  };

  it('numbers: llama3 groups of three, qwen2 single digits, gpt-2 whole runs, default runs cut in threes', () => {
    expect(words('llama-bpe', 'x 1234567')).toEqual(['x', ' ', '123', '456', '7']);
    expect(words('qwen2', 'x 1234')).toEqual(['x', ' ', '1', '2', '3', '4']);
    expect(words('gpt-2', 'x 1234567')).toEqual(['x', ' 1234567']);
    expect(words(undefined, 'x 1234567')).toEqual(['x', ' ', '123', '456', '7']);
  });

  it('contractions: case-insensitive for llama3 and qwen2, lower case only for gpt-2', () => {
    expect(words('llama-bpe', "DON'T don't")).toEqual(['DON', "'T", ' don', "'t"]);
    expect(words('qwen2', "I'M")).toEqual(['I', "'M"]);
    expect(words('gpt-2', "DON'T don't")).toEqual(['DON', "'", 'T', ' don', "'t"]);
  });

  it('letters take one leading non-letter in llama3 / qwen2, only a space in gpt-2', () => {
    expect(words('llama-bpe', '(hello) "world"')).toEqual(['(hello', ')', ' "', 'world', '"']);
    expect(words('gpt-2', '(hello) "world"')).toEqual(['(', 'hello', ')', ' "', 'world', '"']);
  });

  it('whitespace: a run before a word leaves its last space to the word; newlines group with what precedes them', () => {
    expect(words('gpt-2', 'a   b')).toEqual(['a', '  ', ' b']);
    expect(words('llama-bpe', 'a   b')).toEqual(['a', '  ', ' b']);
    expect(words('llama-bpe', 'a  \n\n b')).toEqual(['a', '  \n\n', ' b']);
    expect(words('llama-bpe', 'end.\n\nNext')).toEqual(['end', '.\n\n', 'Next']);
    expect(words('gpt-2', 'end.\n\nNext')).toEqual(['end', '.', '\n', '\n', 'Next']);
    expect(words('llama-bpe', 'trailing   ')).toEqual(['trailing', '   ']);
  });

  it('the default pre-tokenizer cuts punctuation runs first', () => {
    expect(words(undefined, 'a+=b...c')).toEqual(['a', '+=', 'b', '...', 'c']);
    expect(words('gpt-2', 'a+=b...c')).toEqual(['a', '+=', 'b', '...', 'c']);
    expect(words(undefined, 'a!?b')).toEqual(['a', '!?', 'b']);
  });

  it('non-ASCII letters, marks and numbers follow their Unicode class', () => {
    expect(words('llama-bpe', 'café ١٢٣٤ 日本')).toEqual(['café', ' ', '١٢٣', '٤', ' 日本']);
    expect(words('qwen2', 'e\u0301x')).toEqual(['e', '\u0301x']);
  });
});

describe('speed', () => {
  it('encodes a 4k-token prompt in a few milliseconds', async () => {
    for (const vocab of [sentencePieceVocab(), byteLevelBpeVocab('llama-bpe'), byteLevelBpeVocab('qwen2')]) {
      const tok = await load(vocab);
      let text = '';
      while (tok.encode(text, { addSpecial: false }).length < 4096) text += CORPUS;
      for (let i = 0; i < 3; i++) tok.encode(text);
      const runs = 10;
      const t0 = performance.now();
      for (let i = 0; i < runs; i++) tok.encode(text, { parseSpecial: true });
      const ms = (performance.now() - t0) / runs;
      const n = tok.encode(text).length;
      console.log(`${vocab.model}/${vocab.pre ?? 'spm'}: ${n} tokens in ${ms.toFixed(2)} ms`);
      // a few ms on a desktop core; generous for a loaded CI machine
      expect(ms).toBeLessThan(40);
    }
  });
});
