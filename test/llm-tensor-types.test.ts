// The newer GGUF tensor types (Q4_1, Q5_0, Q5_1, Q2_K, Q3_K, Q5_K, IQ4_NL, IQ4_XS, MXFP4) end to end:
// small random llama / qwen2 models with their matrices in each type load through the real
// engine, and their logits at every position match the f64 reference (test/helpers/
// llm-reference.ts) run on the dequantized weights, at the scalar level and the best SIMD level of
// this CPU. So does a mixture the way llama.cpp's Q4_K_M / Q5_K_M files mix types, with the Q5_0
// fallback for rows whose length is not a multiple of 256 (as in Qwen2.5 Q4_K_M files).
//
// Tolerance (max |engine - reference| / max |reference| over all positions' logits): the
// reference sees the same dequantized weights, so the one difference is the engine's 8-bit
// activations (Q8A per 32 values for Q4_1 / Q5_0 / Q5_1 / IQ4_NL / MXFP4, Q8_K per 256 for the K-quants
// and IQ4_XS), about 2^-8 relative per element, which compounds over the 7 matmuls of each layer
// to a few percent (observed 1.6-3.5% here, seeds 31 and 32). 5e-2 is the bound
// test/llm-engine-forward.test.ts uses for the older types; a wrong layout, scale or bit order
// gives errors of order 1.
//
// The scalar and SIMD levels are also compared with each other, but only to 3e-2: their kernels
// compute the same integer sums (test/llm-engine-kernels.test.ts holds every level to 1e-5 of the
// scalar kernels), yet the float work around them (attention, SiLU, summation order) differs by
// an ulp or so, and now and then an activation lands on the other side of an 8-bit rounding
// boundary at one level only. One such step in one input moves these tiny models' logits by up to
// ~1.5e-2 from that position on, whatever the weight type: this very llama model in Q4_0 (a type
// the engine had before) differs between scalar and AVX2 by 1.4e-2 from position 5, in IQ4_NL by
// 6.3e-3 at position 3, most of the others by < 1e-6.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { writeGguf, type GgufWriteTensor, type TinyModelOptions } from './helpers/gguf-writer.js';
import { dequantize, quantize, type QuantType } from './helpers/ggml-quants.js';
import { engineLogits, seededPrompt, worstRelativeError } from './helpers/engine-logits.js';
import { plainVocab, referenceLogits, referenceModel, relativeError } from './helpers/llm-reference.js';

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'llm-tensor-types-'));
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

const TOLERANCE = 5e-2;
const SIMD_VS_SCALAR = 3e-2;
const VOCAB = 64;

let fileNo = 0;
/** A random model whose tensors take the type `typeOf` gives them (F32 where it gives none). */
function build(o: TinyModelOptions, typeOf: (t: GgufWriteTensor) => QuantType | undefined) {
  const ref = referenceModel(o);
  const tensors = ref.model.spec.tensors!.map((t) => {
    const type = typeOf(t);
    if (type === undefined) return t;
    const data = t.data as Float32Array;
    ref.weights.set(t.name, dequantize(type, quantize(type, data), data.length));
    return { ...t, type };
  });
  const file = path.join(dir, `m${fileNo++}.gguf`);
  writeGguf(file, { ...ref.model.spec, tensors });
  return { ...ref, file };
}

const prompt = (n: number, seed: number) => seededPrompt(n, VOCAB, seed);

const worst = (all: Float32Array, expected: Float64Array[]) => worstRelativeError(all, expected, VOCAB);

/** Scalar and SIMD logits against the reference; returns the engine's tensor type counts. */
async function check(m: ReturnType<typeof build>, tokens: number[]) {
  const expected = referenceLogits(m.config, m.weights, tokens);
  const scalar = await engineLogits(m.file, tokens, { simd: 'scalar' });
  expect(scalar.info.kernels).toBe('scalar');
  const simd = await engineLogits(m.file, tokens);
  const errScalar = worst(scalar.logits, expected);
  const errSimd = worst(simd.logits, expected);
  if (process.env['LLM_TEST_VERBOSE']) console.log(simd.info.kernels, errScalar, errSimd, relativeError(simd.logits, scalar.logits));
  expect(errScalar).toBeLessThan(TOLERANCE);
  expect(errSimd).toBeLessThan(TOLERANCE);
  expect(relativeError(simd.logits, scalar.logits)).toBeLessThan(SIMD_VS_SCALAR);
  return scalar.info.tensorTypes;
}

const wide = { vocab: plainVocab(VOCAB), nEmbd: 256, nLayer: 2, nHead: 4, nHeadKv: 2, nFf: 512 } as const;
const isMatrix = (t: GgufWriteTensor) => t.dims.length === 2;

describe.each(['Q4_1', 'Q5_0', 'Q5_1', 'Q2_K', 'Q3_K', 'Q5_K', 'IQ4_NL', 'IQ4_XS', 'MXFP4'] as QuantType[])('%s weights', (type) => {
  it(`every matrix and the token embeddings in ${type}: logits match the reference within ${TOLERANCE}`, async () => {
    const arch = ['Q5_0', 'Q3_K', 'Q5_1', 'IQ4_XS'].includes(type) ? 'qwen2' : 'llama';
    const m = build({ ...wide, arch, seed: 31 }, (t) => (isMatrix(t) ? type : undefined));
    const types = await check(m, prompt(10, 8));
    // 7 matrices per layer, token_embd and output
    expect(types[type]).toBe(7 * wide.nLayer + 2);
  });
});

describe('a K-quant mixture', () => {
  it("Q4_K_M's way: Q5_K attention, Q4_K gate / up, Q5_0 for the 352-long down rows, Q3_K embeddings, Q6_K output", async () => {
    const typeOf = (t: GgufWriteTensor): QuantType | undefined => {
      if (!isMatrix(t)) return undefined;
      if (t.name === 'token_embd.weight') return 'Q3_K';
      if (t.name === 'output.weight') return 'Q6_K';
      if (t.name.endsWith('ffn_down.weight')) return 'Q5_0'; // rows of nFf = 352, not whole 256-blocks
      if (t.name.includes('.attn_')) return 'Q5_K';
      return 'Q4_K';
    };
    const m = build({ ...wide, nFf: 352, arch: 'qwen2', seed: 32 }, typeOf);
    const types = await check(m, prompt(12, 9));
    expect(types).toMatchObject({ Q3_K: 1, Q6_K: 1, Q5_0: 2, Q5_K: 8, Q4_K: 4 });
  });
});
