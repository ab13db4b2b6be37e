// Streaming decode: StreamDecoder yields, token by token, exactly what decode() gives for the whole
// sequence, and never a piece of a UTF-8 character (byte-fallback emoji arrive as several tokens),
// including across llama.cpp's space cleaning, whose streaming form is checked against a direct
// port of llama_detokenize's in-place passes.
import { describe, expect, it } from 'vitest';
import { parseGguf } from '../src/llm/gguf/index.js';
import { cleanSpaces, SpaceCleaner, StreamDecoder, Tokenizer } from '../src/llm/tokenizer/index.js';
import { encodeGguf, seededRandom, vocabMetadata } from './helpers/gguf-writer.js';
import { available, oracleFiles, oracleTokenizer } from './helpers/tokenizer-oracle.js';
import { byteLevelBpeVocab, sentencePieceVocab } from './helpers/tiny-vocab.js';

const tokenizerOf = async (vocab: Parameters<typeof vocabMetadata>[0]) =>
  Tokenizer.fromGguf(await parseGguf(encodeGguf({ metadata: vocabMetadata(vocab) })));

const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;

/** Streams `ids` and checks every chunk is whole characters; returns the chunks. */
function stream(tok: Tokenizer, ids: number[], options = {}): string[] {
  const d = new StreamDecoder(tok, options);
  const chunks = ids.map((id) => d.push(id));
  chunks.push(d.flush());
  for (const c of chunks) expect(LONE_SURROGATE.test(c), JSON.stringify(c)).toBe(false);
  return chunks;
}

describe('StreamDecoder', () => {
  it('SentencePiece byte fallback: an emoji spelled as four <0xXX> tokens appears whole, on the fourth', async () => {
    const tok = await tokenizerOf(sentencePieceVocab());
    const ids = tok.encode('a🙂b', { addSpecial: false });
    const bytes = ids.filter((id) => /^<0x[0-9A-F]{2}>$/.test(tok.tokenText(id)));
    expect(bytes.map((id) => tok.tokenText(id))).toEqual(['<0xF0>', '<0x9F>', '<0x99>', '<0x82>']);
    const chunks = stream(tok, ids);
    expect(chunks.join('')).toBe('a🙂b');
    expect(chunks.filter((c) => c.length > 0).every((c) => !c.includes('\ufffd'))).toBe(true);
    const emojiAt = chunks.findIndex((c) => c.includes('🙂'));
    expect(chunks.slice(emojiAt - 3, emojiAt)).toEqual(['', '', '']);
  });

  it('byte-level BPE: ZWJ sequences split across tokens come out whole', async () => {
    const tok = await tokenizerOf(byteLevelBpeVocab('llama-bpe'));
    const text = '👨‍👩‍👧‍👦 and 🏳️‍🌈 and 日本語';
    const ids = tok.encode(text, { addSpecial: false });
    expect(ids.length).toBeGreaterThan(20); // mostly single-byte tokens
    const chunks = stream(tok, ids);
    expect(chunks.join('')).toBe(text);
    expect(chunks.join('')).not.toContain('\ufffd');
  });

  it('an unfinished character at the end becomes U+FFFD on flush, as in decode', async () => {
    const tok = await tokenizerOf(sentencePieceVocab());
    const ids = tok.encode('x🙂', { addSpecial: false }).slice(0, -1);
    expect(stream(tok, ids).join('')).toBe(tok.decode(ids));
    expect(tok.decode(ids)).toBe('x\ufffd');
  });

  it('keeps the first space of a continuation with startOfText: false', async () => {
    const tok = await tokenizerOf(sentencePieceVocab());
    const ids = tok.encode('Once upon', { addSpecial: false });
    expect(stream(tok, ids).join('')).toBe('Once upon');
    expect(stream(tok, ids, { startOfText: false }).join('')).toBe(' Once upon');
    expect(tok.decode(ids, { startOfText: false })).toBe(' Once upon');
  });

  it('holds a space back until the space cleaning has decided about it', async () => {
    const tok = await tokenizerOf(byteLevelBpeVocab('llama-bpe'));
    const ids = tok.encode("Hello , world ' s ok", { addSpecial: false });
    const chunks = stream(tok, ids);
    expect(chunks.join('')).toBe(tok.decode(ids));
    expect(tok.decode(ids)).toBe("Hello, world's ok");
  });

  for (const o of oracleFiles()) {
    it.skipIf(!available(o))(`concatenated chunks equal decode() for every ${o.model} case`, async () => {
      const tok = await oracleTokenizer(o);
      for (const c of o.cases) {
        for (const ids of [c.ids, c.idsAddSpecial]) {
          for (const special of [false, true]) {
            expect(stream(tok, ids, { special }).join(''), JSON.stringify(c.text)).toBe(tok.decode(ids, { special }));
          }
        }
      }
    });
  }
});

