// Token ids and decoded text against llama.cpp (node-llama-cpp 3.22.1, llama.cpp release v0.5.0),
// recorded in test/data/tokenizer by scripts/oracle/record.mjs: 58 strings (spaces, tabs and
// newlines, accents, CJK, Arabic, emoji with ZWJ, digits, punctuation runs, contractions, special
// token text, code, invalid surrogates) and the 44 AWKWARD_TEXTS of test/helpers/tiny-vocab.ts
// (whitespace runs, digit runs of every length, camelCase, title-case letters, ligatures,
// combining marks, emoji sequences, code, near-miss special tokens), parse_special off and on,
// add_special off and on, and the set of end-of-generation ids, for
//
// - sixteen generated vocabularies rebuilt here from test/helpers/tiny-vocab.ts: byte-level BPE
//   with pre-tokenizers llama-bpe, qwen2, gpt-2, llama.cpp's default, gpt-4o (gpt-oss), tekken
//   (Mistral Nemo / Small 3), deepseek-llm, deepseek-v3, deepseek-coder, falcon, seed-coder,
//   smollm (SmolLM2) and qwen35 (Qwen 3.5), and SentencePiece ones as Llama 2, Gemma (no leading space, whitespace
//   pieces, <start_of_turn>) and Phi-3 (its special tokens swallow the whitespace after them);
// - the two fixture vocabularies (Llama 2's 32k and stories260K's 512), skipped with a message
//   when ../shared/fixtures is absent.
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { readGguf } from '../src/llm/gguf/index.js';
import { Tokenizer } from '../src/llm/tokenizer/index.js';
import { available, AWKWARD_TEXTS, DATA_DIR, FIXTURES, oracleFiles, oracleTokenizer, type OracleCase, type OracleFile } from './helpers/tokenizer-oracle.js';

const files = oracleFiles();
for (const o of files) if (!available(o)) console.warn(`skipping the ${o.model} oracle tests: ${path.join(FIXTURES, o.file!)} is absent`);

/** Cases where `f` disagrees with the recorded answer, for a readable failure. */
function mismatches<T>(cases: OracleCase[], ours: (c: OracleCase) => T, theirs: (c: OracleCase) => T) {
  return cases
    .map((c) => ({ text: c.text, parseSpecial: c.parseSpecial, ours: ours(c), llamaCpp: theirs(c) }))
    .filter((m) => JSON.stringify(m.ours) !== JSON.stringify(m.llamaCpp));
}

describe('the recorded data covers what it claims', () => {
  it('every model has the same 204 cases and the byte-level pre-tokenizers disagree on many of them', () => {
    for (const o of files) expect(o.cases).toHaveLength(2 * (58 + AWKWARD_TEXTS.length));
    for (const o of files) expect(o.cases.slice(116).map((c) => c.text)).toEqual(AWKWARD_TEXTS.flatMap((t) => [t, t]));
    const bpe = files.filter((o) => o.model.startsWith('bpe-'));
    expect(bpe.map((o) => o.model).sort()).toEqual([
      'bpe-deepseek-coder', 'bpe-deepseek-llm', 'bpe-deepseek-v3', 'bpe-default', 'bpe-falcon', 'bpe-gpt-2',
      'bpe-gpt-4o', 'bpe-llama-bpe', 'bpe-qwen2', 'bpe-qwen35', 'bpe-seed-coder', 'bpe-smollm', 'bpe-tekken',
    ]);
    // Vocabularies with the same special tokens, so that only the pre-tokenizer makes them differ.
    const same = bpe.filter((o) => !['bpe-default', 'bpe-gpt-2', 'bpe-llama-bpe', 'bpe-qwen2'].includes(o.model));
    const groups: [OracleFile[], number][] = [[bpe.filter((o) => !same.includes(o)), 8], [same, 5]];
    for (const [group, atLeast] of groups) {
      for (let a = 0; a < group.length; a++) {
        for (let b = a + 1; b < group.length; b++) {
          const differ = group[a]!.cases.filter((c, i) => JSON.stringify(c.ids) !== JSON.stringify(group[b]!.cases[i]!.ids));
          expect(differ.length, `${group[a]!.model} vs ${group[b]!.model}`).toBeGreaterThanOrEqual(atLeast);
        }
      }
    }
  });
});

