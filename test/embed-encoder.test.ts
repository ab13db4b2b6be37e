// The native encoder (native/llm/encoder.cc through src/llm/embed) against the f64 reference of
// test/helpers/bert-model.ts on small random bert and nomic-bert GGUF files: every pooling type,
// unit length, a batch equal to its inputs one by one, a quantized file, and the refusals of bad
// files and bad inputs.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { loadEmbedder } from '../src/llm/embed/index.js';
import { Tokenizer } from '../src/llm/tokenizer/index.js';
import { bertModel, maxAbsDiff, referenceEmbedding, type BertModelOptions } from './helpers/bert-model.js';
import { writeGguf, type GgufWriteSpec } from './helpers/gguf-writer.js';

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'embed-encoder-'));
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

let fileNo = 0;
function write(spec: GgufWriteSpec): string {
  const file = path.join(dir, `m${fileNo++}.gguf`);
  writeGguf(file, spec);
  return file;
}

const small = { nEmbd: 64, nLayer: 2, nHead: 4, nFf: 128, nCtx: 64 } as const;
const inputs = [
  [2, 40, 41, 42, 3],
  [2, 100, 3],
  [2, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 3],
  [5],
];

async function check(o: BertModelOptions, tolerance: number) {
  const m = bertModel(o);
  const e = await loadEmbedder(write(m.spec), { threads: 2 });
  try {
    const got = await e.embed(inputs);
    let worst = 0;
    inputs.forEach((ids, i) => {
      worst = Math.max(worst, maxAbsDiff(got[i]!, referenceEmbedding(m.config, m.weights, ids)));
    });
    expect(worst).toBeLessThan(tolerance);
    return { e, got, worst };
  } finally {
    await e.unload();
  }
}

// F32 weights: the only differences from the f64 pass are f32 rounding and summation order, so
// each component of the unit vector agrees to ~1e-6; 1e-5 leaves a margin and still catches any
// wrong operation (a missing bias, a wrong norm or RoPE form moves components by 1e-2 or more).
describe('f32 embeddings equal the f64 reference within 1e-5 (max |difference| per component)', () => {
  for (const pooling of ['mean', 'cls', 'last'] as const) {
    it(`bert, ${pooling} pooling`, async () => {
      const { e, got } = await check({ ...small, arch: 'bert', pooling, seed: 3 }, 1e-5);
      expect(e.info.architecture).toBe('bert');
      expect(e.info.pooling).toBe(pooling);
      expect(e.info.embeddingLength).toBe(64);
      for (const v of got) expect(Math.hypot(...v)).toBeCloseTo(1, 5);
    });
  }

  it('nomic-bert: fused QKV, NeoX RoPE, SwiGLU, mean pooling', async () => {
    const { e } = await check({ ...small, arch: 'nomic-bert', pooling: 'mean', seed: 5, ropeFreqBase: 1000 }, 1e-5);
    expect(e.info.architecture).toBe('nomic-bert');
    expect(e.info.ropeFreqBase).toBe(1000);
  });

  it('pooling types give different vectors of the same input', async () => {
    const v = await Promise.all(
      (['mean', 'cls', 'last'] as const).map(async (pooling) => (await check({ ...small, arch: 'bert', pooling, seed: 3 }, 1e-5)).got[0]!),
    );
    expect(maxAbsDiff(v[0]!, v[1]!)).toBeGreaterThan(1e-2);
    expect(maxAbsDiff(v[1]!, v[2]!)).toBeGreaterThan(1e-2);
  });
});

// Q8_0 weights: the reference uses the dequantized weights, so the remaining difference is the
// engine's 8-bit quantization of the activations in each product (ggml does the same): about
// 1/254 relative per product, compounded over 2 layers; measured ~5e-3, bounded at 2e-2.
// F16 weights are widened to f32 exactly before the products, so they keep the f32 bound.
describe('quantized weights', () => {
  it('bert F16 vs the f64 pass on the widened weights: within 1e-5', async () => {
    await check({ ...small, arch: 'bert', weightType: 'F16', seed: 8 }, 1e-5);
  });
  it('bert Q8_0 vs the f64 pass on the dequantized weights: within 2e-2', async () => {
    const { worst } = await check({ ...small, arch: 'bert', weightType: 'Q8_0', seed: 9 }, 2e-2);
    expect(worst).toBeGreaterThan(0);
  });
  it('nomic-bert Q8_0: within 2e-2', async () => {
    await check({ ...small, arch: 'nomic-bert', weightType: 'Q8_0', seed: 10 }, 2e-2);
  });
});

describe('batching', () => {
  it('a batch equals its inputs one by one (attention never crosses inputs)', async () => {
    const m = bertModel({ ...small, arch: 'bert', seed: 4 });
    const e = await loadEmbedder(write(m.spec), { threads: 2 });
    try {
      const batch = await e.embed(inputs);
      for (let i = 0; i < inputs.length; i++) {
        const [one] = await e.embed([inputs[i]!]);
        expect(maxAbsDiff(batch[i]!, one!)).toBeLessThan(1e-6);
      }
      // Int32Array inputs and concurrent batches give the same vectors.
      const again = await Promise.all(inputs.map((ids) => e.embed([Int32Array.from(ids)])));
      again.forEach(([v], i) => expect(maxAbsDiff(v!, batch[i]!)).toBeLessThan(1e-6));
    } finally {
      await e.unload();
    }
  });
});