/** llama_detokenize's clean_spaces, ported literally (in place over a byte array). */
function cleanSpacesReference(input: string): string {
  const text = Array.from(input);
  let total = text.length;
  const t1 = total;
  total = total ? 1 : 0;
  for (let i = 1; i < t1; i++) {
    const x = text[i]!;
    if (text[i - 1] === ' ' && (x === '?' || x === '!' || x === '.' || x === ',')) total--;
    text[total++] = x;
  }
  const t2 = total;
  total = total ? 1 : 0;
  for (let i = 1; i < t2; i++) {
    const x = text[i]!;
    if (x === "'" && i + 1 < t2 && text[i - 1] === ' ' && text[i + 1] === ' ') {
      total--;
      text[++i] = '\0';
    }
    text[total++] = x;
  }
  const t3 = total;
  total = total ? 1 : 0;
  for (let i = 1; i < t3; i++) {
    const x = text[i]!;
    if (text[i - 1] === ' ' && x === "'" && i + 1 < t3) {
      const x1 = text[i + 1];
      if (x1 === 's' || x1 === 'm') total--;
      else if (x1 !== 't' && x1 !== 'd' && i + 2 < t3) {
        const x2 = text[i + 2];
        if ((x1 === 'r' || x1 === 'v') && x2 === 'e') total--;
      }
    }
    text[total++] = x;
  }
  return text.slice(0, total).join('');
}

describe('space cleaning', () => {
  it('matches llama.cpp: spaces before ?!., and before some contractions go', () => {
    expect(cleanSpaces('Hello , world . How are you ? Fine !')).toBe('Hello, world. How are you? Fine!');
    expect(cleanSpaces("it ' s a ' quote ' and I 'm, you 're, we 've, he 's")).toBe("it's a'quote'and I'm, you're, we've, he's");
    expect(cleanSpaces("don 't, I 'd, we 'll")).toBe("don 't, I 'd, we 'll");
  });

  it('streaming and whole-text cleaning equal a literal port of the C loops on random text', () => {
    const rnd = seededRandom(17);
    const alphabet = " ' ?!.,smtdrvelx\u00e9\u{1F642}";
    const chars = Array.from(alphabet);
    for (let n = 0; n < 3000; n++) {
      const len = Math.floor(rnd.uniform() * 14);
      let s = '';
      for (let i = 0; i < len; i++) s += chars[Math.floor(rnd.uniform() * chars.length)];
      const want = cleanSpacesReference(s);
      expect(cleanSpaces(s), JSON.stringify(s)).toBe(want);
      const cleaner = new SpaceCleaner();
      let out = '';
      for (let at = 0; at < s.length; ) {
        const step = 1 + Math.floor(rnd.uniform() * 3);
        const cut = s.codePointAt(at + step - 1)! > 0xffff ? at + step + 1 : at + step;
        out += cleaner.push(s.slice(at, cut));
        at = cut;
      }
      out += cleaner.end();
      expect(out, JSON.stringify(s)).toBe(want);
    }
  });
});