for (const o of files) {
  describe.skipIf(!available(o))(`${o.model} (${o.source})`, () => {
    let tok: Tokenizer;
    const get = async () => (tok ??= await oracleTokenizer(o));

    it('encode(text, { addSpecial: false, parseSpecial }) equals llama_tokenize', async () => {
      const t = await get();
      expect(mismatches(o.cases, (c) => t.encode(c.text, { addSpecial: false, parseSpecial: c.parseSpecial }), (c) => c.ids)).toEqual([]);
    });

    it('encode(text, { addSpecial: true, parseSpecial }) adds BOS / EOS as llama.cpp does', async () => {
      const t = await get();
      expect(mismatches(o.cases, (c) => t.encode(c.text, { parseSpecial: c.parseSpecial }), (c) => c.idsAddSpecial)).toEqual([]);
      expect(t.addBos).toBe(o.addBos);
      expect(t.addEos).toBe(o.addEos);
      // node-llama-cpp reports BOS / EOS only when they are control tokens
      for (const [ours, theirs] of [[t.bos, o.bos], [t.eos, o.eos]] as const) {
        if (theirs !== null) expect(ours).toBe(theirs);
        else if (ours !== null) expect(t.isControl(ours)).toBe(false);
      }
      // llama.cpp's EOT is the first candidate in hash-map order; ours may be another candidate,
      // but both end generation (gpt-oss's <|end|> is the exception: an EOT text, yet not EOG)
      const eog = Array.from({ length: t.vocabSize }, (_, id) => id).filter((id) => t.isEog(id));
      expect(eog).toEqual(o.eog);
      if (o.eot !== null && o.eog!.includes(o.eot)) expect(t.eot !== null && t.isEog(t.eot)).toBe(true);
    });

    it('decode equals llama_detokenize, with and without special tokens rendered', async () => {
      const t = await get();
      expect(mismatches(o.cases, (c) => t.decode(c.ids), (c) => c.detokenized)).toEqual([]);
      expect(mismatches(o.cases, (c) => t.decode(c.ids, { special: true }), (c) => c.detokenizedSpecial)).toEqual([]);
      expect(mismatches(o.cases, (c) => t.decode(c.idsAddSpecial), (c) => c.detokenizedAddSpecial)).toEqual([]);
    });

    it('decode(encode(s)) == s wherever llama.cpp round-trips s', async () => {
      const t = await get();
      const roundTrips = o.cases.filter((c) => !c.parseSpecial && c.detokenized === c.text);
      expect(roundTrips.length).toBeGreaterThan(20);
      for (const c of roundTrips) expect(t.decode(t.encode(c.text, { addSpecial: false })), JSON.stringify(c.text)).toBe(c.text);
    });
  });
}

const greedyFile = path.join(DATA_DIR, 'stories260k-greedy.json');
const storiesPresent = fs.existsSync(path.join(FIXTURES, 'stories260K.gguf'));

describe.skipIf(!storiesPresent)('stories260K greedy decoding recorded from llama.cpp', () => {
  it('decodes to the recorded text, which begins as the fixtures README says', async () => {
    const g = JSON.parse(fs.readFileSync(greedyFile, 'utf8')) as { tokens: number[]; text: string; prompt: number[] };
    const tok = Tokenizer.fromGguf(await readGguf(path.join(FIXTURES, 'stories260K.gguf')));
    expect(g.tokens).toHaveLength(200);
    expect(g.prompt).toEqual([tok.bos]);
    expect(tok.decode(g.tokens)).toBe(g.text);
    expect(g.text).toMatch(/^Once upon a time, there was a little girl named Lily\. She loved to play outside in the park\./);
  });
});