describe('bad inputs are refused on the caller stack, naming the input', () => {
  it('empty, too long, out-of-range ids, wrong types', async () => {
    const m = bertModel({ ...small, arch: 'bert', seed: 4 });
    const e = await loadEmbedder(write(m.spec), { threads: 1 });
    try {
      await expect(e.embed([])).rejects.toThrow('embedRun: inputs is empty');
      await expect(e.embed([[2], []])).rejects.toThrow('embedRun: inputs[1] is empty');
      await expect(e.embed([new Array(65).fill(5)])).rejects.toThrow("inputs[0] has 65 tokens, more than the model's context of 64");
      await expect(e.embed([[2, 9999]])).rejects.toThrow(`inputs[0][1] = 9999 is not a token id (vocabulary of ${e.info.vocabSize})`);
      await expect(e.embed([[2, -1]])).rejects.toThrow('inputs[0][1] = -1 is not a token id');
      await expect(e.embed([[2, 1.5]])).rejects.toThrow('inputs[0][1] = 1.5 is not a token id');
      await expect(e.embed(['x' as unknown as number[]])).rejects.toThrow('inputs[0] must be an Int32Array or an array of token ids, got string');
      // Still serving after the refusals.
      expect((await e.embed([[2, 3]]))[0]!.length).toBe(64);
    } finally {
      await e.unload();
    }
    await expect(e.embed([[2]])).rejects.toThrow('the embedding model has been unloaded');
  });
});

describe('bad files are refused with the key or tensor at fault', () => {
  const base = () => bertModel({ ...small, arch: 'bert', seed: 6 }).spec;
  const edit = (f: (s: GgufWriteSpec) => GgufWriteSpec) => write(f(base()));
  const cases: Array<[string, string, () => string]> = [
    ['a missing tensor', "missing tensor 'blk.1.ffn_down.weight'", () => edit((s) => ({ ...s, tensors: s.tensors!.filter((t) => t.name !== 'blk.1.ffn_down.weight') }))],
    [
      'a tensor of the wrong shape',
      "tensor 'blk.0.attn_k.weight' has shape [64, 32], expected [64, 64]",
      () => edit((s) => ({ ...s, tensors: s.tensors!.map((t) => (t.name === 'blk.0.attn_k.weight' ? { ...t, dims: [64, 32], data: t.data!.subarray(0, 64 * 32) } : t)) })),
    ],
    ['pooling type none', "metadata key 'bert.pooling_type' is 0 (none: per-token vectors); supported: 1 (mean), 2 (cls), 3 (last)", () => edit((s) => ({ ...s, metadata: { ...s.metadata, 'bert.pooling_type': 0 } }))],
    ['pooling type rank', "'bert.pooling_type' is 4 (rank: a reranker)", () => edit((s) => ({ ...s, metadata: { ...s.metadata, 'bert.pooling_type': 4 } }))],
    ['pooling type 7', "'bert.pooling_type' is 7; supported", () => edit((s) => ({ ...s, metadata: { ...s.metadata, 'bert.pooling_type': 7 } }))],
    ['a missing key', "missing metadata key 'bert.block_count'", () => edit((s) => ({ ...s, metadata: Object.fromEntries(Object.entries(s.metadata).filter(([k]) => k !== 'bert.block_count')) }))],
    ['heads that do not divide the width', "'bert.embedding_length' is not a multiple of 'bert.attention.head_count'", () => edit((s) => ({ ...s, metadata: { ...s.metadata, 'bert.attention.head_count': 5 } }))],
    ['a position table shorter than the context', "tensor 'position_embd.weight' has shape [64, 64], expected [64, 128]", () => edit((s) => ({ ...s, metadata: { ...s.metadata, 'bert.context_length': 128 } }))],
    ['a decoder architecture', "architecture 'llama' is not an embedding model (supported: bert, nomic-bert)", () => edit((s) => ({ ...s, metadata: { ...s.metadata, 'general.architecture': 'llama' } }))],
    ['a huge block_count', 'block_count 100000 is more layers than the file', () => edit((s) => ({ ...s, metadata: { ...s.metadata, 'bert.block_count': 100000 } }))],
  ];
  for (const [what, message, file] of cases) {
    it(what, async () => {
      const err = await loadEmbedder(file()).catch((e: unknown) => e as Error & { code?: string });
      expect(err).toBeInstanceOf(Error);
      expect((err as Error).message).toContain(message);
      expect((err as { code?: string }).code).toBe('load_failed');
    });
  }
  it('a file that is not GGUF', async () => {
    const file = path.join(dir, 'junk.gguf');
    fs.writeFileSync(file, 'not a gguf file at all, just text');
    await expect(loadEmbedder(file)).rejects.toMatchObject({ code: 'load_failed' });
  });
});

describe('the tokenizer of the test model', () => {
  it('reads the WordPiece vocabulary and adds [CLS] ... [SEP]', async () => {
    const m = bertModel({ ...small, arch: 'bert', seed: 4 });
    const tok = await Tokenizer.fromFile(write(m.spec));
    expect(tok.model).toBe('bert');
    const ids = tok.encode('Hello, world!');
    expect(ids[0]).toBe(2);
    expect(ids.at(-1)).toBe(3);
    expect(ids.slice(1, -1).map((id) => tok.tokenText(id))).toEqual(['▁hello', '▁,', '▁world', '▁!']);
    expect(tok.encode('unbelievable').slice(1, -1).map((id) => tok.tokenText(id))).toEqual(['▁un', 'believ', 'able']);
    expect(tok.decode(tok.encode('hello world', { addSpecial: false }))).toBe(' hello world');
  });
});
